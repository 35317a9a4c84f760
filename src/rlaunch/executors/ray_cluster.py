"""`ray`: submit to an existing Ray cluster through its Jobs API (`execution.address`).

Before submitting, the address must answer within the connect timeout and the cluster must
have the nodes and GPUs the allocation names (read from the dashboard's state API, so nothing
but the Jobs API address is needed). The launch YAML travels with the job as its working dir
(the only file in it), so the job reads `launch.yaml` on whichever node runs the entrypoint.

rlaunch travels with the job: its package folder is shipped as a Ray runtime-env `py_modules`
entry, so the entrypoint (`python -m rlaunch.runtimes.<adapter>`) and every task it starts (the
SkyRL adapter's staging tasks) import it on a cluster whose environment has only the runtime
installed. The entrypoint's interpreter: on a loopback address (a cluster on this machine) it is
this launcher's interpreter, with the launcher's other `PYTHONPATH` entries; on any other address
it is the cluster's `python`, whose environment must provide the pinned runtime.

Credentials are not in the runtime env (Ray logs it): they go into a one-time entry of the
cluster's GCS, uploaded through the Jobs API, which the job takes and deletes before it execs
the entrypoint (`rlaunch.executors.credentials`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from urllib.parse import urlparse

from rlaunch.clock import utc_now
from rlaunch.executors import jobs_api
from rlaunch.executors.base import (
    Executor,
    ExecutorError,
    Submission,
    entrypoint_argv,
    shell_command,
)
from rlaunch.executors.credentials import new_kv_key, payload, wrapped_argv
from rlaunch.executors.job import rlaunch_source_root, shipped_package
from rlaunch.executors.runtime_python import (
    job_python,
    needed_distributions,
    parse_probe,
    probe_command,
    refusal,
)
from rlaunch.paths import ATTEMPT_ENV
from rlaunch.render.launchdoc import LaunchDocument
from rlaunch.status import AttemptStatus

STAGED_YAML = "launch.yaml"
_PROBE_JOB_TIMEOUT_S = 120.0
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def is_loopback(address: str) -> bool:
    return (urlparse(address).hostname or "") in _LOOPBACK


def launcher_pythonpath() -> str:
    """The launcher's PYTHONPATH without rlaunch's own source root (rlaunch is shipped)."""
    own = str(rlaunch_source_root())
    parts = [part for part in os.environ.get("PYTHONPATH", "").split(os.pathsep)
             if part and os.path.abspath(part) != own]
    return os.pathsep.join(parts)


class RayClusterExecutor(Executor):
    name = "ray"

    @staticmethod
    def _address(launch: LaunchDocument) -> str:
        address = launch.execution.address
        if not address:
            raise ExecutorError(
                "execution.address is null but executor `ray` needs the cluster's Jobs API "
                "address, e.g. http://127.0.0.1:8265 (the Ray dashboard)"
            )
        return str(address).rstrip("/")

    @staticmethod
    def _python(address: str) -> str | None:
        return None if is_loopback(address) else "python"

    def _argv(self, launch: LaunchDocument, address: str) -> tuple[str, ...]:
        # A head on this machine: the interpreter that has the pinned runtime (the credentials
        # wrapper, which reads Ray's KV store, stays on this one: it needs ray).
        python = job_python(launch) if is_loopback(address) else "python"
        return entrypoint_argv(launch, STAGED_YAML, python=python,
                               extra=self.options.runtime_args)

    def _env_vars(self, address: str, attempt_id: str) -> dict[str, str]:
        env_vars = {ATTEMPT_ENV: attempt_id}
        if is_loopback(address) and launcher_pythonpath():
            env_vars["PYTHONPATH"] = launcher_pythonpath()
        return env_vars

    def describe(self, launch_yaml_path: Path, launch: LaunchDocument) -> list[str]:
        address = self._address(launch)
        names = launch.execution.env
        return [
            f"executor: ray (Jobs API at {address}; the cluster must have "
            f"{launch.execution.allocation.num_nodes} node(s) x "
            f"{launch.execution.allocation.gpus_per_node} GPUs)",
            f"working dir: {STAGED_YAML} (a copy of {launch_yaml_path})",
            f"entrypoint: {shell_command(self._argv(launch, address))}",
            f"shipped: {shipped_package()} (runtime env py_modules)",
            f"job env: {ATTEMPT_ENV}=<attempt id>"
            + (", PYTHONPATH=" + launcher_pythonpath()
               if is_loopback(address) and launcher_pythonpath() else "")
            + (f", credentials {', '.join(names)} (values from this environment, handed over "
               "through a one-time entry in the cluster's GCS, not the runtime env)"
               if names else ""),
        ]

    def check_cluster_python(self, launch: LaunchDocument, address: str, python: str,
                             probe_id: str) -> None:
        """Ask the cluster's interpreter, in a probe job, for what the job needs; refuse
        before submitting when it lacks any (a head on this machine is asked directly,
        `job_python`)."""
        distributions = needed_distributions(launch)
        if not distributions:
            return
        jobs_api.submit(address, entrypoint=shell_command(probe_command(python, distributions)),
                        submission_id=probe_id, env_vars={})
        status = jobs_api.wait_terminal(address, probe_id, _PROBE_JOB_TIMEOUT_S)
        output = "".join(jobs_api.logs(address, probe_id, False))
        if status != AttemptStatus.SUCCEEDED:
            raise ExecutorError(
                f"the probe job {probe_id} that asks the cluster's interpreter `{python}` at "
                f"{address} for its packages ended {status.value}: {output.strip()[-400:]}"
            )
        problem = refusal(launch, parse_probe(output),
                          f"the cluster's interpreter `{python}` at {address}",
                          f"Run on a cluster whose `{python}` is an environment")
        if problem is not None:
            raise ExecutorError(problem)

    def preflight_cluster(self, launch: LaunchDocument) -> str:
        """Probe the address and check its resources; returns the address."""
        address = self._address(launch)
        jobs_api.probe(address, self.options.connect_timeout_s)
        nodes = jobs_api.alive_nodes(address, self.options.connect_timeout_s)
        jobs_api.check_resources(address, nodes, launch.execution.allocation)
        return address

    def submit(
        self,
        launch_yaml_path: Path,
        launch: LaunchDocument,
        *,
        env: Mapping[str, str],
        attempt_id: str,
    ) -> Submission:
        address = self.preflight_cluster(launch)
        argv = self._argv(launch, address)
        submission_id = launch.submission_name(attempt_id)
        remote_python = self._python(address)
        if remote_python is not None:
            self.check_cluster_python(launch, address, remote_python, f"{submission_id}-probe")
        command = list(argv)
        if env:
            # Not in the runtime env: Ray logs that (rlaunch.executors.credentials).
            key = new_kv_key()
            jobs_api.put_package(address, key, payload(env), self.options.connect_timeout_s)
            command = wrapped_argv("ray-kv", key, argv, python=self._python(address))
        staging = Path(tempfile.mkdtemp(prefix="rlaunch-job-"))
        try:
            shutil.copyfile(launch_yaml_path, staging / STAGED_YAML)
            jobs_api.submit(
                address,
                entrypoint=shell_command(command),
                submission_id=submission_id,
                env_vars=self._env_vars(address, attempt_id),
                working_dir=str(staging),
                py_modules=[shipped_package()],
                metadata={"rlaunch_run": launch.run.id},
            )
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return Submission(
            executor=self.name,
            submission_id=submission_id,
            address=address,
            attempt_id=attempt_id,
            submitted_at=utc_now(),
            entrypoint=argv,
        )

    @staticmethod
    def _recorded_address(submission: Submission) -> str:
        if not submission.address:
            raise ExecutorError(f"submission {submission.submission_id} has no Jobs API address")
        return submission.address

    def status(self, submission: Submission) -> AttemptStatus:
        address = self._recorded_address(submission)
        jobs_api.probe(address, self.options.connect_timeout_s)
        return jobs_api.status(address, submission.submission_id)

    def logs(self, submission: Submission, follow: bool) -> Iterator[str]:
        address = self._recorded_address(submission)
        jobs_api.probe(address, self.options.connect_timeout_s)
        return jobs_api.logs(address, submission.submission_id, follow)

    def stop(self, submission: Submission) -> None:
        address = self._recorded_address(submission)
        jobs_api.probe(address, self.options.connect_timeout_s)
        jobs_api.stop(address, submission.submission_id)
