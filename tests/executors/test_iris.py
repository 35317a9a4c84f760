"""The iris executor against a real local Iris controller (tests/irisserver.py).

What Iris does with a submission is read back from Iris itself: its job status (replicas,
resources, state) and its log store. The jobs run the echo runtime (tests/executors/echo),
importable because local Iris tasks run in the controller's environment.
"""

from __future__ import annotations

import getpass
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from iris.cli.job import build_job_summary
from iris.client import IrisClient
from iris.cluster.types import JobName
from iris.rpc import job_pb2

from executors.helpers import rendered
from executors.support import ECHO_DIR, SRC, wait_gone
from irisserver import Controller, free_port, start_controller
from rlaunch.executors import ExecutorError, JobLost, Submission
from rlaunch.executors.iris import IrisExecutor
from rlaunch.render import LaunchDocument
from rlaunch.status import AttemptStatus

SECRET_NAME = "RLAUNCH_IRIS_TEST_SECRET"
# Made at run time: a value written in this file would be in every copy of it (the workspace
# bundle Iris ships to its workers holds this checkout's files).
SECRET = f"iris-credential-{secrets.token_hex(8)}"
UNLISTED = f"hf_unlisted_{secrets.token_hex(8)}"


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Controller]:
    started = start_controller(tmp_path_factory.mktemp("iris"), pythonpath=[SRC, ECHO_DIR])
    try:
        yield started
    finally:
        started.stop()
    assert started.process.returncode is not None


def iris_launch(tmp: Path, controller: Controller, **options) -> tuple[Path, LaunchDocument]:
    """The echo spec for executor iris at the controller, priority band interactive."""
    path, launch = rendered(tmp, executor="iris", **options)
    data = launch.to_dict()
    data["execution"].update(address=controller.url, priority="interactive")
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path, LaunchDocument.parse(data, str(path))


def wait_terminal(executor: IrisExecutor, submission: Submission, timeout_s: float = 300
                  ) -> AttemptStatus:
    deadline = time.monotonic() + timeout_s
    while not (status := executor.status(submission)).is_terminal():
        assert time.monotonic() < deadline, f"{submission.submission_id} still {status}"
        time.sleep(0.5)
    return status


def iris_view(controller: Controller, submission: Submission) -> tuple[dict, job_pb2.AttemptStatus]:
    """Iris's own job summary (`iris job summary --json`) and status of the submission."""
    client = IrisClient.remote(controller.url)
    job = JobName.from_wire(submission.submission_id)
    status = client.status(job)
    return build_job_summary(status, client.list_tasks(job)), status


def test_a_job_runs_to_succeeded_with_its_launch_yaml_in_the_job_spec(
    tmp_path: Path, controller: Controller,
) -> None:
    path, launch = iris_launch(tmp_path, controller)
    with IrisExecutor() as executor:
        submission = executor.submit(path, launch, env={}, attempt_id="a1")
        assert submission.submission_id == f"/{getpass.getuser()}/rlaunch-echo-run-dev-a1"
        assert submission.address == controller.url
        assert submission.entrypoint == (
            "bash", "-c", 'exec "$IRIS_PYTHON" -m "$0" "$IRIS_WORKDIR/launch.yaml" "$@"',
            "rlaunch_echo_runtime",
        )
        output = "".join(executor.logs(submission, follow=True))
        assert executor.status(submission) == AttemptStatus.SUCCEEDED
    assert "echo-runtime: run echo-run@dev fingerprint" in output
    assert "echo-runtime: executor iris allocation 1x1 H100\n" in output
    assert "echo-runtime: attempt a1\n" in output
    assert "echo-runtime: done\n" in output
    summary, status = iris_view(controller, submission)
    assert (summary["state"], summary["task_count"]) == ("succeeded", 1)
    # 2 CPUs asked; Iris gives an accelerator task at least 4 (ResourceSpec.to_proto).
    assert (status.resources.cpu_millicores, status.resources.memory_bytes,
            status.resources.disk_bytes) == (4000, 4 * 1024**3, 10 * 1024**3)
    assert (status.resources.device.gpu.variant, status.resources.device.gpu.count) == ("H100", 1)


def test_two_nodes_of_eight_gpus_are_two_coscheduled_replicas(
    tmp_path: Path, controller: Controller,
) -> None:
    path, launch = iris_launch(tmp_path, controller)
    data = launch.to_dict()
    data["execution"]["allocation"].update(num_nodes=2, gpus_per_node=8, cpus_per_node=4,
                                           memory_gb_per_node=6, disk_gb_per_node=12)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    launch = LaunchDocument.parse(data, str(path))
    with IrisExecutor() as executor:
        described = executor.describe(path, launch)
        submission = executor.submit(path, launch, env={}, attempt_id="a2")
        assert wait_terminal(executor, submission) == AttemptStatus.SUCCEEDED
        output = "".join(executor.logs(submission, follow=False))
    assert described[1] == (
        "job: rlaunch-echo-run-dev-<attempt id>, 2 replica(s) of 4 CPUs, 6g memory, 12g disk, "
        "8 x H100; priority band interactive, 0 retries, timeout 600 s"
    )
    summary, status = iris_view(controller, submission)
    assert (summary["state"], summary["task_count"], summary["completed_count"]) == (
        "succeeded", 2, 2)
    assert [task["state"] for task in summary["tasks"]] == ["succeeded", "succeeded"]
    workers = {task["worker_id"] for task in summary["tasks"]}
    assert len(workers) == 2 and all(worker.startswith("worker-iris-h100-") for worker in workers)
    assert (status.resources.device.gpu.variant, status.resources.device.gpu.count) == ("H100", 8)
    assert (status.resources.cpu_millicores, status.resources.memory_bytes,
            status.resources.disk_bytes) == (4000, 6 * 1024**3, 12 * 1024**3)
    assert "[task 0] echo-runtime: executor iris allocation 2x8 H100\n" in output
    assert "[task 1] echo-runtime: executor iris allocation 2x8 H100\n" in output


def test_a_failing_job_is_failed(tmp_path: Path, controller: Controller) -> None:
    path, launch = iris_launch(tmp_path, controller, name="echo-fail")
    with IrisExecutor() as executor:
        submission = executor.submit(path, launch, env={}, attempt_id="a3")
        assert wait_terminal(executor, submission) == AttemptStatus.FAILED
        output = "".join(executor.logs(submission, follow=False))
    assert "echo-runtime: failing as asked\n" in output
    summary, _ = iris_view(controller, submission)
    assert (summary["state"], summary["tasks"][0]["exit_code"]) == ("failed", 1)


def _job_processes(*markers: str) -> list[int]:
    """Processes whose command line holds every marker (other checkouts' tests may run the
    echo runtime too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if all(marker.encode() in command for marker in markers):
                found.append(int(entry.name))
    return found


def _arguments_holding(value: str) -> list[str]:
    holding = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if value.encode() in (entry / "cmdline").read_bytes():
                    holding.append(entry.name)
            except OSError:
                continue
    return holding


def _files_holding(folders: list[Path], value: str) -> set[Path]:
    """Files under `folders` holding `value` (os.walk: the workers remove working directories
    while it reads)."""
    holding = set()
    for folder in folders:
        for root, _, names in os.walk(folder):
            for name in names:
                path = Path(root) / name
                try:
                    if path.is_file() and value.encode() in path.read_bytes():
                        holding.add(path)
                except OSError:
                    continue
    return holding


def test_a_credential_reaches_the_job_environment_only_and_a_job_stops_mid_run(
    tmp_path: Path, controller: Controller, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Iris forwards HF_TOKEN from the submitting process unless told otherwise: not listed here,
    # so it must not reach the job.
    monkeypatch.setenv("HF_TOKEN", UNLISTED)
    path, launch = iris_launch(tmp_path, controller, name="echo-wait", credentials=[SECRET_NAME])
    with IrisExecutor() as executor:
        submission = executor.submit(path, launch, env={SECRET_NAME: SECRET}, attempt_id="a4")
        # The job waits (up to 120 s) for a release that never comes: find its process (the
        # runtime's, with the launch YAML in a working directory of this controller's).
        deadline = time.monotonic() + 100
        while not (jobs := _job_processes("rlaunch_echo_runtime", str(controller.tmp))):
            assert time.monotonic() < deadline, executor.status(submission)
            time.sleep(0.2)
        environments = [Path(f"/proc/{pid}/environ").read_bytes() for pid in jobs]
        assert any(f"{SECRET_NAME}={SECRET}".encode() in env for env in environments)
        assert not any(UNLISTED.encode() in env for env in environments)
        assert _arguments_holding(SECRET) == []
        # Stopped mid-run, while it waits (its output is not waited for: tests/irisserver.py).
        assert executor.status(submission) == AttemptStatus.RUNNING
        executor.stop(submission)
        assert wait_terminal(executor, submission, timeout_s=120) == AttemptStatus.STOPPED
    assert wait_gone(set(jobs)) == set()
    summary, _ = iris_view(controller, submission)
    assert summary["state"] == "killed"
    assert SECRET not in submission.to_json() + controller.output()
    assert UNLISTED not in controller.output()
    # Iris keeps a job's environment in its controller's database (sqlite, under the
    # controller's temp dir): the one place the value is on disk. Nothing else holds it.
    holding = _files_holding([tmp_path, controller.home, controller.tmp], SECRET)
    assert holding and {path.name.split(".")[0] for path in holding} == {"controller"}, holding
    assert _files_holding([tmp_path, controller.home, controller.tmp], UNLISTED) == set()


def test_describe_says_what_is_submitted_and_names_credentials_only(
    tmp_path: Path, controller: Controller,
) -> None:
    path, launch = iris_launch(tmp_path, controller, credentials=["HF_TOKEN", "WANDB_API_KEY"])
    assert IrisExecutor().describe(path, launch) == [
        f"executor: iris (controller {controller.url}, from execution.address)",
        "job: rlaunch-echo-run-dev-<attempt id>, 1 replica(s) of 2 CPUs, 4g memory, 10g disk, "
        "1 x H100; priority band interactive, 0 retries, timeout 600 s",
        "command: bash -c 'exec \"$IRIS_PYTHON\" -m \"$0\" \"$IRIS_WORKDIR/launch.yaml\" \"$@\"' "
        "rlaunch_echo_runtime (the launch YAML travels in the job spec as launch.yaml)",
        "install: nothing beyond the workspace (the runtime ships inside rlaunch)",
        "job env: RLAUNCH_ATTEMPT_ID=<attempt id>, credentials HF_TOKEN, WANDB_API_KEY "
        "(values from this environment)",
    ]


def test_an_unreachable_controller_is_an_error_naming_it(tmp_path: Path,
                                                         controller: Controller) -> None:
    path, launch = iris_launch(tmp_path, controller)
    data = launch.to_dict()
    url = f"http://127.0.0.1:{free_port()}"
    data["execution"]["address"] = url
    launch = LaunchDocument.parse(data, str(path))
    with pytest.raises(ExecutorError) as caught, IrisExecutor() as executor:
        executor.submit(path, launch, env={}, attempt_id="a5")
    message = str(caught.value)
    assert message.startswith(f"the Iris controller at {url} (execution.address) did not answer "
                              "within 10 s (")
    assert message.endswith(f"check that it runs: `iris --controller-url {url} job list`")


def test_a_cluster_config_names_its_local_controller(tmp_path: Path,
                                                     controller: Controller) -> None:
    path, launch = iris_launch(tmp_path, controller)
    data = launch.to_dict()
    data["execution"].update(address=None, cluster=str(controller.config))
    launch = LaunchDocument.parse(data, str(path))
    with IrisExecutor() as executor:
        submission = executor.submit(path, launch, env={}, attempt_id="a6")
        assert submission.address == str(controller.config)
        assert wait_terminal(executor, submission) == AttemptStatus.SUCCEEDED
    automatic = tmp_path / "auto.yaml"
    automatic.write_text(controller.config.read_text().replace(
        f"port: {controller.url.rsplit(':', 1)[1]}", "port: 0"))
    data["execution"]["cluster"] = str(automatic)
    with pytest.raises(ExecutorError) as caught:
        IrisExecutor().submit(path, LaunchDocument.parse(data, str(path)), env={},
                              attempt_id="a7")
    assert str(caught.value) == (
        f"Iris cluster config {automatic} (execution.cluster) runs its controller locally on an "
        f"automatic port (controller.local.port 0), which rlaunch cannot find: set "
        f"controller.local.port, start it with `iris --config {automatic} cluster start`, or set "
        f"execution.address to the URL that command prints"
    )


def test_a_priority_that_is_not_an_iris_band_is_refused(tmp_path: Path,
                                                        controller: Controller) -> None:
    path, launch = iris_launch(tmp_path, controller)
    data = launch.to_dict()
    data["execution"]["priority"] = "high"
    with pytest.raises(ExecutorError) as caught:
        IrisExecutor().describe(path, LaunchDocument.parse(data, str(path)))
    assert str(caught.value) == (
        "execution.priority 'high' is not an Iris priority band; set it to one of production, "
        "interactive, batch"
    )
    assert os.environ.get(SECRET_NAME) is None


def test_a_job_the_controller_does_not_know_is_lost(controller: Controller) -> None:
    submission = Submission(executor="iris", submission_id="/nobody/rlaunch-gone-dev-a8",
                            address=controller.url, attempt_id="a8",
                            submitted_at="2026-12-01T00:00:00Z", entrypoint=("bash",))
    with pytest.raises(JobLost) as caught, IrisExecutor() as executor:
        executor.status(submission)
    assert str(caught.value) == (
        f"the Iris controller at {controller.url} does not know job /nobody/rlaunch-gone-dev-a8 "
        f"(a local controller forgets its jobs when it stops). The job's output is in the run's "
        f"attempts/a8/job.log"
    )
