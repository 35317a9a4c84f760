"""The ledger record of one `name@version`: a plain JSON document (docs/launching.md, "Ledger").

    {
      "schema_version": 1, "identity": "name@version", "name": ..., "version": ...,
      "fingerprint": "sha256:..." | null,       # of the last launch (null: never launched)
      "runtime_fingerprint": "sha256:..." | null,
      "runtime_pin": "skyrl==0.3.0" | "<repo>@<commit>" | null,   # absent in older records
      "fingerprint_beside_runtime": "sha256:..." | null,  # RunSpec's; absent in older records
      "geometry": {...} | null,                 # role geometry (RolePlan.geometry()) launched
      "launcher_commit": "<40-hex>" | null,
      "yaml_digest": "sha256:..." | null,       # of the launch YAML's bytes
      "smoke_of": "name@version" | null,        # the full run this run is a smoke of
      "status": "never-launched" | an AttemptStatus value (rlaunch.status: "submitting",
                "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "submit-failed", "LOST"),
      "submission": {...} | null,               # the last attempt's Submission
      "skip_smoke_gate": "reason" | null,       # of the last attempt
      "attempts": [{attempt_id, started_at, finished_at, status, submission, fingerprint,
                    runtime_fingerprint, launcher_commit, yaml_digest, yaml_path,
                    skip_smoke_gate, error, run_exports}],
          # run_exports: what the attempt read of other runs, per run whose export it reads:
          # {"name@version": {"content": "sha256:...", "attempt_id": <that run's attempt that
          # wrote the export>}}; null or absent (attempts recorded before it was): unknown
      "smoke_results": [{smoke, attempt_id, status, geometry, runtime_fingerprint, fingerprint,
                         terminal_manifest, recorded_at}],
      "updated_at": "..."
    }

Functions here only transform records; `Ledger` reads and writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlaunch.clock import utc_now
from rlaunch.status import AttemptStatus

RECORD_SCHEMA_VERSION = 1
NEVER_LAUNCHED = "never-launched"
"""The status of a record with no attempt; an attempt's status is an AttemptStatus value."""


def new_record(name: str, version: str) -> dict[str, Any]:
    return {
        "schema_version": RECORD_SCHEMA_VERSION,
        "identity": f"{name}@{version}",
        "name": name,
        "version": version,
        "fingerprint": None,
        "runtime_fingerprint": None,
        "geometry": None,
        "launcher_commit": None,
        "yaml_digest": None,
        "smoke_of": None,
        "status": NEVER_LAUNCHED,
        "submission": None,
        "skip_smoke_gate": None,
        "attempts": [],
        "smoke_results": [],
        "updated_at": utc_now(),
    }


def launched(record: Mapping[str, Any] | None) -> bool:
    """True when a launch of this identity was submitted at least once."""
    if not record:
        return False
    return any(attempt.get("submission") for attempt in record.get("attempts", []))


def start_attempt(
    record: dict[str, Any],
    *,
    attempt_id: str,
    fingerprint: str,
    runtime_fingerprint: str,
    geometry: Mapping[str, Any],
    launcher_commit: str | None,
    yaml_digest: str,
    yaml_path: str,
    smoke_of: str | None,
    skip_smoke_gate: str | None,
    run_exports: Mapping[str, Mapping[str, Any]] | None = None,
    runtime_pin: str | None = None,
    fingerprint_beside_runtime: str | None = None,
) -> None:
    """Record a launch about to be submitted (before the executor is called: a crash between
    submit and the next write still leaves the attempt, and its fingerprint, on record).
    `run_exports`: the contents of the other runs' exports it reads (the pipeline plan compares
    them with the exports in the store: `rlaunch.pipeline.plan`); None: not known.
    `runtime_pin` (`skyrl==0.3.0`) and `fingerprint_beside_runtime` (RunSpec's) let a later
    launch on another runtime tell an upgrade from a changed run (VER006)."""
    record.update(
        fingerprint=fingerprint,
        runtime_fingerprint=runtime_fingerprint,
        runtime_pin=runtime_pin,
        fingerprint_beside_runtime=fingerprint_beside_runtime,
        geometry=dict(geometry),
        launcher_commit=launcher_commit,
        yaml_digest=yaml_digest,
        smoke_of=smoke_of,
        status=AttemptStatus.SUBMITTING.value,
        submission=None,
        skip_smoke_gate=skip_smoke_gate,
        updated_at=utc_now(),
    )
    record.setdefault("attempts", []).append(
        {
            "attempt_id": attempt_id,
            "started_at": utc_now(),
            "finished_at": None,
            "status": AttemptStatus.SUBMITTING.value,
            "submission": None,
            "fingerprint": fingerprint,
            "runtime_fingerprint": runtime_fingerprint,
            "launcher_commit": launcher_commit,
            "yaml_digest": yaml_digest,
            "yaml_path": yaml_path,
            "skip_smoke_gate": skip_smoke_gate,
            "error": None,
            "run_exports": None if run_exports is None else {
                ident: dict(read) for ident, read in run_exports.items()},
        }
    )


def _attempt(record: dict[str, Any], attempt_id: str) -> dict[str, Any]:
    for attempt in record.get("attempts", []):
        if attempt.get("attempt_id") == attempt_id:
            return attempt
    raise KeyError(f"attempt {attempt_id} is not in the ledger record of {record.get('identity')}")


def set_submission(record: dict[str, Any], attempt_id: str, submission: Mapping[str, Any]) -> None:
    attempt = _attempt(record, attempt_id)
    attempt["submission"] = dict(submission)
    attempt["status"] = AttemptStatus.PENDING.value
    record.update(submission=dict(submission), status=AttemptStatus.PENDING.value,
                  updated_at=utc_now())


def set_status(
    record: dict[str, Any], attempt_id: str, status: AttemptStatus, *, error: str | None = None
) -> None:
    """Record an attempt's status (its value: the string records always held)."""
    attempt = _attempt(record, attempt_id)
    attempt["status"] = status.value
    if status.is_terminal():
        attempt["finished_at"] = utc_now()
    if error is not None:
        attempt["error"] = error
    # The record's status is the latest attempt's.
    if record["attempts"][-1] is attempt:
        record["status"] = status.value
    record["updated_at"] = utc_now()


def set_wandb_url(record: dict[str, Any], attempt_id: str, url: str) -> None:
    """The W&B run of an attempt, as its runtime reported it (the terminal manifest)."""
    _attempt(record, attempt_id)["wandb_url"] = url
    record["updated_at"] = utc_now()


def add_smoke_result(record: dict[str, Any], result: Mapping[str, Any]) -> None:
    record.setdefault("smoke_results", []).append(dict(result))
    record["updated_at"] = utc_now()


def latest_smoke_result(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The newest successful smoke result, else the newest result (so a rule can name it)."""
    results = list((record or {}).get("smoke_results", []))
    for result in reversed(results):
        if result.get("status") == AttemptStatus.SUCCEEDED:
            return dict(result)
    return dict(results[-1]) if results else None


def last_attempt(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    attempts = (record or {}).get("attempts") or []
    return dict(attempts[-1]) if attempts else None


def attempt_status(attempt: Mapping[str, Any] | None) -> AttemptStatus | None:
    """An attempt's recorded status; None for no attempt (or a status this version does not
    know)."""
    return AttemptStatus.recorded((attempt or {}).get("status"))
