"""Smoke results: a finished smoke run is recorded in the ledger of the full run it stands for.

A smoke counts only when its executor reported SUCCEEDED *and* its terminal manifest exists (the
runtime writes it last, so a job that exited 0 without finishing its work does not count). The
smoke gate (preflight) then finds it through `Ledger.smoke_result(full name, full version)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlaunch.clock import utc_now
from rlaunch.ledger.ledger import Ledger
from rlaunch.ledger.records import SUCCEEDED, add_smoke_result
from rlaunch.paths import run_paths
from rlaunch.preflight.registry import launch_check
from rlaunch.spec import RunSpec
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
        "status": SUCCEEDED,
        "geometry": record.get("geometry"),
        "runtime_fingerprint": record.get("runtime_fingerprint"),
        "fingerprint": record.get("fingerprint"),
        "terminal_manifest": run_paths(ledger.prefix, name, version).terminal_manifest,
        "recorded_at": utc_now(),
    }

    def add_once(full: dict[str, Any]) -> None:
        # `rlaunch status` may observe the same success again: record each attempt once.
        for known in full.get("smoke_results", []):
            if known.get("smoke") == result["smoke"] and known.get("attempt_id") == attempt_id:
                return
        add_smoke_result(full, result)

    ledger.update(full_name, full_version, add_once)
    return result


SMOKE_GATE_CODE = "LAUNCH001"


def _leaves(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for key, child in value.items():
            found.update(_leaves(child, f"{path}.{key}"))
        return found
    return {path: value}


def _mismatch(result: Mapping[str, Any], spec: RunSpec) -> str | None:
    """Why a recorded smoke result does not stand for `spec`, or None when it does."""
    if result.get("status") != SUCCEEDED:
        return f"it ended {result.get('status')}"
    if result.get("runtime_fingerprint") != spec.runtime_fingerprint:
        return (f"it ran runtime {result.get('runtime_fingerprint')}, this run's runtime is "
                f"{spec.runtime_fingerprint}")
    mine = _leaves(role_geometry(spec), "role_plan")
    theirs = _leaves(result.get("geometry") or {}, "role_plan")
    differing = sorted(p for p in set(mine) | set(theirs) if mine.get(p) != theirs.get(p))
    if differing:
        shown = ", ".join(f"{p} {theirs.get(p)} (here {mine.get(p)})" for p in differing[:4])
        return f"its role geometry differs: {shown}"
    return None


_EXAMPLE_STORE = "/srv/rlaunch-store"


def _gate_example() -> list[Any]:
    """worked example `colocated-1x8` (calendar version `2026.11.29`, `smoke_of: null`), with
    no smoke recorded in the ledger at `/srv/rlaunch-store`"""
    from rlaunch.spec.examples import worked_example
    from rlaunch.spec.io import parse_spec

    spec = parse_spec(worked_example("colocated-1x8"), "example of the smoke gate")
    return smoke_gate_findings(spec, Ledger(_EXAMPLE_STORE))


@launch_check(
    SMOKE_GATE_CODE,
    "A calendar-versioned full launch has a recorded successful smoke of the same role geometry"
    " and runtime fingerprint (the smoke gate; `--skip-smoke-gate REASON` waives it).",
    example=_gate_example,
)
def smoke_gate_findings(spec: RunSpec, ledger: Ledger) -> list[Any]:
    """The smoke gate: a calendar-versioned full run (no `smoke_of`) launches only with a
    recorded successful smoke of the same role geometry and runtime fingerprint."""
    from rlaunch.preflight.finding import error
    from rlaunch.spec.syntax import is_calendar

    if spec.smoke_of is not None or not is_calendar(spec.version):
        return []
    results = list((ledger.read(spec.name, spec.version) or {}).get("smoke_results", []))
    reasons = []
    for result in reversed(results):
        reason = _mismatch(result, spec)
        if reason is None:
            return []
        reasons.append(f"smoke {result.get('smoke')} attempt {result.get('attempt_id')}: {reason}")
    found = (
        "; ".join(reasons[:3])
        if reasons
        else f"no smoke is recorded for it in {ledger.record_path(spec.name, spec.version)}"
    )
    return [
        error(
            SMOKE_GATE_CODE, ("version", "smoke_of"),
            f"calendar version {spec.identity} is a full launch and needs a recorded successful "
            f"smoke of the same role geometry and runtime fingerprint ({spec.runtime_fingerprint})"
            f": {found}",
            f"Launch a smoke run of it first (a spec with smoke_of {spec.identity}, same role "
            f"plan and runtime), or pass --skip-smoke-gate REASON (recorded in the ledger).",
        )
    ]
