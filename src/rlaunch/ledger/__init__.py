"""The launch ledger: what was launched, under the artifact store prefix.

One JSON record per `name@version` (`{prefix}/_ledger/{name}/{version}.json`): fingerprints, the
launcher commit, the launch YAML's digest, every attempt with its submission and status, smoke
results recorded for it, and a skipped smoke gate's reason. `LaunchLock` lets one launch of an
identity proceed at a time.
"""

from rlaunch.ledger.errors import LedgerError
from rlaunch.ledger.ledger import RUNTIME_RECORD, Ledger
from rlaunch.ledger.lock import LaunchLock, LaunchLocked, lock_path_for
from rlaunch.ledger.records import (
    NEVER_LAUNCHED,
    RECORD_SCHEMA_VERSION,
    add_smoke_result,
    attempt_status,
    last_attempt,
    latest_smoke_result,
    launched,
    new_record,
    set_status,
    set_submission,
    set_wandb_url,
    start_attempt,
)

__all__ = [
    "LaunchLock", "LaunchLocked", "Ledger", "LedgerError", "NEVER_LAUNCHED",
    "RECORD_SCHEMA_VERSION", "RUNTIME_RECORD", "add_smoke_result", "attempt_status",
    "last_attempt", "latest_smoke_result", "launched", "lock_path_for", "new_record",
    "set_status", "set_submission", "set_wandb_url", "start_attempt",
]
