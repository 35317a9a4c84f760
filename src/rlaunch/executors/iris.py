"""`iris`: hand the launch YAML to the Iris launcher command.

Our convention for the command (docs/launching.md, "Iris"):

    iris job run --cluster <execution.cluster> --job-name <submission id>
        --priority <low|normal|high> --retries <max_retries> --timeout <timeout_minutes>m
        --gpu <accelerator>x<gpus_per_node> --replicas <num_nodes>
        --runtime <runtime pin: name==X.Y.Z | git+<repo>@<commit>>
        --py-module <the rlaunch package folder>   (ships rlaunch with the job)
        [--env NAME ...]                   (credential names; values come from the environment)
        -- python -m <runtime.entrypoint> <launch.yaml>

and `iris job status|logs [--follow]|stop --cluster <cluster> <job name>` to follow it. Credential
values are never on a command line (they would show in `ps`): the launcher process gets them in
its environment and forwards the named ones. The YAML path is relative to the working directory
when it lies under it (Iris ships the working directory with the job), absolute otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

from rlaunch.clock import utc_now
from rlaunch.executors.base import (
    Executor,
    ExecutorError,
    JobStatus,
    Submission,
    entrypoint_argv,
    shell_command,
)
from rlaunch.executors.job import shipped_package
from rlaunch.render.launchdoc import LaunchDocument

IRIS = "iris"
# Iris job states (lower case in its CLI output) to ours.
_STATES = {
    "pending": JobStatus.PENDING,
    "building": JobStatus.PENDING,
    "running": JobStatus.RUNNING,
    "succeeded": JobStatus.SUCCEEDED,
    "failed": JobStatus.FAILED,
    "worker_failed": JobStatus.FAILED,
    "unschedulable": JobStatus.FAILED,
    "killed": JobStatus.STOPPED,
    "stopped": JobStatus.STOPPED,
}


def runtime_pin(launch: LaunchDocument) -> str:
    runtime = launch.runtime
    if runtime.package:
        return runtime.package
    if runtime.git is not None:
        return f"git+{runtime.git.repo}@{runtime.git.commit}"
    raise ExecutorError("runtime has neither a package nor a git pin; the Iris job cannot pin it")


def _yaml_argument(launch_yaml_path: Path) -> str:
    path = Path(launch_yaml_path).resolve()
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def iris_run_command(
    launch_yaml_path: Path, launch: LaunchDocument, *, job_name: str,
    runtime_args: tuple[str, ...] = (),
) -> list[str]:
    execution = launch.execution
    cluster = execution.cluster
    if not cluster:
        raise ExecutorError(
            "execution.cluster is null but executor `iris` needs the Iris cluster name"
        )
    allocation = execution.allocation
    command = [
        IRIS, "job", "run",
        "--cluster", cluster,
        "--job-name", job_name,
        "--priority", execution.priority,
        "--retries", str(execution.max_retries),
        "--timeout", f"{execution.timeout_minutes}m",
        "--gpu", f"{allocation.accelerator}x{allocation.gpus_per_node}",
        "--replicas", str(allocation.num_nodes),
        "--runtime", runtime_pin(launch),
        "--py-module", shipped_package(),
    ]
    for name in launch.execution.env:
        command += ["--env", name]
    command.append("--")
    command += entrypoint_argv(launch, _yaml_argument(launch_yaml_path), python="python",
                               extra=runtime_args)
    return command


def _iris_executable() -> str:
    found = shutil.which(IRIS)
    if found is None:
        raise ExecutorError(
            f"executor `iris` needs the Iris launcher command `{IRIS}`, which is not on PATH "
            f"({os.environ.get('PATH', '')}); install Iris (marin's lib/iris) in this "
            f"environment, or print the command without running it: rlaunch launch --dry-run"
        )
    return found


class IrisExecutor(Executor):
    name = "iris"

    def describe(self, launch_yaml_path: Path, launch: LaunchDocument) -> list[str]:
        command = iris_run_command(launch_yaml_path, launch, job_name="<submission id>",
                                   runtime_args=self.options.runtime_args)
        return [f"executor: iris (cluster {launch.execution.cluster})",
                f"command: {shell_command(tuple(command))}"]

    def submit(
        self,
        launch_yaml_path: Path,
        launch: LaunchDocument,
        *,
        env: Mapping[str, str],
        attempt_id: str,
    ) -> Submission:
        job_name = launch.submission_name(attempt_id)
        command = iris_run_command(launch_yaml_path, launch, job_name=job_name,
                                   runtime_args=self.options.runtime_args)
        command[0] = _iris_executable()
        done = subprocess.run(
            command, env={**os.environ, **env}, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise ExecutorError(
                f"`iris job run` failed (exit code {done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[-1500:]}"
            )
        return Submission(
            executor=self.name,
            submission_id=job_name,
            address=str(launch.execution.cluster),
            attempt_id=attempt_id,
            submitted_at=utc_now(),
            entrypoint=tuple(command[command.index("--") + 1 :]),
        )

    @staticmethod
    def _job_command(verb: str, submission: Submission, *extra: str) -> list[str]:
        return [_iris_executable(), "job", verb, "--cluster", str(submission.address),
                *extra, submission.submission_id]

    def status(self, submission: Submission) -> JobStatus:
        done = subprocess.run(
            self._job_command("status", submission), capture_output=True, text=True, check=False
        )
        words = done.stdout.strip().split()
        state = words[0].lower() if words else ""
        if done.returncode != 0 or state not in _STATES:
            raise ExecutorError(
                f"`iris job status` for {submission.submission_id} answered "
                f"{(done.stdout or done.stderr).strip()[:300]!r} (exit code {done.returncode}); "
                f"expected one of {', '.join(sorted(_STATES))}"
            )
        return _STATES[state]

    def logs(self, submission: Submission, follow: bool) -> Iterator[str]:
        extra = ("--follow",) if follow else ()
        with subprocess.Popen(
            self._job_command("logs", submission, *extra), stdout=subprocess.PIPE, text=True
        ) as process:
            if process.stdout is not None:
                yield from process.stdout

    def stop(self, submission: Submission) -> None:
        done = subprocess.run(
            self._job_command("stop", submission), capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise ExecutorError(
                f"`iris job stop` for {submission.submission_id} failed: {done.stderr.strip()}"
            )
