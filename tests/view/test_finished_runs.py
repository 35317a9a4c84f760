"""`rlaunch status` and `logs` of a finished run after the local Ray head that ran it is gone:
both answer from the ledger and the job.log kept in the store, not from the head."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from executors.support import ECHO_CLI, HeadWatch, echo_spec, job_env, shared_store
from rlaunch.executors.local_head import STATE_DIR_ENV, read_record
from rlaunch.ledger import Ledger


def rlaunch(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ECHO_CLI), *args], check=False, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_status_and_logs_answer_after_the_head_is_stopped(tmp_path: Path) -> None:
    store = shared_store(tmp_path.parent)
    heads = HeadWatch(tmp_path / "head")
    env = job_env(**{STATE_DIR_ENV: str(heads.state_dir)})
    spec_file = tmp_path / "echo-view.yaml"
    spec_file.write_text(yaml.safe_dump(echo_spec(store, name="echo-view")))
    try:
        launched = rlaunch(tmp_path, env, "launch", str(spec_file),
                           "--out", str(tmp_path / "launch.yaml"))
        assert launched.returncode == 0, launched.stderr
        assert "rlaunch: stopping the local Ray head" in launched.stderr
    finally:
        heads.finish()
    assert read_record(heads.state_dir) is None  # the head is gone
    attempt = Ledger(str(store)).read("echo-view", "dev")["attempts"][-1]
    job = attempt["submission"]

    status = rlaunch(tmp_path, env, "status", "echo-view@dev", "--store", str(store))
    assert status.returncode == 0, status.stderr
    assert status.stdout == (
        f"echo-view@dev attempt {attempt['attempt_id']}: SUCCEEDED (local job "
        f"{job['submission_id']} at {job['address']}; from the ledger)\n")

    logs = rlaunch(tmp_path, env, "logs", str(spec_file))
    assert logs.returncode == 0, logs.stderr
    kept = store / "echo-view" / "dev" / "attempts" / attempt["attempt_id"] / "job.log"
    assert logs.stdout == kept.read_text()
    assert "echo-runtime: done" in logs.stdout
