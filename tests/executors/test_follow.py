"""Following a job: credential masking and the per-attempt files."""

from __future__ import annotations

import json
from pathlib import Path

from rlaunch.executors import Submission
from rlaunch.executors.follow import AttemptFiles, Redactor, credential_values


def test_credential_values_are_masked_longest_first() -> None:
    redact = Redactor(["abc", "token-1234", "token-12345678"])
    # Values under 4 characters would mask ordinary words: they are left alone.
    assert redact("abc token-12345678 token-1234") == "abc *** ***"


def test_only_named_credentials_present_in_the_environment_are_forwarded() -> None:
    env = {"HF_TOKEN": "hf_x", "OTHER": "y"}
    assert credential_values(["HF_TOKEN", "WANDB_API_KEY"], env) == {"HF_TOKEN": "hf_x"}


def test_attempt_files_hold_the_submission_and_the_log(tmp_path: Path) -> None:
    files = AttemptFiles(str(tmp_path / "attempts"), "a1")
    submission = Submission("local", "s1", "http://127.0.0.1:1", "a1", "t", ("python",))
    files.write_submission(submission)
    files.append_log("line one\n")
    files.append_log("line two\n")
    path = files.save_log()
    assert path == str(tmp_path / "attempts" / "a1" / "job.log")
    assert Path(path).read_text() == "line one\nline two\n"
    record = json.loads((tmp_path / "attempts" / "a1" / "submission.json").read_text())
    assert record == submission.to_dict()
