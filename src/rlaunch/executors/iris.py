"""`iris`: submit the launch through Marin's Iris client (the `marin-iris` package).

Where the job goes (docs/launching.md, "iris"): `execution.address`, an Iris controller URL, or
else `execution.cluster`, a cluster config file or a cluster name that Iris resolves as
`iris --cluster NAME` does (its config search path). A config whose controller runs elsewhere is
reached the way the `iris` command reaches it (the config's controller address, or the
platform's discovery and tunnel); a config of a local controller names its fixed port.

What is submitted, with `IrisClient.submit` (the SDK; no `iris` command line):
- the command `bash -c 'exec "$IRIS_PYTHON" -m <module> "$IRIS_WORKDIR/launch.yaml" [args]'`,
  with the launch YAML itself inside the job spec (an entrypoint workdir file, which the worker
  writes into the task's working directory): the YAML under `dist/` is not in the workspace
  bundle, which leaves out git-ignored files;
- resources per replica from `execution.allocation`: CPUs, memory and disk per node, the GPU
  variant (`accelerator`) and count (`gpus_per_node`), or no accelerator for `sim` (simulated
  GPUs: the smoke runtime makes its own); replicas = `num_nodes`, coscheduled as the `iris`
  command coschedules a multi-replica GPU job;
- the priority band (`execution.priority`: production, interactive or batch), retries on
  failure (`max_retries`) and the task timeout (`timeout_minutes`);
- the environment: the credentials by name (values from the launching environment, in the
  job spec's environment, never on a command line), the attempt id and rlaunch's job settings;
  the runtime's pin as a package to install, unless the runtime ships inside rlaunch, which
  travels as the workspace bundle (this checkout, synced on the worker).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from connectrpc.code import Code
from connectrpc.errors import ConnectError

with warnings.catch_warnings():
    # marin-iris 0.2.20 imports starlette.middleware.wsgi (its worker dashboard), which warns on
    # every import; the warning is about Iris's code and says nothing about this launch.
    warnings.filterwarnings("ignore", message="starlette.middleware.wsgi is deprecated")
    from iris.cli.connect import IRIS_CLUSTER_CONFIG_DIRS, rpc_client
    from iris.cli.job import resolve_multinode_defaults
    from iris.cli.main import create_client_token_provider
    from iris.client import IrisClient
    from iris.cluster.client import RemoteClusterClient
    from iris.cluster.config import IrisConfig
    from iris.cluster.log_keys import build_log_source
    from iris.cluster.token_store import cluster_name_from_url, load_any_token, load_token
    from iris.cluster.types import Entrypoint, EnvironmentSpec, JobName, ResourceSpec, gpu_device
    from iris.rpc import job_pb2
    from iris.rpc.auth import StaticTokenProvider, TokenProvider, client_interceptors
    from rigging.config_discovery import resolve_cluster_config
    from rigging.timing import Duration

from rlaunch.clock import utc_now
from rlaunch.executors.base import (
    Executor,
    ExecutorError,
    ExecutorOptions,
    JobLost,
    Submission,
    entrypoint_argv,
    shell_command,
)
from rlaunch.executors.job import job_settings, rlaunch_source_root
from rlaunch.executors.runtime_python import SHIPPED_WITH_RLAUNCH
from rlaunch.interrupts import interrupts_deferred
from rlaunch.paths import ATTEMPT_ENV
from rlaunch.render.launchdoc import LaunchDocument
from rlaunch.spec.catalog import profile
from rlaunch.spec.execution import IRIS_PRIORITY_BANDS
from rlaunch.status import AttemptStatus

PRIORITY_BANDS = {
    band: job_pb2.PriorityBand.Value(f"PRIORITY_BAND_{band.upper()}")
    for band in IRIS_PRIORITY_BANDS
}
"""execution.priority to Iris's priority band."""

SIMULATED = "sim"
LAUNCH_YAML = "launch.yaml"
JOB_SCRIPT = 'exec "$IRIS_PYTHON" -m "$0" "$IRIS_WORKDIR/' + LAUNCH_YAML + '" "$@"'
"""The task's command: the worker sets IRIS_PYTHON (its environment's python) and IRIS_WORKDIR
(where it wrote the launch YAML); `$0` is the runtime's module, `$@` its extra arguments."""

IRIS_FORWARDS_BY_DEFAULT = ("HF_TOKEN", "WANDB_API_KEY")
"""Iris's EnvironmentSpec copies these from the submitting process's environment when set
(`iris.cluster.types.EnvironmentSpec.to_proto`); a job gets only the credentials it lists."""

_STATES = {
    job_pb2.JOB_STATE_PENDING: AttemptStatus.PENDING,
    job_pb2.JOB_STATE_BUILDING: AttemptStatus.PENDING,
    job_pb2.JOB_STATE_RUNNING: AttemptStatus.RUNNING,
    job_pb2.JOB_STATE_SUCCEEDED: AttemptStatus.SUCCEEDED,
    job_pb2.JOB_STATE_FAILED: AttemptStatus.FAILED,
    job_pb2.JOB_STATE_WORKER_FAILED: AttemptStatus.FAILED,
    job_pb2.JOB_STATE_UNSCHEDULABLE: AttemptStatus.FAILED,
    job_pb2.JOB_STATE_KILLED: AttemptStatus.STOPPED,
}
"""Iris's job states to rlaunch's: building (the worker syncs the environment) is still
pending; a job that could not be scheduled or whose worker died has failed."""

T = TypeVar("T")
_CONNECT_TIMEOUT_MS = 10_000
_LOG_POLL_S = 0.5


def _is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def resources(launch: LaunchDocument) -> ResourceSpec:
    """One replica's resources: one node of the allocation."""
    allocation = launch.execution.allocation
    device = (None if allocation.accelerator == SIMULATED
              else gpu_device(allocation.accelerator, allocation.gpus_per_node))
    return ResourceSpec(cpu=allocation.cpus_per_node, memory=f"{allocation.memory_gb_per_node}g",
                        disk=f"{allocation.disk_gb_per_node}g", device=device)


def runtime_packages(launch: LaunchDocument) -> list[str]:
    """What the worker installs for the runtime: its pin, unless it ships inside rlaunch."""
    runtime = launch.runtime
    known = profile(runtime.profile)
    if known is not None and known.package == SHIPPED_WITH_RLAUNCH:
        return []
    if runtime.package:
        return [runtime.package]
    if runtime.git is not None and known is not None:
        return [f"{known.package} @ git+{runtime.git.repo}@{runtime.git.commit}"]
    raise ExecutorError(
        f"runtime {runtime.name} has neither a package pin nor a git pin of a known profile; "
        "the Iris job could not install it"
    )


def job_command(launch: LaunchDocument, runtime_args: tuple[str, ...]) -> list[str]:
    module = entrypoint_argv(launch, LAUNCH_YAML)[2]
    return ["bash", "-c", JOB_SCRIPT, module, *runtime_args]


def job_environment(launch: LaunchDocument, env: Mapping[str, str], attempt_id: str
                    ) -> dict[str, str | None]:
    """The job's environment variables. None drops a name Iris would otherwise forward."""
    unlisted: dict[str, str | None] = {
        name: None for name in IRIS_FORWARDS_BY_DEFAULT if name not in env
    }
    return {**unlisted, **job_settings(), ATTEMPT_ENV: attempt_id, **env}


def _stored_token(cluster_name: str) -> TokenProvider | None:
    credential = load_token(cluster_name) or load_any_token()
    return StaticTokenProvider(credential.token) if credential is not None else None


class _Connection:
    """A controller URL, the token to send, and how to close what reaching it opened."""

    def __init__(self, url: str, token: TokenProvider | None,
                 close: Callable[[], None] = lambda: None) -> None:
        self.url, self.token, self.close = url, token, close


def connect(target: str) -> _Connection:
    """Reach the controller `target` names: a URL, a cluster config file, or a cluster name."""
    if _is_url(target):
        return _Connection(target, _stored_token(cluster_name_from_url(target)))
    try:
        path = resolve_cluster_config(target, dirs=IRIS_CLUSTER_CONFIG_DIRS)
    except FileNotFoundError as err:
        raise ExecutorError(
            f"execution.cluster {target!r} is neither a cluster config file nor a cluster name "
            f"Iris knows ({err}); set it to a config file, or set execution.address to the "
            f"controller's URL"
        ) from None
    try:
        config = IrisConfig.load(path)
    except (ValueError, OSError) as err:
        raise ExecutorError(f"Iris cluster config {path} (execution.cluster): {err}") from None
    proto = config.proto
    name = proto.name or path.stem
    token = _stored_token(name)
    if proto.HasField("auth") and token is None:
        # The same order as the `iris` command: a stored login first, then the config's auth.
        token = create_client_token_provider(proto.auth, cluster_name=name)
    if proto.controller.WhichOneof("controller") == "local":
        port = proto.controller.local.port
        if not port:
            raise ExecutorError(
                f"Iris cluster config {path} (execution.cluster) runs its controller locally on "
                f"an automatic port (controller.local.port 0), which rlaunch cannot find: set "
                f"controller.local.port, start it with `iris --config {path} cluster start`, or "
                f"set execution.address to the URL that command prints"
            )
        return _Connection(f"http://127.0.0.1:{port}", token)
    try:
        address = config.controller_address()
        bundle = config.provider_bundle()
        if not address:
            address = bundle.controller.discover_controller(proto.controller)
        tunnel = bundle.controller.tunnel(address=address)
        url = tunnel.__enter__()
    except (ConnectError, OSError, RuntimeError, ValueError) as err:
        raise ExecutorError(
            f"cannot reach the controller of Iris cluster config {path} (execution.cluster): "
            f"{err}; check with `iris --config {path} job list`"
        ) from None
    return _Connection(url, token, lambda: tunnel.__exit__(None, None, None))


def probe(connection: _Connection, where: str) -> None:
    """One unretried call with a short timeout: Iris's client retries an unreachable
    controller for 30 minutes, which would look like a hang."""
    try:
        with rpc_client(connection.url, connection.token, timeout_ms=_CONNECT_TIMEOUT_MS) as rpc:
            rpc.get_auth_info(job_pb2.GetAuthInfoRequest())
    except (ConnectError, OSError) as err:
        raise ExecutorError(
            f"the Iris controller at {connection.url} ({where}) did not answer within "
            f"{_CONNECT_TIMEOUT_MS // 1000} s ({err}); check that it runs: "
            f"`iris --controller-url {connection.url} job list`"
        ) from None


def _workspace() -> Path | None:
    """This checkout, the bundle that carries rlaunch to the workers (None outside one)."""
    root = rlaunch_source_root().parent
    return root if (root / "pyproject.toml").is_file() else None


class IrisExecutor(Executor):
    name = "iris"

    def __init__(self, options: ExecutorOptions | None = None) -> None:
        super().__init__(options)
        self._connections: dict[str, tuple[_Connection, RemoteClusterClient, IrisClient]] = {}

    def _client(self, target: str, where: str) -> tuple[RemoteClusterClient, IrisClient]:
        if target not in self._connections:
            connection = connect(target)
            try:
                probe(connection, where)
            except ExecutorError:
                connection.close()
                raise
            cluster = RemoteClusterClient(
                controller_address=connection.url, workspace=_workspace(),
                interceptors=client_interceptors(connection.token),
            )
            self._connections[target] = (connection, cluster, IrisClient(cluster))
        _, cluster, client = self._connections[target]
        return cluster, client

    @staticmethod
    def target(launch: LaunchDocument) -> tuple[str, str]:
        """The controller to submit to, and the field that names it."""
        execution = launch.execution
        if execution.address:
            return execution.address, "execution.address"
        if execution.cluster:
            return execution.cluster, "execution.cluster"
        raise ExecutorError(
            "executor iris needs execution.address (the Iris controller's URL) or "
            "execution.cluster (a cluster config file or name), but both are null"
        )

    def submit_arguments(self, launch_yaml_path: Path, launch: LaunchDocument,
                         env: Mapping[str, str], attempt_id: str) -> dict[str, Any]:
        """Everything `IrisClient.submit` is given (credential values only in `environment`)."""
        execution = launch.execution
        allocation = execution.allocation
        band = PRIORITY_BANDS.get(execution.priority)
        if band is None:
            raise ExecutorError(
                f"execution.priority {execution.priority!r} is not an Iris priority band; set "
                f"it to one of {', '.join(PRIORITY_BANDS)}"
            )
        gpu = None if allocation.accelerator == SIMULATED else allocation.accelerator
        replicas, coscheduling = resolve_multinode_defaults(None, gpu, allocation.num_nodes)
        return {
            "entrypoint": Entrypoint(
                command=job_command(launch, self.options.runtime_args),
                workdir_files={LAUNCH_YAML: Path(launch_yaml_path).read_bytes()},
            ),
            "name": launch.submission_name(attempt_id),
            "resources": resources(launch),
            "environment": EnvironmentSpec(
                pip_packages=runtime_packages(launch),
                env_vars=job_environment(launch, env, attempt_id),  # type: ignore[arg-type]
            ),
            "replicas": replicas,
            "coscheduling": coscheduling,
            "priority_band": band,
            "max_retries_failure": execution.max_retries,
            "timeout": Duration.from_seconds(execution.timeout_minutes * 60),
        }

    def describe(self, launch_yaml_path: Path, launch: LaunchDocument) -> list[str]:
        target, field = self.target(launch)
        arguments = self.submit_arguments(launch_yaml_path, launch, {}, "<attempt id>")
        spec: ResourceSpec = arguments["resources"]
        device = (f", {launch.execution.allocation.gpus_per_node} x "
                  f"{launch.execution.allocation.accelerator}" if spec.device is not None
                  else ", no accelerator (simulated GPUs)")
        names = launch.execution.env
        return [
            f"executor: iris (controller {target}, from {field})",
            f"job: {arguments['name']}, {arguments['replicas']} replica(s) of {spec.cpu:g} CPUs, "
            f"{spec.memory} memory, {spec.disk} disk{device}; priority band "
            f"{launch.execution.priority}, {launch.execution.max_retries} retries, timeout "
            f"{launch.execution.timeout_minutes * 60} s",
            f"command: {shell_command(tuple(arguments['entrypoint'].command))} "
            f"(the launch YAML travels in the job spec as {LAUNCH_YAML})",
            "install: " + (", ".join(arguments["environment"].pip_packages)
                           or "nothing beyond the workspace (the runtime ships inside rlaunch)"),
            f"job env: {ATTEMPT_ENV}=<attempt id>"
            + "".join(f", {name}={value}" for name, value in job_settings().items())
            + (f", credentials {', '.join(names)} (values from this environment)"
               if names else ""),
        ]

    def submit(
        self,
        launch_yaml_path: Path,
        launch: LaunchDocument,
        *,
        env: Mapping[str, str],
        attempt_id: str,
    ) -> Submission:
        target, field = self.target(launch)
        arguments = self.submit_arguments(launch_yaml_path, launch, env, attempt_id)
        _, client = self._client(target, field)
        try:
            # A first Ctrl-C waits for the controller's answer: a job it made is then recorded
            # and stopped, never left running unseen (rlaunch.interrupts).
            with interrupts_deferred():
                job = client.submit(**arguments)
        except (ConnectError, ValueError) as err:
            raise ExecutorError(f"the Iris controller at {target} refused the job: {err}") from None
        return Submission(
            executor=self.name,
            submission_id=job.job_id.to_wire(),
            address=target,
            attempt_id=attempt_id,
            submitted_at=utc_now(),
            entrypoint=tuple(arguments["entrypoint"].command),
        )

    def _job(self, submission: Submission) -> tuple[RemoteClusterClient, IrisClient, JobName]:
        if not submission.address:
            raise ExecutorError(f"submission {submission.submission_id} names no Iris controller")
        cluster, client = self._client(submission.address, "the submission record")
        return cluster, client, JobName.from_wire(submission.submission_id)

    @staticmethod
    def _ask(submission: Submission, what: str, call: Callable[[], T]) -> T:
        """One call about the job: a job the controller does not know is lost (JobLost), any
        other refusal an ExecutorError saying `what` was asked."""
        try:
            return call()
        except ConnectError as err:
            if err.code == Code.NOT_FOUND:
                raise JobLost(
                    f"the Iris controller at {submission.address} does not know job "
                    f"{submission.submission_id} (a local controller forgets its jobs when it "
                    f"stops). The job's output is in the run's "
                    f"attempts/{submission.attempt_id}/job.log"
                ) from None
            raise ExecutorError(
                f"the Iris controller at {submission.address} did not {what} job "
                f"{submission.submission_id}: {err}"
            ) from None

    def status(self, submission: Submission) -> AttemptStatus:
        _, client, job = self._job(submission)
        state = int(self._ask(submission, "say where", lambda: client.job_state(job)))
        if state not in _STATES:
            raise ExecutorError(
                f"the Iris controller answered state {job_pb2.JobState.Name(state)} for job "
                f"{submission.submission_id}; expected one of "
                f"{', '.join(job_pb2.JobState.Name(known) for known in _STATES)}"
            )
        return _STATES[state]

    def logs(self, submission: Submission, follow: bool) -> Iterator[str]:
        """The job's output from Iris's log store, every replica's; with several replicas each
        line names its task (`[task 1] ...`)."""
        cluster, client, job = self._job(submission)
        replicas = self._ask(submission, "describe", lambda: client.status(job)).task_count
        source, scope = build_log_source(job)
        cursor = 0
        while True:
            finished = not follow or self.status(submission).is_terminal()
            while True:  # everything logged so far, in pages
                page = self._ask(submission, "give the logs of", lambda: cluster.fetch_logs(
                    source, match_scope=scope, cursor=cursor))
                for entry in page.entries:
                    task = entry.key[len(source):].split(":", 1)[0]
                    prefix = f"[task {task}] " if replicas > 1 else ""
                    yield f"{prefix}{entry.data}\n"
                if page.cursor <= cursor or not page.entries:
                    break
                cursor = page.cursor
            if finished:
                return
            time.sleep(_LOG_POLL_S)

    def stop(self, submission: Submission) -> None:
        _, client, job = self._job(submission)
        self._ask(submission, "stop", lambda: client.terminate(job))

    def close(self) -> None:
        for connection, cluster, _ in self._connections.values():
            cluster.shutdown(wait=False)
            connection.close()
        self._connections.clear()
