"""The iris executor: the launcher command (our convention), run through a real `iris` on PATH."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from executors.helpers import rendered
from executors.support import SRC
from rlaunch.executors import ExecutorError, JobStatus
from rlaunch.executors.iris import IrisExecutor, iris_run_command

FAKE_IRIS = """#!/bin/sh
# A stand-in Iris launcher for tests: records its arguments (and whether HF_TOKEN reached it,
# by length only), and answers job status/logs/stop like the real one.
echo "$@" >> "{log}"
echo "HF_TOKEN length ${{#HF_TOKEN}}" >> "{log}"
case "$2" in
  run) echo "submitted" ;;
  status) echo "{state}" ;;
  logs) echo "line one"; echo "line two" ;;
  stop) echo "stopped" ;;
esac
"""


def fake_iris(directory: Path, log: Path, state: str = "running") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "iris"
    script.write_text(FAKE_IRIS.format(log=log, state=state))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return directory


def test_the_iris_command_follows_our_convention(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path, launch = rendered(tmp_path, executor="iris", credentials=["HF_TOKEN", "WANDB_API_KEY"])
    command = iris_run_command(path, launch, job_name="rlaunch-echo-run-dev-a1")
    assert command == [
        "iris", "job", "run", "--cluster", "test-cluster", "--job-name", "rlaunch-echo-run-dev-a1",
        "--priority", "normal", "--retries", "0", "--timeout", "10m", "--gpu", "H100x1",
        "--replicas", "1", "--runtime", "rlaunch==0.1.0", "--py-module", str(SRC / "rlaunch"),
        "--env", "HF_TOKEN",
        "--env", "WANDB_API_KEY", "--", "python", "-m", "rlaunch_echo_runtime",
        "dist/echo-run/launch.yaml",
    ]


def test_without_iris_on_path_submission_fails_clearly(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    path, launch = rendered(tmp_path, executor="iris")
    with pytest.raises(ExecutorError) as caught:
        IrisExecutor().submit(path, launch, env={}, attempt_id="a1")
    assert str(caught.value).startswith(
        "executor `iris` needs the Iris launcher command `iris`, which is not on PATH ("
    )
    assert "rlaunch launch --dry-run" in str(caught.value)
    # Describing needs no launcher: that is what --dry-run prints.
    assert IrisExecutor().describe(path, launch)[1].startswith("command: iris job run --cluster")


def test_iris_runs_with_credentials_in_its_environment_only(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "iris.log"
    monkeypatch.setenv("PATH", f"{fake_iris(tmp_path / 'bin', log)}{os.pathsep}/usr/bin:/bin")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    path, launch = rendered(tmp_path, executor="iris", credentials=["HF_TOKEN"])
    executor = IrisExecutor()
    submission = executor.submit(path, launch, env={"HF_TOKEN": "hf_abcdefgh"}, attempt_id="a1")
    assert submission.submission_id == "rlaunch-echo-run-dev-a1"
    assert submission.address == "test-cluster"
    assert submission.entrypoint[:3] == ("python", "-m", "rlaunch_echo_runtime")
    recorded = log.read_text()
    assert "--env HF_TOKEN --" in recorded
    assert "HF_TOKEN length 11" in recorded
    assert "hf_abcdefgh" not in recorded + submission.to_json()
    assert executor.status(submission) == JobStatus.RUNNING
    assert list(executor.logs(submission, follow=False)) == ["line one\n", "line two\n"]
    executor.stop(submission)
    assert "job stop --cluster test-cluster rlaunch-echo-run-dev-a1" in log.read_text()


def test_an_unknown_iris_state_is_an_error_naming_the_answer(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "iris.log"
    monkeypatch.setenv("PATH", f"{fake_iris(tmp_path / 'bin', log, 'exploded')}:/usr/bin:/bin")
    path, launch = rendered(tmp_path, executor="iris")
    submission = IrisExecutor().submit(path, launch, env={}, attempt_id="a1")
    with pytest.raises(ExecutorError, match="answered 'exploded' \\(exit code 0\\); expected one"):
        IrisExecutor().status(submission)
