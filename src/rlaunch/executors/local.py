"""`local`: the embedded default. Runs the launch on a Ray head this machine's rlaunch owns.

The head (see `local_head`) is started on 127.0.0.1 with simulated GPUs matching the allocation,
or reused when a previous launch left one for the same allocation. The job is the runtime's
entrypoint, `python -m <runtime.entrypoint> <launch.yaml>`, with the interpreter of the
environment that has the pinned runtime (rlaunch.executors.runtime_python: this interpreter for
the smoke runtime, `$RLAUNCH_SKYRL_PYTHON` for SkyRL), submitted through the Ray Jobs API with
`PYTHONPATH` and rlaunch's job settings (`RLAUNCH_NODE_CACHE`, ...) in its runtime env and the
credentials in a 0600 file its wrapper reads and deletes (`rlaunch.executors.credentials`).
`prepare()` starts (or finds) the head in a thread while the launch builds its inputs: on two
cores the head's start-up runs beside the one-thread builds instead of after them. `close()`
stops the head when this executor started it, unless `keep_head` (released: it outlives this
process) or `hold_head` (left to this process, which stops it later; its supervisor stops it
when this process dies) is set; a head started by `prepare` that no job was submitted to is
stopped either way.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path

from rlaunch.clock import utc_now
from rlaunch.executors import jobs_api
from rlaunch.executors.base import (
    Executor,
    ExecutorError,
    ExecutorOptions,
    JobLost,
    Submission,
    entrypoint_argv,
    shell_command,
)
from rlaunch.executors.credentials import wrapped_argv, write_credentials
from rlaunch.executors.job import job_env_vars, job_pythonpath, job_settings
from rlaunch.executors.local_head import default_state_dir, ensure_head, head_cpus
from rlaunch.executors.runtime_python import head_python, job_python
from rlaunch.head_record import HeadRecord, release_head, stop_head
from rlaunch.paths import ATTEMPT_ENV
from rlaunch.progress import progress
from rlaunch.render.launchdoc import LaunchDocument
from rlaunch.status import AttemptStatus


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, options: ExecutorOptions | None = None) -> None:
        super().__init__(options)
        self._state_dir = self.options.head_state_dir or default_state_dir()
        self._started: HeadRecord | None = None
        self._early: Future[tuple[HeadRecord, bool]] | None = None
        """The head `prepare` is starting, until `head` or `close` takes it."""
        self._cancel = threading.Event()

    def describe(self, launch_yaml_path: Path, launch: LaunchDocument) -> list[str]:
        allocation = launch.execution.allocation
        gpus = allocation.total_gpus
        argv = entrypoint_argv(launch, str(Path(launch_yaml_path).resolve()),
                               python=job_python(launch, self.options.job_python),
                               extra=self.options.runtime_args)
        names = launch.execution.env
        settings = "".join(f", {name}={value}" for name, value in job_settings().items())
        return [
            f"executor: local (a Ray head on 127.0.0.1 with {gpus} simulated GPUs and "
            f"{head_cpus(allocation)} CPUs, reused when one is running for this allocation)",
            f"entrypoint: {shell_command(argv)}",
            f"job env: PYTHONPATH={job_pythonpath()}, {ATTEMPT_ENV}=<attempt id>{settings}"
            + (f", credentials {', '.join(names)} (values from this environment)" if names else ""),
        ]

    def _head_python(self, launch: LaunchDocument, python: str | None = None) -> str:
        """The interpreter whose Ray runs the head: the job's when it has Ray
        (rlaunch.executors.runtime_python.head_python)."""
        return head_python(python or job_python(launch, self.options.job_python))

    def prepare(self, launch: LaunchDocument) -> None:
        if self._early is not None:
            return
        # Asked now, not in the thread: a job's interpreter that lacks the runtime or a store's
        # backend is refused before the inputs build and before an attempt is recorded.
        python = self._head_python(launch)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rlaunch-local-head")
        self._early = pool.submit(
            lambda: ensure_head(launch.execution.allocation, self._state_dir, self.options.say,
                                cancelled=self._cancel.is_set, python=python))
        pool.shutdown(wait=False)

    def head(self, launch: LaunchDocument, python: str | None = None) -> HeadRecord:
        early = self._early
        if early is None:
            record, started = ensure_head(
                launch.execution.allocation, self._state_dir, self.options.say,
                python=self._head_python(launch, python),
            )
        else:
            # Interrupted or failed here, the early head stays for `close` to stop.
            with progress("waiting for the local Ray head") if not early.done() else nullcontext():
                record, started = early.result()
            self._early = None
        if started:
            self._started = record
        return record

    def submit(
        self,
        launch_yaml_path: Path,
        launch: LaunchDocument,
        *,
        env: Mapping[str, str],
        attempt_id: str,
    ) -> Submission:
        python = job_python(launch, self.options.job_python)
        record = self.head(launch, python)
        argv = entrypoint_argv(launch, str(Path(launch_yaml_path).resolve()), python=python,
                               extra=self.options.runtime_args)
        submission_id = launch.submission_name(attempt_id)
        command = argv
        if env:
            # Not in the runtime env: Ray logs that (rlaunch.executors.credentials).
            secrets = write_credentials(Path(record.temp_dir), attempt_id, env)
            command = wrapped_argv("file", str(secrets), argv)
        jobs_api.submit(
            record.dashboard_url,
            entrypoint=shell_command(command),
            submission_id=submission_id,
            env_vars=job_env_vars({}, attempt_id),
            metadata={"rlaunch_run": launch.run.id},
        )
        return Submission(
            executor=self.name,
            submission_id=submission_id,
            address=record.dashboard_url,
            attempt_id=attempt_id,
            submitted_at=utc_now(),
            entrypoint=argv,
        )

    def _address(self, submission: Submission) -> str:
        if not submission.address:
            raise ExecutorError(f"submission {submission.submission_id} has no head address")
        try:
            # Generous: on a loaded machine a slow head must not be reported gone.
            jobs_api.probe(submission.address, timeout_s=10.0)
        except ExecutorError:
            raise JobLost(
                f"the local Ray head that ran {submission.submission_id} "
                f"({submission.address}) is no longer running: a launch stops the head it "
                f"started when it ends (unless --keep-head or --detach). The job's output is in "
                f"the run's attempts/{submission.attempt_id}/job.log"
            ) from None
        return submission.address

    def status(self, submission: Submission) -> AttemptStatus:
        return jobs_api.status(self._address(submission), submission.submission_id)

    def logs(self, submission: Submission, follow: bool) -> Iterator[str]:
        return jobs_api.logs(self._address(submission), submission.submission_id, follow)

    def stop(self, submission: Submission) -> None:
        jobs_api.stop(self._address(submission), submission.submission_id)

    @property
    def started_head(self) -> HeadRecord | None:
        """The head this instance started, if any (None when it reused one)."""
        return self._started

    def close(self) -> None:
        early, self._early = self._early, None
        if early is not None:
            # Nothing was submitted: stop waiting, and stop the head if it was started for this.
            self._cancel.set()
            try:
                record, started = early.result()
            except ExecutorError:
                started = False  # a head that did not get ready was stopped where it failed
            if started:
                stop_head(record, self._state_dir, self.options.say)
        if self._started is None:
            return
        if self.options.keep_head:
            release_head(self._started)
        elif not self.options.hold_head:
            stop_head(self._started, self._state_dir, self.options.say)
        self._started = None
