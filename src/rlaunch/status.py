"""Where a launch attempt is: one vocabulary for the ledger, the executors and the front ends.

The values are the strings ledger records hold (`status` of a record and of each attempt), so a
record written before this enum reads unchanged. An executor reports the job's part (PENDING,
RUNNING, SUCCEEDED, FAILED, STOPPED: the Ray Jobs API's names, so Ray statuses map 1:1); the
launcher writes the rest: SUBMITTING before it calls the executor, SUBMIT_FAILED when no job was
made, LOST when the executor no longer knows the job.
"""

from __future__ import annotations

import enum


class AttemptStatus(str, enum.Enum):
    SUBMITTING = "submitting"
    """Recorded, and the executor is being asked to submit the job."""
    PENDING = "PENDING"
    """Submitted; the job waits for its resources."""
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    """Stopped on request (`rlaunch stop`, Ctrl-C)."""
    SUBMIT_FAILED = "submit-failed"
    """No job was made: the executor refused, the submission was interrupted, or the launcher
    stopped before it submitted."""
    LOST = "LOST"
    """The job's executor no longer knows it (e.g. its local head died with a killed launcher):
    it cannot be running, and how it ended is unknown."""

    def is_terminal(self) -> bool:
        """A terminal status never changes again."""
        return self in _TERMINAL

    def is_job_status(self) -> bool:
        """A status an executor reports for a submitted job (the others are the launcher's)."""
        return self in _JOB

    @classmethod
    def of_job(cls, value: str) -> AttemptStatus:
        """The status an executor read (`RUNNING`...); ValueError for anything else."""
        status = cls(value)
        if not status.is_job_status():
            raise ValueError(f"{value!r} is not a job status (one of {', '.join(_JOB)})")
        return status

    @classmethod
    def recorded(cls, value: object) -> AttemptStatus | None:
        """The status a ledger record holds; None when it holds none (`never-launched`, a
        missing attempt) or one this version does not know."""
        try:
            return cls(value)
        except ValueError:
            return None

    def __str__(self) -> str:
        return self.value


_TERMINAL = frozenset({
    AttemptStatus.SUCCEEDED, AttemptStatus.FAILED, AttemptStatus.STOPPED,
    AttemptStatus.SUBMIT_FAILED, AttemptStatus.LOST,
})
_JOB = (
    AttemptStatus.PENDING, AttemptStatus.RUNNING, AttemptStatus.SUCCEEDED, AttemptStatus.FAILED,
    AttemptStatus.STOPPED,
)
