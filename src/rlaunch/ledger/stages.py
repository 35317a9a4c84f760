"""A run as a pipeline stage: has it finished, with the fingerprint it has now?

A run's export is an input of the runs (and builds) downstream of it. It is usable when the
run's last attempt SUCCEEDED with the fingerprint the consumer's spec gives the run: then the
export in the store is what that spec describes. Preflight (PIPE003), the materialization of
the export, and the pipeline plan all decide it here, from the ledger record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rlaunch.ledger.records import last_attempt
from rlaunch.status import AttemptStatus


@dataclass(frozen=True)
class StageState:
    finished: bool
    """The last attempt SUCCEEDED with the expected fingerprint."""
    reason: str
    """Why it is or is not finished, in words (`never launched`, `last attempt FAILED`...)."""
    attempt_id: str | None = None
    """The attempt that finished it (or the last one)."""


def _short(fingerprint: Any) -> str:
    text = str(fingerprint)
    return text.split(":", 1)[-1][:12] if text else "none"


def stage_state(record: Mapping[str, Any] | None, fingerprint: str) -> StageState:
    """The state of a run whose spec has `fingerprint`, from its ledger record (None: never
    launched)."""
    attempt = last_attempt(record)
    if attempt is None:
        return StageState(False, "never launched")
    attempt_id = attempt.get("attempt_id")
    status = attempt.get("status")
    if attempt.get("fingerprint") != fingerprint:
        return StageState(
            False, f"its last attempt {attempt_id} ran fingerprint "
            f"{_short(attempt.get('fingerprint'))}, not this spec's {_short(fingerprint)}",
            attempt_id)
    if status != AttemptStatus.SUCCEEDED:
        return StageState(False, f"its last attempt {attempt_id} is {status}", attempt_id)
    return StageState(True, f"finished: attempt {attempt_id} SUCCEEDED", attempt_id)
