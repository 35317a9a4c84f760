"""The ray executor against a second, independent Ray head started here; and the refusals for
addresses that do not answer and clusters too small for the plan."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shlex
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from builders.helpers import node, parse
from contract.skyrl_env import contract_python
from executors.helpers import allocation, edited, rendered
from executors.support import ECHO_DIR, SRC, HeadWatch
from executors.test_runtime_python import on_store, skyrl_launch, skyrl_without_store_backends
from objectstores import ObjectStoreServer
from rlaunch.builders import build_artifact
from rlaunch.executors import ExecutorError, ExecutorOptions, jobs_api
from rlaunch.executors.credentials import new_kv_key, payload, wrapped_argv
from rlaunch.executors.follow import wait_terminal
from rlaunch.executors.local_head import HeadRecord, start_head
from rlaunch.executors.ray_cluster import RayClusterExecutor, shipped_package
from rlaunch.status import AttemptStatus

ALLOCATION = allocation()


@pytest.fixture(scope="module")
def cluster_head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeadRecord]:
    """A Ray head that no executor owns (a stand-in remote cluster)."""
    watch = HeadWatch(tmp_path_factory.mktemp("cluster-head"))
    record = start_head(ALLOCATION, watch.state_dir, lambda message: None)
    watch.snapshot()
    yield record
    watch.finish()


@pytest.fixture(scope="module")
def cluster(cluster_head: HeadRecord) -> str:
    """Its Jobs API address."""
    return cluster_head.dashboard_url


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
    assert wait_terminal(ray_executor(), submission, 30) == AttemptStatus.SUCCEEDED
    assert "echo-runtime: done" in "".join(ray_executor().logs(submission, follow=False))


def files_holding(root: Path, value: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]


def test_credentials_reach_the_job_but_no_file_of_the_cluster(
    cluster_head: HeadRecord, cluster: str, tmp_path: Path
) -> None:
    """Issue 13: Ray logs a job's runtime env; the credentials go through a one-time GCS entry
    that the job takes and deletes, so no file under the head's session dir holds them."""
    secret = f"tok-{secrets.token_hex(12)}"
    # The control: a value passed the way the executor used to (runtime env) is on disk.
    leaked = f"leak-{secrets.token_hex(12)}"
    control = f"rlaunch-env-vars-control-{os.getpid()}"
    jobs_api.submit(cluster, entrypoint=f"{sys.executable} -c pass", submission_id=control,
                    env_vars={"TOK": leaked})
    assert jobs_api.wait_terminal(cluster, control, 60) == AttemptStatus.SUCCEEDED
    assert files_holding(Path(cluster_head.temp_dir), leaked), "Ray no longer logs env_vars?"

    path, launch = rendered(tmp_path, executor="ray", address=cluster, credentials=["TOK"])
    submission = ray_executor().submit(path, launch, env={"TOK": secret}, attempt_id="cred")
    assert wait_terminal(ray_executor(), submission, 60) == AttemptStatus.SUCCEEDED
    text = "".join(ray_executor().logs(submission, follow=False))
    digest = hashlib.sha256(secret.encode()).hexdigest()[:12]
    assert f"echo-runtime: credential TOK present, {len(secret)} chars, sha256 {digest}" in text
    assert files_holding(Path(cluster_head.temp_dir), secret) == []
    # Nor do the job's details the Jobs API shows; they name the GCS entry, which is gone.
    with urllib.request.urlopen(f"{cluster}/api/jobs/{submission.submission_id}") as response:
        details = response.read().decode()
    assert secret not in details
    [key] = re.findall(r"ray-kv (gcs://_rlaunch_credentials_[0-9a-f]{32}\.zip) --", details)
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(f"{cluster}/api/packages/gcs/{key.removeprefix('gcs://')}")
    assert gone.value.code == 404


def test_a_job_whose_credentials_were_taken_stops_with_the_reason(cluster: str) -> None:
    """The GCS entry is one-time: a second start of the same command finds nothing and says
    why instead of running without credentials."""
    key = new_kv_key()
    jobs_api.put_package(cluster, key, payload({"TOK": "abcdef"}), 10)
    argv = wrapped_argv("ray-kv", key,
                        [sys.executable, "-c", "import os; print(os.environ['TOK'])"])
    outputs = []
    for run in ("first", "second"):
        job = f"rlaunch-credentials-{run}-{os.getpid()}"
        jobs_api.submit(cluster, entrypoint=shlex.join(argv), submission_id=job,
                        env_vars={"PYTHONPATH": str(SRC)})
        outputs.append((jobs_api.wait_terminal(cluster, job, 60),
                        "".join(jobs_api.logs(cluster, job, False))))
    assert outputs[0][0] == AttemptStatus.SUCCEEDED and "abcdef" in outputs[0][1]
    assert outputs[1][0] == AttemptStatus.FAILED
    assert (f"rlaunch: the job's credentials ({key}) are not in the GCS at ") in outputs[1][1]
    assert "taken by an earlier start of this job, or dropped by Ray" in outputs[1][1]


def test_credentials_no_job_takes_are_dropped_when_their_reference_expires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launcher's GET before the upload gives the entry Ray's temporary reference: a job
    that never starts leaves nothing behind for long (here 3 s instead of the default 600 s,
    on a head of its own)."""
    monkeypatch.setenv("RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S", "3")
    watch = HeadWatch(tmp_path / "head")
    record = start_head(ALLOCATION, watch.state_dir, lambda message: None)
    watch.snapshot()
    try:
        key = new_kv_key()
        url = f"{record.dashboard_url}/api/packages/gcs/{key.removeprefix('gcs://')}"
        jobs_api.put_package(record.dashboard_url, key, payload({"TOK": "abcdef"}), 10)
        with urllib.request.urlopen(url) as response:  # there (and pinned 3 s more)
            assert response.status == 200
        time.sleep(12)
        with pytest.raises(urllib.error.HTTPError) as gone:
            urllib.request.urlopen(url)
        assert gone.value.code == 404
    finally:
        watch.finish()


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
    assert lines[3] == f"shipped: {SRC / 'rlaunch'} (runtime env py_modules)"


def test_rlaunch_travels_with_the_job_to_an_environment_without_it(
    cluster: str, tmp_path: Path
) -> None:
    """The job's environment has no rlaunch (not installed in the venv, not on its PYTHONPATH):
    a job without the shipped package cannot import it; the executor's job can."""
    bare = "rlaunch-bare-import-check"
    jobs_api.submit(cluster, entrypoint=f"{sys.executable} -c 'import rlaunch'",
                    submission_id=bare, env_vars={"PYTHONPATH": str(ECHO_DIR)})
    assert jobs_api.wait_terminal(cluster, bare, 60) == AttemptStatus.FAILED
    assert "No module named 'rlaunch'" in "".join(jobs_api.logs(cluster, bare, False))
    path, launch = rendered(tmp_path, executor="ray", address=cluster)
    submission = ray_executor().submit(path, launch, env={}, attempt_id="shipped")
    assert wait_terminal(ray_executor(), submission, 60) == AttemptStatus.SUCCEEDED
    text = "".join(ray_executor().logs(submission, follow=False))
    assert "echo-runtime: run echo-run@dev" in text
    [line] = [line for line in text.splitlines() if "echo-runtime: rlaunch from " in line]
    # Ray's unpacked copy of the shipped package, not the checkout.
    assert "runtime_resources/py_modules_files" in line and str(SRC) not in line, line


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


STAGE_ON_NODES = (
    "import json, sys; "
    "from rlaunch.runtimes.staging import StageInput; "
    "from rlaunch.runtimes.staging_ray import stage_on_nodes; "
    "staged = stage_on_nodes([StageInput(*json.loads(sys.argv[1]))]); "
    "print('RESULT', json.dumps([e.path for e in staged]), staged[0].bytes_copied)"
)


def test_staging_runs_one_pinned_task_per_alive_node(
    cluster: str, s3_server: ObjectStoreServer, s3_store: str, tmp_path: Path
) -> None:
    """The SkyRL adapter's staging as a Ray job on a real head (rlaunch shipped as py_modules,
    the store's variables in the job's env, which its tasks inherit), from moto's S3 server:
    cold, then warm."""
    result = build_artifact(parse(node("data", tmp_path / "calls")), s3_store,
                            log=lambda message: None)
    item = ["train_data", result.record.identity, result.fingerprint, result.uri]
    env_vars = {**s3_server.env(), "RLAUNCH_NODE_CACHE": str(tmp_path / "node-cache"),
                "PYTHONPATH": str(ECHO_DIR)}
    outputs = []
    for attempt in ("cold", "warm"):
        job = f"rlaunch-staging-{attempt}-{os.getpid()}"
        jobs_api.submit(cluster, entrypoint=shlex.join(
            [sys.executable, "-c", STAGE_ON_NODES, json.dumps(item)]),
            submission_id=job, env_vars=env_vars, py_modules=[shipped_package()])
        status = jobs_api.wait_terminal(cluster, job, 120)
        text = "".join(jobs_api.logs(cluster, job, False))
        assert status == AttemptStatus.SUCCEEDED, text[-3000:]
        outputs.append(text)
    cold, warm = outputs
    digest = result.fingerprint.split(":")[-1]
    folder = tmp_path / "node-cache" / "data" / f"2026.01.01-{digest[:16]}"
    assert "staging 1 inputs on 1 node(s), in parallel" in cold
    # The task's own progress line, from the node it was pinned to, then the driver's.
    assert "staging train_data: data@2026.01.01 copied 2 files" in cold
    assert f"RESULT {json.dumps([str(folder)])} " in cold
    assert f"RESULT {json.dumps([str(folder)])} 0" not in cold
    assert f"RESULT {json.dumps([str(folder)])} 0" in warm and "(0 bytes copied)" in warm
    assert (folder / "_record.json").is_file()


def test_a_clusters_interpreter_without_gcsfs_is_refused_before_submitting(
    cluster: str, tmp_path: Path
) -> None:
    """A remote cluster's `python` is asked by a probe job what the job needs (here the head
    runs it with a SkyRL environment that lacks gcsfs, and with the contract env)."""
    python = skyrl_without_store_backends(tmp_path)
    launch = on_store(skyrl_launch(tmp_path), "gs://rlaunch-bucket/store")
    with pytest.raises(ExecutorError) as caught:
        ray_executor().check_cluster_python(launch, cluster, python, f"probe-{os.getpid()}")
    assert str(caught.value) == (
        f"the job reads and writes gs://rlaunch-bucket/store through gcsfs, fsspec's gs:// "
        f"backend, but the cluster's interpreter `{python}` at {cluster} has no gcsfs "
        f"installed (skyrl 0.3.0 brings s3fs with its skyrl-train extra, and gcsfs with "
        f"none): staging would fail in the job, after the GPUs are allocated. Install gcsfs "
        f"there (pip install gcsfs), or run on a cluster whose `{python}` is an environment "
        f"that has it"
    )
    ray_executor().check_cluster_python(launch, cluster, contract_python(),
                                        f"probe-ok-{os.getpid()}")


class StreamCutter:
    """A TCP relay on 127.0.0.1 in front of a Ray dashboard that passes every connection through,
    except a job's log stream: that one gets the head's answer to the WebSocket upgrade, then a
    normal close frame (1000), as the head sends when its own `tail_job_logs` returns early. Ray's
    client, head and job are the real ones; only that early end is made here."""

    CLOSE_NORMAL = b"\x88\x02\x03\xe8"  # FIN + close opcode, 2 bytes of payload: code 1000

    def __init__(self, dashboard_url: str) -> None:
        host, port = dashboard_url.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.cut = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        with client, socket.create_connection(self.upstream) as server:
            request = client.recv(65536)
            server.sendall(request)
            if b"/logs/tail" not in request.split(b"\r\n", 1)[0]:
                threading.Thread(target=_pipe, args=(server, client), daemon=True).start()
                _pipe(client, server)
                return
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += server.recv(65536)
            client.sendall(answer.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n" + self.CLOSE_NORMAL)
            self.cut += 1
            client.recv(64)  # the client's own close frame

    def close(self) -> None:
        self.listener.close()


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def test_a_log_stream_ray_ends_early_still_gives_the_whole_output(cluster: str) -> None:
    """Ray's head ends a job's log stream with a normal close when the job's supervisor had not
    started (`JobHead.tail_job_logs`) or its own socket to the node's agent closed, and Ray's
    client then ends the stream as if the job were done: the follow reads the full log until the
    job ends instead."""
    cutter = StreamCutter(cluster)
    job = f"rlaunch-ended-stream-{os.getpid()}"
    code = "import time; print('first', flush=True); time.sleep(4); print('last', flush=True)"
    try:
        jobs_api.submit(cluster, entrypoint=shlex.join([sys.executable, "-c", code]),
                        submission_id=job, env_vars={})
        text = "".join(jobs_api.logs(cutter.url, job, follow=True))
    finally:
        cutter.close()
    assert cutter.cut == 1
    assert jobs_api.status(cluster, job) == AttemptStatus.SUCCEEDED
    # Ray's own line ("Running entrypoint ...") may come before or after the job's first one:
    # the supervisor's write is buffered until the job has started.
    assert text == "".join(jobs_api.logs(cluster, job, False))
    assert [line for line in text.splitlines() if line in ("first", "last")] == ["first", "last"]
