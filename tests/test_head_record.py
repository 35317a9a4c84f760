"""A local Ray head's record and processes (rlaunch.head_record), on real processes: the head is
gone only when no process of its session is left, asked cheaply of its process group first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rlaunch.head_record import HeadRecord, head_gone, owned_pids

# A head's shape: its leader starts a process that moves to a process group of its own (as Ray
# does with each worker), in the same session, naming the head's temp dir; then waits.
LEADER = """
import subprocess, sys
worker = subprocess.Popen([sys.executable, "-c",
                           "import os, time; os.setpgid(0, 0); print(os.getpid(), flush=True); "
                           "time.sleep(120)", sys.argv[1]], stdout=subprocess.PIPE, text=True)
print(worker.stdout.readline().strip(), flush=True)
sys.stdin.read()
"""


def _record(leader: int, temp_dir: Path) -> HeadRecord:
    return HeadRecord(pid=leader, pgid=leader, session_id=leader, gcs_address="",
                      dashboard_url="", temp_dir=str(temp_dir), session_name="", num_nodes=1,
                      gpus_per_node=1, num_cpus=1, started_at="", started_by_pid=os.getpid())


def test_a_head_is_gone_only_once_no_process_of_its_session_is_left(tmp_path: Path) -> None:
    leader = subprocess.Popen([sys.executable, "-c", LEADER, str(tmp_path / "rlh-test")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    worker = int(leader.stdout.readline())
    record = _record(leader.pid, tmp_path / "rlh-test")
    try:
        assert not head_gone(record)  # its process group answers
        assert sorted(owned_pids(record)) == sorted([leader.pid, worker])
        leader.kill()
        leader.wait()
        # The group is empty; the worker, in a group of its own, is still the head's.
        assert owned_pids(record) == [worker]
        assert not head_gone(record)
        os.kill(worker, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while owned_pids(record) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert head_gone(record)
    finally:
        for pid in (leader.pid, worker):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
