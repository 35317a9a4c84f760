"""Issue 13 item 2: a local Ray head dies with the launcher that started it, whatever kills the
launcher, and an attempt its launcher left PENDING is settled by the next launch and by
`status` instead of staying PENDING forever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlaunch.cli import main
from rlaunch.executors import ExecutorOptions
from rlaunch.executors.local_head import read_record
from rlaunch.launch import _refuse_if_running
from rlaunch.ledger import Ledger, last_attempt, set_submission, start_attempt
from rlaunch.spec import parse_spec
from tests.executors.support import SRC, process_tree, ray_processes, wait_gone
from tests.runtimes.smoke.demo import smoke_spec

# The launcher: starts (or reuses) the head like `rlaunch launch` does, then waits to be killed.
LAUNCHER = """
import sys, time
from pathlib import Path
from rlaunch.executors.local_head import ensure_head
from rlaunch.spec.execution import Allocation
allocation = Allocation(num_nodes=1, gpus_per_node=1, accelerator="sim", cpus_per_node=2,
                        memory_gb_per_node=1, disk_gb_per_node=1)
record, started = ensure_head(allocation, Path(sys.argv[1]), lambda m: None)
print("READY", record.session_id, started, flush=True)
time.sleep(900)
"""
# Ray processes may take this long to go after their launcher is killed (the supervisor polls
# every 0.5 s, then SIGTERM, 1.5 s grace, SIGKILL).
BOUNDED_S = 30.0


def start_launcher(state_dir: Path) -> tuple[subprocess.Popen, int, bool]:
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(state_dir)], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)}, start_new_session=True,
    )
    line = launcher.stdout.readline().split()
    assert line[:1] == ["READY"], f"the launcher did not start a head: {line}"
    return launcher, int(line[1]), line[2] == "True"


def kill_9_stops_its_head(launcher: subprocess.Popen, session: int, state_dir: Path) -> None:
    """kill -9 of `launcher`'s process group: every process of the head it started (session
    `session`) is gone within BOUNDED_S, and so are its record and temp dir."""
    record = read_record(state_dir)
    assert record is not None and record.session_id == session
    head = process_tree({session})
    assert head, "the head has no processes"
    os.killpg(launcher.pid, signal.SIGKILL)
    launcher.wait()
    left = wait_gone(head, BOUNDED_S)
    assert not left, f"Ray processes outlived their killed launcher: {sorted(left)}"
    marked = {pid for pid, cmd in ray_processes().items() if record.temp_dir in cmd}
    assert not marked
    deadline = time.monotonic() + 5
    while (state_dir / "head.json").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert read_record(state_dir) is None
    assert not Path(record.temp_dir).exists()


def test_a_head_whose_owner_is_gone_is_not_reused_and_kill_9_of_a_launcher_stops_its_head(
    tmp_path: Path,
) -> None:
    """The check at every reuse, for a head whose supervisor could not act (stopped here): the
    next launcher starts a head of its own. Then kill -9 of that launcher's process group stops
    its head (its supervisor acts). One test, two heads: each head start costs 10-20 CPU s."""
    state_dir = tmp_path / "heads"
    first, session, started = start_launcher(state_dir)
    assert started
    record = read_record(state_dir)
    sessions = {session}
    try:
        supervisors = [
            pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
            if str(state_dir) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(
                errors="replace")
            and "head_supervisor" in Path(f"/proc/{pid}/cmdline").read_bytes().decode()
        ]
        assert len(supervisors) == 1
        os.kill(supervisors[0], signal.SIGKILL)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        assert process_tree({session}), "the head died without its supervisor"
        second, new_session, started = start_launcher(state_dir)
        sessions.add(new_session)
        assert started and new_session != session
        assert not wait_gone(process_tree({session}) | {record.pid}, BOUNDED_S)
        kill_9_stops_its_head(second, new_session, state_dir)
    finally:
        for pid in process_tree(sessions):
            os.kill(pid, signal.SIGKILL)


# -- an attempt left PENDING by a killed launcher ----------------------------------------------


def pending_attempt(store: Path, spec) -> str:
    """The ledger as a launcher killed after submitting leaves it: PENDING on a head that is
    gone (nothing listens at the address)."""
    ledger = Ledger(str(store))
    ledger.update(spec.name, spec.version, lambda record: start_attempt(
        record, attempt_id="a1", fingerprint=spec.fingerprint,
        runtime_fingerprint=spec.runtime_fingerprint, geometry={}, launcher_commit=None,
        yaml_digest="sha256:" + "0" * 64, yaml_path="launch.yaml", smoke_of=None,
        skip_smoke_gate=None))
    submission = {"executor": "local", "submission_id": "rlaunch-a1", "address":
                  "http://127.0.0.1:9", "attempt_id": "a1", "submitted_at": "2026-11-30T00:00:00Z",
                  "entrypoint": ["python"]}
    ledger.update(spec.name, spec.version, lambda record: set_submission(record, "a1",
                                                                           submission))
    return ledger.record_path(spec.name, spec.version)


@pytest.fixture
def spec():
    return parse_spec(smoke_spec())


def test_the_next_launch_settles_an_attempt_left_pending(tmp_path: Path, spec) -> None:
    pending_attempt(tmp_path, spec)
    said: list[str] = []
    ledger = Ledger(str(tmp_path))
    _refuse_if_running(ledger, spec, ExecutorOptions(say=said.append), said.append)
    attempt = last_attempt(ledger.read(spec.name, spec.version))
    assert attempt["status"] == "LOST"
    assert attempt["error"].startswith("the local Ray head that ran rlaunch-a1 "
                                       "(http://127.0.0.1:9) is no longer running")
    assert said == [f"rlaunch: {spec.identity} attempt a1 was left PENDING and its job is gone; "
                    f"recorded as LOST"]


def test_status_settles_an_attempt_left_pending(tmp_path: Path, spec) -> None:
    record_path = pending_attempt(tmp_path, spec)
    result = CliRunner().invoke(main, ["status", spec.identity, "--store", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{spec.identity} attempt a1: LOST (was PENDING; the local "
                                    f"Ray head that ran rlaunch-a1")
    assert json.loads(Path(record_path).read_text())["status"] == "LOST"


def test_the_next_launch_settles_an_attempt_killed_while_submitting(tmp_path: Path, spec) -> None:
    ledger = Ledger(str(tmp_path))
    ledger.update(spec.name, spec.version, lambda record: start_attempt(
        record, attempt_id="a0", fingerprint=spec.fingerprint,
        runtime_fingerprint=spec.runtime_fingerprint, geometry={}, launcher_commit=None,
        yaml_digest="sha256:" + "0" * 64, yaml_path="launch.yaml", smoke_of=None,
        skip_smoke_gate=None))
    said: list[str] = []
    _refuse_if_running(ledger, spec, ExecutorOptions(say=said.append), said.append)
    attempt = last_attempt(ledger.read(spec.name, spec.version))
    assert (attempt["status"], attempt["error"]) == (
        "submit-failed", "its launcher stopped before the job was submitted")
