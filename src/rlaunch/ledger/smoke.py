"""Smoke results: a finished smoke run is recorded in the ledger of the full run it stands for.

A smoke counts only when its executor reported SUCCEEDED *and* its terminal manifest exists (the
runtime writes it last, so a job that exited 0 without finishing its work does not count). The
smoke gate (LAUNCH001, `rlaunch.preflight.launch_checks.smoke_gate`) then finds it through
`Ledger.smoke_result(full name, full version)`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rlaunch.clock import utc_now
from rlaunch.ledger.ledger import Ledger
from rlaunch.ledger.records import add_smoke_result
from rlaunch.paths import run_paths
from rlaunch.spec import RunSpec
from rlaunch.status import AttemptStatus
from rlaunch.store.fs import StoreError, open_location


def role_geometry(spec: RunSpec) -> dict[str, Any]:
    """What a smoke must share with its full run to stand for it: the role plan without batch
    sizes (strategy, roles, parallelism, placement)."""
    return spec.role_plan.geometry()


def terminal_manifest_exists(prefix: str, name: str, version: str) -> bool:
    path = run_paths(prefix, name, version).terminal_manifest
    try:
        location = open_location(path, "terminal manifest")
        return bool(location.fs.exists(location.root))
    except (StoreError, OSError):
        return False


def read_terminal_manifest(prefix: str, name: str, version: str) -> dict[str, Any] | None:
    """The run's terminal manifest, or None when it is absent or unreadable."""
    path = run_paths(prefix, name, version).terminal_manifest
    try:
        location = open_location(path, "terminal manifest")
        value = json.loads(location.fs.cat_file(location.root).decode())
    except (StoreError, OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def record_smoke_success(
    ledger: Ledger, record: Mapping[str, Any], attempt_id: str
) -> dict[str, Any] | None:
    """Record the smoke run of `record` (its own ledger record, after an attempt that
    SUCCEEDED) for the full run it stands for. None when it is not a smoke run or its terminal
    manifest is missing."""
    smoke_of = record.get("smoke_of")
    if not smoke_of:
        return None
    name, version = str(record["name"]), str(record["version"])
    if not terminal_manifest_exists(ledger.prefix, name, version):
        return None
    full_name, _, full_version = str(smoke_of).partition("@")
    result = {
        "smoke": f"{name}@{version}",
        "attempt_id": attempt_id,
        "status": AttemptStatus.SUCCEEDED.value,
        "geometry": record.get("geometry"),
        "runtime_fingerprint": record.get("runtime_fingerprint"),
        "fingerprint": record.get("fingerprint"),
        "terminal_manifest": run_paths(ledger.prefix, name, version).terminal_manifest,
        "recorded_at": utc_now(),
    }

    ledger.update(full_name, full_version, lambda full: _add_once(full, result))
    return result


def _add_once(full: dict[str, Any], result: Mapping[str, Any]) -> None:
    # `rlaunch status` may observe the same success again: record each attempt once.
    for known in full.get("smoke_results", []):
        if (known.get("smoke") == result["smoke"]
                and known.get("attempt_id") == result["attempt_id"]):
            return
    add_smoke_result(full, result)


def recorded_smoke_success(
    ledger: Ledger, smoke: str, full_name: str, full_version: str
) -> dict[str, Any] | None:
    """The newest successful result of the smoke run `smoke` (NAME@VERSION) recorded for
    `full_name@full_version`, or None."""
    for result in reversed((ledger.read(full_name, full_version) or {}).get("smoke_results", [])):
        if result.get("smoke") == smoke and result.get("status") == AttemptStatus.SUCCEEDED:
            return dict(result)
    return None


def share_smoke_result(
    ledger: Ledger, result: Mapping[str, Any], name: str, version: str
) -> None:
    """Record a smoke result, recorded for another full run, for `name@version` too (a sweep's
    one smoke per geometry stands for every point of that geometry). The smoke gate still
    checks its geometry and runtime fingerprint against the run it gates."""
    ledger.update(name, version, lambda full: _add_once(full, result))
