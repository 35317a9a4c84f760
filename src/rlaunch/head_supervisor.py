"""The watcher that makes a local Ray head die with the launcher that started it.

`start_head` starts one per head, in a session of its own (so that killing the launcher's
process group, or the launcher alone with SIGKILL, does not kill the watcher too):

    python -m rlaunch.head_supervisor STATE_DIR SESSION_ID

Every half second it looks at three things and exits after the first that holds:
- the head was released (`{temp_dir}/released`, written by a launcher that keeps its head:
  `--keep-head`, `--detach`): the head outlives its launcher on purpose;
- the head is gone (stopped by its launcher, or by `rlaunch stop --head`);
- the launcher is gone (no process with its pid and start time): the head is stopped exactly
  as the launcher would have stopped it (its session only), and its record removed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rlaunch.head_record import (
    HeadRecord,
    head_gone,
    is_released,
    owner_alive,
    read_record,
    stop_head,
)

POLL_S = 0.5


def _log(message: str) -> None:
    print(f"rlaunch head supervisor: {message}", file=sys.stderr, flush=True)


def watch(state_dir: Path, record: HeadRecord) -> str:
    """Watch until one of the three ends; returns which."""
    while True:
        if is_released(record):
            return "released"
        if head_gone(record):
            return "head gone"
        if not owner_alive(record):
            _log(f"launcher pid {record.started_by_pid} is gone; stopping its head "
                 f"(session {record.session_id})")
            stop_head(record, state_dir, _log)
            return "owner gone"
        time.sleep(POLL_S)


def main(argv: list[str]) -> int:
    state_dir = Path(argv[0])
    session_id = int(argv[1])
    # The record is written before the supervisor starts; a head replaced since is not ours.
    record = read_record(state_dir)
    if record is None or record.session_id != session_id:
        _log(f"no head of session {session_id} is recorded in {state_dir}; nothing to watch")
        return 0
    _log(f"watching launcher pid {record.started_by_pid} for head session {session_id}: "
         f"{watch(state_dir, record)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
