"""The launch lock: one launch of a name@version at a time, with the holder named."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlaunch.ledger import LaunchLock, LaunchLocked, Ledger

HOLD = """
import sys, time
from rlaunch.ledger import LaunchLock, LaunchLocked
lock = LaunchLock(sys.argv[1], "run", "2026.11.29")
try:
    lock.acquire()
except LaunchLocked as err:
    print("LOST", err, flush=True)
    sys.exit(3)
print("WON", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
"""


def test_a_second_holder_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    first = LaunchLock(str(tmp_path), "run", "2026.11.29")
    first.acquire()
    try:
        with pytest.raises(LaunchLocked) as caught:
            LaunchLock(str(tmp_path), "run", "2026.11.29").acquire()
        message = str(caught.value)
        assert message.startswith(
            f"run@2026.11.29 is being launched by another process (pid {os.getpid()} on "
            f"{socket.gethostname()}, since "
        )
        assert message.endswith(
            f"lock {tmp_path}/_ledger/run/2026.11.29.lock). Only one launch of an identity may "
            "run at a time: wait for it to finish, or stop it (`rlaunch stop run@2026.11.29`) and "
            "launch again"
        )
        # Another identity is not blocked.
        with LaunchLock(str(tmp_path), "run", "2026.11.30"):
            pass
    finally:
        first.release()
    with Ledger(str(tmp_path)).launch_lock("run", "2026.11.29") as again:
        assert again.held


def test_two_processes_racing_for_one_identity_one_wins(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    racers = [
        subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), "3"], env=env,
                         stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [racer.communicate(timeout=60)[0] for racer in racers]
    codes = sorted(racer.returncode for racer in racers)
    assert codes == [0, 3], outputs
    winner = next(r for r, out in zip(racers, outputs) if out.startswith("WON"))
    loser_output = next(out for out in outputs if out.startswith("LOST"))
    assert f"is being launched by another process (pid {winner.pid} on" in loser_output


def test_a_dead_holder_does_not_leave_the_lock_stuck(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path), "60"], env=env,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "WON"
    holder.kill()
    holder.wait()
    time.sleep(0.1)
    with LaunchLock(str(tmp_path), "run", "2026.11.29") as lock:
        assert lock.held
