"""The attempt status vocabulary (rlaunch/status.py): its words, what is terminal, what an
executor may report."""

from __future__ import annotations

import pytest

from rlaunch.status import AttemptStatus


def test_the_words_are_the_ones_ledger_records_hold() -> None:
    assert [status.value for status in AttemptStatus] == [
        "submitting", "PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "submit-failed",
        "LOST",
    ]
    assert [str(status) for status in AttemptStatus] == [s.value for s in AttemptStatus]
    assert f"recorded as {AttemptStatus.SUBMIT_FAILED}" == "recorded as submit-failed"


def test_terminal_statuses_include_a_failed_submission_and_a_lost_job() -> None:
    terminal = {status for status in AttemptStatus if status.is_terminal()}
    assert terminal == {
        AttemptStatus.SUCCEEDED, AttemptStatus.FAILED, AttemptStatus.STOPPED,
        AttemptStatus.SUBMIT_FAILED, AttemptStatus.LOST,
    }


def test_an_executor_reports_only_the_job_statuses() -> None:
    assert [s for s in AttemptStatus if s.is_job_status()] == [
        AttemptStatus.PENDING, AttemptStatus.RUNNING, AttemptStatus.SUCCEEDED,
        AttemptStatus.FAILED, AttemptStatus.STOPPED,
    ]
    assert AttemptStatus.of_job("RUNNING") is AttemptStatus.RUNNING
    with pytest.raises(ValueError) as refused:
        AttemptStatus.of_job("LOST")
    assert str(refused.value) == (
        "'LOST' is not a job status (one of PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED)"
    )
    with pytest.raises(ValueError, match="'QUEUED' is not a valid AttemptStatus"):
        AttemptStatus.of_job("QUEUED")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("submit-failed", AttemptStatus.SUBMIT_FAILED), ("LOST", AttemptStatus.LOST),
     ("never-launched", None), (None, None), ("lost", None)],
)
def test_a_recorded_word_reads_as_its_status(value: object, expected: object) -> None:
    assert AttemptStatus.recorded(value) is expected
