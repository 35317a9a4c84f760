"""Following a submitted job: stream its output, keep a copy per attempt, wait for the end.

The copy goes to `{attempts_root}/{attempt_id}/job.log` (any fsspec location). Credential values
are masked in what is shown and kept, as a second line of defence: a runtime should not print
them, but if it does they still do not land in rlaunch's files.
"""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Iterable, Mapping

from rlaunch.executors.base import Executor, Submission
from rlaunch.paths import join
from rlaunch.status import AttemptStatus
from rlaunch.store.fs import open_location

MASK = "***"
_MIN_MASKED_LENGTH = 4
_STATUS_WAIT_S = 30.0


class Redactor:
    """Replaces every credential value (4 characters or more) with `***`."""

    def __init__(self, values: Iterable[str]) -> None:
        self._values = sorted(
            {value for value in values if len(value) >= _MIN_MASKED_LENGTH}, key=len, reverse=True
        )

    def __call__(self, text: str) -> str:
        for value in self._values:
            text = text.replace(value, MASK)
        return text


class AttemptFiles:
    """`{attempts_root}/{attempt_id}/`: the submission record and the job's log."""

    def __init__(self, attempts_root: str, attempt_id: str) -> None:
        location = open_location(attempts_root, "attempts root")
        self._fs = location.fs
        self.root = join(location.root, attempt_id)
        self._fs.makedirs(self.root, exist_ok=True)
        self._log = io.StringIO()

    def write_submission(self, submission: Submission) -> None:
        text = json.dumps(submission.to_dict(), indent=2, sort_keys=True) + "\n"
        self._fs.pipe_file(join(self.root, "submission.json"), text.encode())

    def append_log(self, text: str) -> None:
        self._log.write(text)

    def save_log(self) -> str:
        path = join(self.root, "job.log")
        self._fs.pipe_file(path, self._log.getvalue().encode())
        return path


def stream(
    executor: Executor,
    submission: Submission,
    *,
    echo: Callable[[str], None],
    redact: Redactor,
    files: AttemptFiles | None,
    watch: Callable[[str], None] | None = None,
    save_every_s: float = 5.0,
) -> AttemptStatus:
    """Echo the job's output until it ends (`watch` reads it too: `job_progress`); returns
    its terminal status."""
    last_save = time.monotonic()
    try:
        for chunk in executor.logs(submission, follow=True):
            shown = redact(chunk)
            echo(shown)
            if watch is not None:
                watch(shown)
            if files is not None:
                files.append_log(shown)
                if time.monotonic() - last_save > save_every_s:
                    files.save_log()
                    last_save = time.monotonic()
    finally:
        if files is not None:
            files.save_log()
    return wait_terminal(executor, submission, _STATUS_WAIT_S)


def wait_terminal(executor: Executor, submission: Submission, timeout_s: float) -> AttemptStatus:
    deadline = time.monotonic() + timeout_s
    status = executor.status(submission)
    while not status.is_terminal() and time.monotonic() < deadline:
        time.sleep(0.5)
        status = executor.status(submission)
    return status


def credential_values(names: Iterable[str], env: Mapping[str, str]) -> dict[str, str]:
    """`{name: value}` for the named credentials present in `env`."""
    return {name: env[name] for name in names if name in env}
