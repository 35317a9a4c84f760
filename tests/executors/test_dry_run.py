"""The dry-run executor says what would run and submits nothing."""

from __future__ import annotations

import sys
from pathlib import Path

from executors.helpers import rendered
from rlaunch.executors import ExecutorOptions
from rlaunch.executors.dry_run import DryRunExecutor
from rlaunch.status import AttemptStatus


def test_dry_run_describes_the_entrypoint_and_credential_names(tmp_path: Path) -> None:
    path, launch = rendered(tmp_path, executor="dry-run", credentials=["HF_TOKEN"])
    lines = DryRunExecutor().describe(path, launch)
    assert lines == [
        "executor: dry-run (nothing is submitted)",
        f"entrypoint: {sys.executable} -m rlaunch_echo_runtime {path}",
        "credentials forwarded by name: HF_TOKEN",
    ]


def test_dry_run_submit_prints_and_reports_success_without_running(tmp_path: Path) -> None:
    path, launch = rendered(tmp_path, executor="dry-run")
    said: list[str] = []
    executor = DryRunExecutor(ExecutorOptions(say=said.append))
    submission = executor.submit(path, launch, env={"HF_TOKEN": "hf_secret"}, attempt_id="a1")
    assert submission.submission_id == "dry-run-a1"
    assert submission.address is None
    assert said[0] == "executor: dry-run (nothing is submitted)"
    assert "hf_secret" not in "".join(said) + submission.to_json()
    assert executor.status(submission) == AttemptStatus.SUCCEEDED
    assert list(executor.logs(submission, follow=True)) == ["dry run dry-run-a1: nothing ran\n"]
