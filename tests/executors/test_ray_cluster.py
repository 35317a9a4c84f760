"""The ray executor against a second, independent Ray head started here; and the refusals for
addresses that do not answer and clusters too small for the plan."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from executors.helpers import allocation, edited, rendered
from executors.support import ECHO_DIR, SRC, HeadWatch
from rlaunch.executors import ExecutorError, ExecutorOptions, JobStatus
from rlaunch.executors.follow import wait_terminal
from rlaunch.executors.local_head import start_head
from rlaunch.executors.ray_cluster import RayClusterExecutor

ALLOCATION = allocation()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Jobs API address of a Ray head that no executor owns (a stand-in remote cluster)."""
    watch = HeadWatch(tmp_path_factory.mktemp("cluster-head"))
    record = start_head(ALLOCATION, watch.state_dir, lambda message: None)
    watch.snapshot()
    yield record.dashboard_url
    watch.finish()


@pytest.fixture(autouse=True)
def _job_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", f"{SRC}{os.pathsep}{ECHO_DIR}")


def ray_executor(timeout_s: float = 10.0) -> RayClusterExecutor:
    return RayClusterExecutor(ExecutorOptions(connect_timeout_s=timeout_s, say=lambda m: None))


def test_the_yaml_travels_as_the_working_dir(cluster: str, tmp_path: Path) -> None:
    path, launch = rendered(tmp_path, executor="ray", address=cluster, credentials=["TOK"])
    executor = ray_executor()
    submission = executor.submit(path, launch, env={"TOK": "abcdef"}, attempt_id="r1")
    assert submission.executor == "ray"
    assert submission.address == cluster
    assert submission.entrypoint == (sys.executable, "-m", "rlaunch_echo_runtime", "launch.yaml")
    text = "".join(executor.logs(submission, follow=True))
    assert "echo-runtime: cwd-relative yaml launch.yaml" in text
    assert "echo-runtime: run echo-run@dev" in text
    assert "echo-runtime: credential TOK present, 6 chars" in text
    # Another executor instance finds the job from the submission record alone.
    assert wait_terminal(ray_executor(), submission, 30) == JobStatus.SUCCEEDED
    assert "echo-runtime: done" in "".join(ray_executor().logs(submission, follow=False))


def test_a_cluster_without_the_planned_gpus_is_refused_before_submitting(
    cluster: str, tmp_path: Path
) -> None:
    path, launch = rendered(tmp_path, executor="ray", address=cluster)
    launch = edited(launch, num_nodes=2, gpus_per_node=8)
    with pytest.raises(ExecutorError) as caught:
        ray_executor().submit(path, launch, env={}, attempt_id="r2")
    assert str(caught.value) == (
        f"the Ray cluster at {cluster} cannot hold execution.allocation: the plan needs "
        "2 node(s) x 8 GPU = 16, the cluster has 1 alive node(s) with GPU per node [1] (total 1), "
        "of which 0 have 8 or more. Use a cluster that has them (check with `ray status` on its "
        "head) or change execution.allocation and the role plan together"
    )
    # Checked before submitting: the cluster never saw the job.
    with urllib.request.urlopen(f"{cluster}/api/jobs/", timeout=30) as response:
        submitted = [job["submission_id"] for job in json.loads(response.read())]
    assert not [job for job in submitted if job.endswith("-r2")], submitted


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_address_nobody_listens_on_is_named_with_the_timeout(tmp_path: Path) -> None:
    address = f"http://127.0.0.1:{_free_port()}"
    path, launch = rendered(tmp_path, executor="ray", address=address)
    with pytest.raises(ExecutorError) as caught:
        ray_executor(timeout_s=2).submit(path, launch, env={}, attempt_id="r3")
    message = str(caught.value)
    assert message.startswith(f"the Ray Jobs API at {address} did not answer within 2 s (")
    assert "Connection refused" in message
    assert f"`curl {address}/api/version` must print the Ray version" in message


def test_an_address_that_never_answers_times_out(tmp_path: Path) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts connections into the backlog, never answers
        address = f"http://127.0.0.1:{silent.getsockname()[1]}"
        path, launch = rendered(tmp_path, executor="ray", address=address)
        with pytest.raises(ExecutorError) as caught:
            ray_executor(timeout_s=1).submit(path, launch, env={}, attempt_id="r4")
    assert str(caught.value).startswith(
        f"the Ray Jobs API at {address} did not answer within 1 s (timed out)"
    )


def test_an_address_that_is_not_a_jobs_api_url_is_refused(tmp_path: Path) -> None:
    path, launch = rendered(tmp_path, executor="ray", address="127.0.0.1:6379")
    with pytest.raises(ExecutorError) as caught:
        ray_executor().submit(path, launch, env={}, attempt_id="r5")
    assert str(caught.value) == (
        "execution.address '127.0.0.1:6379' is not a Ray Jobs API URL; use the dashboard "
        "address, e.g. http://127.0.0.1:8265"
    )


def test_describe_names_the_address_and_the_shipped_yaml(tmp_path: Path) -> None:
    path, launch = rendered(tmp_path, executor="ray", address="http://10.0.0.5:8265")
    lines = ray_executor().describe(path, launch)
    assert lines[0] == (
        "executor: ray (Jobs API at http://10.0.0.5:8265; the cluster must have 1 node(s) x 1 GPUs)"
    )
    # A remote cluster runs its own `python`, with the pinned runtime installed there.
    assert lines[2] == "entrypoint: python -m rlaunch_echo_runtime launch.yaml"


class _Unauthorized(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        self.send_response(401)
        self.end_headers()
        self.wfile.write(b"Unauthorized")

    def log_message(self, *args: object) -> None:
        pass


def test_a_cluster_with_token_auth_names_the_variables_to_set(tmp_path: Path) -> None:
    server = HTTPServer(("127.0.0.1", 0), _Unauthorized)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        address = f"http://127.0.0.1:{server.server_address[1]}"
        path, launch = rendered(tmp_path, executor="ray", address=address)
        with pytest.raises(ExecutorError) as caught:
            ray_executor().submit(path, launch, env={}, attempt_id="r6")
    finally:
        server.shutdown()
    assert str(caught.value) == (
        f"the Ray cluster at {address} refused rlaunch's request (HTTP 401, no token): it uses "
        "token authentication; set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or "
        "RAY_AUTH_TOKEN_PATH) in the launching environment (`ray get-auth-token` on the cluster "
        "prints it)"
    )
