"""The executor plugin interface: one launch YAML in, one submission record out.

An executor is a small class registered in the entry point group `rlaunch.executors`. It submits
the runtime's entrypoint for a rendered launch YAML and later answers, from the submission record
alone, what the job's status is, what it logged, and how to stop it. Credential values reach the
job only through the environment given to `submit`; they never enter the record, the YAML or a
log line written by rlaunch.
"""

from __future__ import annotations

import abc
import json
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from rlaunch.render.launchdoc import LaunchDocument
from rlaunch.spec.catalog import profile
from rlaunch.status import AttemptStatus


class ExecutorError(RuntimeError):
    """The executor cannot do what was asked: the message names the address, command or field
    involved and how to check or fix it."""


class JobLost(ExecutorError):
    """The executor no longer knows the job at all (its head is gone): it is not running."""


@dataclass(frozen=True)
class Submission:
    """What an executor returns for a submitted job: enough to find the job again later.

    Serializable to JSON (the launch ledger stores it). Holds credential *names* at most, never a
    value."""

    executor: str
    """Plugin name (`local`, `ray`, `iris`, `dry-run`)."""
    submission_id: str
    """The job's id in the executor (Ray Jobs submission id, Iris job name, ...)."""
    address: str | None
    """Where the job was submitted (Ray Jobs API URL, Iris cluster name); None for dry-run."""
    attempt_id: str
    """rlaunch's id of this launch attempt (`{utc time}-{random}`), also an attempts/ folder."""
    submitted_at: str
    """UTC ISO-8601 time of submission."""
    entrypoint: tuple[str, ...]
    """The command the job runs (argv)."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["entrypoint"] = list(self.entrypoint)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Submission:
        try:
            return cls(
                executor=str(data["executor"]),
                submission_id=str(data["submission_id"]),
                address=None if data.get("address") is None else str(data["address"]),
                attempt_id=str(data["attempt_id"]),
                submitted_at=str(data["submitted_at"]),
                entrypoint=tuple(str(part) for part in data["entrypoint"]),
            )
        except KeyError as err:
            missing = err.args[0]
            raise ExecutorError(f"not a submission record: field {missing!r} is missing") from None
        except TypeError as err:
            raise ExecutorError(f"not a submission record: {err}") from None

    @classmethod
    def from_json(cls, text: str) -> Submission:
        return cls.from_dict(json.loads(text))


@dataclass(frozen=True)
class ExecutorOptions:
    """How the front end wants an executor to behave; plugins ignore what does not apply."""

    keep_head: bool = False
    """local: leave a Ray head this launch started running after the launch ends, and after
    this process ends (released: its supervisor stands down)."""
    hold_head: bool = False
    """local: leave a Ray head this launch started running after the launch ends, for the rest
    of this process only (a pipeline or sweep launching its runs on one head, which it stops at
    its end): not released, so its supervisor still stops it if this process dies."""
    connect_timeout_s: float = 10.0
    """Seconds to wait for a Jobs API address to answer before calling it unreachable."""
    head_state_dir: Path | None = None
    """local: where the head's state file lives (default ~/.cache/rlaunch/local-head)."""
    say: Callable[[str], None] = field(default=lambda message: print(message, file=sys.stderr))
    """Progress messages for a person (stderr by default)."""
    runtime_args: tuple[str, ...] = ()
    """Arguments after the launch YAML on the runtime's command line (`--check-handoffs`)."""
    job_python: tuple[str, str] | None = None
    """local: (setting, interpreter) of the environment the job runs in, instead of the
    runtime profile's setting (a rehearsal's environment: `RLAUNCH_REHEARSAL_PYTHON`)."""


class Executor(abc.ABC):
    """One way to run a launch YAML. Subclasses set `name` and implement the methods below."""

    name: ClassVar[str]

    def __init__(self, options: ExecutorOptions | None = None) -> None:
        self.options = options or ExecutorOptions()

    @abc.abstractmethod
    def describe(self, launch_yaml_path: Path, launch: LaunchDocument) -> list[str]:
        """Human-readable lines saying exactly what `submit` would run, with credential names
        (never values). `--dry-run` prints these."""

    @abc.abstractmethod
    def submit(
        self,
        launch_yaml_path: Path,
        launch: LaunchDocument,
        *,
        env: Mapping[str, str],
        attempt_id: str,
    ) -> Submission:
        """Start the job. `env` holds the credential values for the job's environment only."""

    def prepare(self, launch: LaunchDocument) -> None:
        """Start, in the background, what `submit` will need, while the caller builds the
        inputs (local: the Ray head), after refusing (ExecutorError) what is decidable at once
        (local: an interpreter that lacks what the job needs). Errors of the background work
        surface in `submit`; `close` ends what it started. Optional: by default nothing is
        started early."""

    @abc.abstractmethod
    def status(self, submission: Submission) -> AttemptStatus:
        """The job's status: one of the job statuses (`AttemptStatus.is_job_status`)."""

    @abc.abstractmethod
    def logs(self, submission: Submission, follow: bool) -> Iterator[str]:
        """The job's output in chunks; with `follow`, until the job is terminal."""

    @abc.abstractmethod
    def stop(self, submission: Submission) -> None:
        """Ask the job to stop; returns once the request is accepted (the job may still be
        winding down: poll `status`)."""

    def close(self) -> None:
        """Release whatever this executor instance started for the launch (local: its head)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def entrypoint_argv(
    launch: LaunchDocument, launch_yaml: str, *, python: str | None = None,
    extra: tuple[str, ...] = (),
) -> tuple[str, ...]:
    """`python -m <module> <launch yaml>`: how every runtime is started. The module is the
    runtime's entrypoint, or its profile's adapter when the entrypoint does not read the YAML
    itself (SkyRL: `rlaunch.runtimes.skyrl` hands it the `skyrl` subtree as overrides)."""
    known = profile(launch.runtime.profile)
    module = known.adapter if known is not None and known.adapter else launch.runtime.entrypoint
    return (python or sys.executable, "-m", module, launch_yaml, *extra)


def shell_command(argv: tuple[str, ...]) -> str:
    """The argv as one shell string (the Ray Jobs API takes a shell command)."""
    return shlex.join(argv)
