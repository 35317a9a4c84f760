"""Exact resume: a run killed with SIGKILL and relaunched ends with the uninterrupted weights.

The entrypoint runs as a subprocess in its own session, starting its own local Ray; the test
kills that whole process group once a checkpoint is in place, relaunches, and compares the
final weights' sha256 with the same run done without interruption (the `finished_run`
fixture). Every process of both sessions is gone when the test ends.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import rlaunch
from rlaunch.head_record import session_pids

from .smoke_helpers import write_launch

SRC = str(Path(rlaunch.__file__).resolve().parents[1])


def _end_session(session: int, grace_s: float) -> list[int]:
    """Wait up to `grace_s` for the session to empty, then SIGKILL what is left of it."""
    deadline = time.monotonic() + grace_s
    while session_pids(session) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = session_pids(session)
    for pid in survivors:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return survivors


def _launch(path: Path, attempt: str, log: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SRC, env.get("PYTHONPATH")]))
    env["RLAUNCH_ATTEMPT_ID"] = attempt
    return subprocess.Popen(
        [sys.executable, "-m", "rlaunch.runtimes.smoke", str(path)],
        env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True,
    )


def test_sigkill_then_relaunch_ends_with_the_uninterrupted_weights(
    finished_run, tiny_model_dir: Path, tmp_path: Path
) -> None:
    path, document = write_launch(tmp_path, tiny_model_dir)
    root = Path(document["artifacts"]["checkpoint_root"])
    pointer = root / "latest_ckpt_global_step.txt"
    manifest_path = Path(document["artifacts"]["terminal_manifest"])
    sessions: list[int] = []
    try:
        first = _launch(path, "killed", tmp_path / "killed.log")
        sessions.append(first.pid)
        deadline = time.monotonic() + 240
        while not pointer.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert first.poll() is None, (tmp_path / "killed.log").read_text()
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        killed_at = int(pointer.read_text())
        assert killed_at < 8 and not manifest_path.exists()
        _end_session(first.pid, grace_s=5)

        relaunch = _launch(path, "relaunch", tmp_path / "relaunch.log")
        sessions.append(relaunch.pid)
        assert relaunch.wait(timeout=300) == 0, (tmp_path / "relaunch.log").read_text()
        log = (tmp_path / "relaunch.log").read_text()
        assert f"resumed from {root / f'global_step_{killed_at}'} (global step {killed_at}" in log
        assert f"step {killed_at + 1}/8 |" in log and f"step {killed_at}/8 |" not in log
    finally:
        leftovers = {session: _end_session(session, grace_s=15) for session in sessions}
    manifest = json.loads(manifest_path.read_text())
    uninterrupted = json.loads(Path(finished_run[1]["artifacts"]["terminal_manifest"]).read_text())
    assert manifest["resumed_from_step"] == killed_at
    assert manifest["weights_sha256"] == uninterrupted["weights_sha256"]
    assert manifest["metrics"]["steps"] == 8
    # A clean exit shuts its own Ray down; nothing of either session may outlive the test.
    assert leftovers[sessions[1]] == []
    assert [session_pids(session) for session in sessions] == [[], []]
