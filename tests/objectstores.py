"""Real object-store servers for the tests: moto's S3 server and a GCS emulator on 127.0.0.1.

Each server is a child process in its own process group, on a free port, stopped by its process
group id at teardown (never by name). The store reaches them through fsspec's real backends
(s3fs, gcsfs) configured by environment variables, so the same settings work in this process,
in `./pants` and in a Ray job:

    with S3Server.start() as s3:            # or the `s3_server` / `s3_store` fixtures
        env = s3.env()                      # AWS_ENDPOINT_URL, keys, region
        bucket = s3.bucket()                # a fresh bucket name, created on the server

Run as a script (`python -m tests.objectstores s3|gcs`), it starts one server, prints one JSON line
with its environment and prefix, and keeps it running until killed: benchmarks use that.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import fsspec.config
import gcsfs.core

# The runtime's bin folder holds moto_server and gcp-storage-emulator (same venv as this python).
_BIN = Path(sys.executable).parent
_START_TIMEOUT_SECONDS = 60.0
_STOP_TIMEOUT_SECONDS = 10.0


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_until_answering(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"{url} exited with {process.returncode} while starting; its log:\n"
                f"{log.read_text(errors='replace')}"
            )
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # It answers: an error status is still an answer.
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {_START_TIMEOUT_SECONDS:.0f} s; log: {log}")


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's own process group (its pgid is its pid), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=_STOP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


# Runs before the server's own code: asks Linux to SIGTERM it when the test process dies
# (PR_SET_PDEATHSIG, kept across exec), then becomes the server. The server has a session of its
# own, so a kill of the test run's process group does not reach it; without this, a test run
# killed by a timeout or kill -9 left its servers running. If the test process is already gone,
# the server is not started.
_DIE_WITH_PARENT = """
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
os.execv(sys.argv[2], sys.argv[2:])
"""


def _spawn(argv: list[str], log: Path, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **env},
        )


def plain_gcsfs() -> type[fsspec.AbstractFileSystem]:
    """gcsfs's plain HTTP filesystem. gcsfs picks, at import, an experimental subclass that also
    talks gRPC (TLS) to the endpoint for bucket layouts; the emulator speaks only the JSON API,
    and that gRPC call hangs. Child processes get GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false."""
    return gcsfs.core.GCSFileSystem


def clear_fsspec_instances() -> None:
    """fsspec caches filesystem instances by their arguments, not by the environment: drop them
    so a new endpoint (another server, another port) is used."""
    for protocol in ("s3", "gs", "gcs"):
        fsspec.get_filesystem_class(protocol).clear_instance_cache()
    plain_gcsfs().clear_instance_cache()


@dataclass
class ObjectStoreServer:
    """One running server: its scheme, endpoint, process and the environment that reaches it."""

    scheme: str
    endpoint: str
    process: subprocess.Popen[bytes]
    log: Path
    _env: dict[str, str] = field(default_factory=dict)
    # fsspec reads FSSPEC_* variables once, at import; in this process they go into its config.
    _fsspec_conf: dict[str, dict[str, str]] = field(default_factory=dict)
    # Explicit fsspec options that reach the server whatever the environment says.
    _options: dict[str, Any] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        """Environment variables for a child process (./pants, a Ray job) to reach the server."""
        return dict(self._env)

    def fsspec_conf(self) -> dict[str, dict[str, str]]:
        return {protocol: dict(values) for protocol, values in self._fsspec_conf.items()}

    def storage_options(self) -> dict[str, Any]:
        """fsspec options (`fsspec.filesystem(scheme, **options)`) that reach the server."""
        return json.loads(json.dumps(self._options))

    def filesystem(self) -> fsspec.AbstractFileSystem:
        """A filesystem on this server, whatever this process's environment says."""
        cls = plain_gcsfs() if self.scheme == "gs" else fsspec.get_filesystem_class(self.scheme)
        return cls(skip_instance_cache=True, **self._options)

    def bucket(self, prefix: str = "rlaunch-test") -> str:
        """Create a fresh, empty bucket on the server and return its name."""
        name = f"{prefix}-{secrets.token_hex(4)}"
        self.filesystem().mkdir(name)
        return name

    def prefix(self, path: str = "store") -> str:
        """A store prefix `scheme://<fresh bucket>/<path>`."""
        return f"{self.scheme}://{self.bucket()}/{path}"

    @contextmanager
    def applied(self) -> Iterator[None]:
        """This process's environment and fsspec config point at the server, then are restored."""
        saved_env = {name: os.environ.get(name) for name in self._env}
        saved_conf = {p: fsspec.config.conf.get(p) for p in self._fsspec_conf}
        saved_registry = {p: fsspec.get_filesystem_class(p) for p in ("gs", "gcs")}
        os.environ.update(self._env)
        for protocol, values in self._fsspec_conf.items():
            fsspec.config.conf[protocol] = {**(saved_conf[protocol] or {}), **values}
        if self.scheme == "gs":
            for protocol in saved_registry:
                fsspec.register_implementation(protocol, plain_gcsfs(), clobber=True)
        clear_fsspec_instances()
        try:
            yield
        finally:
            for protocol, cls in saved_registry.items():
                fsspec.register_implementation(protocol, cls, clobber=True)
            for name, value in saved_env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            for protocol, previous in saved_conf.items():
                if previous is None:
                    fsspec.config.conf.pop(protocol, None)
                else:
                    fsspec.config.conf[protocol] = previous
            clear_fsspec_instances()

    def stop(self) -> None:
        _stop_group(self.process)

    def pointed_at(self, endpoint: str) -> ObjectStoreServer:
        """The same settings with `endpoint` in place of this server's: a client of it asks
        `endpoint` instead (a stopped server's port, a host that never answers)."""
        def moved(value: Any) -> Any:
            return json.loads(json.dumps(value).replace(self.endpoint, endpoint))

        return ObjectStoreServer(self.scheme, endpoint, self.process, self.log,
                                 moved(self._env), moved(self._fsspec_conf), moved(self._options))


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """`http://127.0.0.1:<port>`: a host that takes connections and never answers, as a server
    behind a firewall that drops replies looks to a client. Closed when the block ends."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            held.append(connection)  # read nothing, answer nothing

    thread = threading.Thread(target=hold, name="silent-endpoint", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        listener.close()


def start_s3(logs: Path, *, refuse_every_key: bool = False) -> ObjectStoreServer:
    """moto's S3 server (`moto_server`), with fixed test credentials. `refuse_every_key`: moto
    checks every request's key against its IAM (INITIAL_NO_AUTH_ACTION_COUNT=0), where the
    test credentials do not exist, so it answers every request with access denied."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = logs / f"moto-s3-{port}.log"
    auth = {"INITIAL_NO_AUTH_ACTION_COUNT": "0"} if refuse_every_key else {}
    process = _spawn([str(_BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)], log, auth)
    try:
        _wait_until_answering(endpoint + "/moto-api/", process, log)
    except BaseException:
        _stop_group(process)
        raise
    env = {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        # No ~/.aws lookups, no instance-metadata probing: only the server above is asked.
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/dev/null",
        "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
    }
    options = {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
    }
    return ObjectStoreServer("s3", endpoint, process, log, env, {}, options)


def start_gcs(logs: Path) -> ObjectStoreServer:
    """gcp-storage-emulator, in memory. gcsfs finds it through STORAGE_EMULATOR_HOST; the token is
    `anon` so that no credential lookup (or metadata-server probe) happens."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = logs / f"gcs-emulator-{port}.log"
    argv = [
        str(_BIN / "gcp-storage-emulator"),
        "start",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--in-memory",
    ]
    process = _spawn(argv, log, {})
    try:
        _wait_until_answering(endpoint + "/storage/v1/b", process, log)
    except BaseException:
        _stop_group(process)
        raise
    conf = {"gs": {"token": "anon"}}
    env = {
        "STORAGE_EMULATOR_HOST": endpoint,
        "FSSPEC_GS": json.dumps(conf["gs"]),
        "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false",
    }
    options = {"endpoint_url": endpoint, "token": "anon"}
    return ObjectStoreServer("gs", endpoint, process, log, env, conf, options)


STARTERS = {"s3": start_s3, "gs": start_gcs}


@contextmanager
def running(scheme: str, logs: Path) -> Iterator[ObjectStoreServer]:
    server = STARTERS[scheme](logs)
    try:
        yield server
    finally:
        server.stop()


def _stop_serving(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _serve_forever(scheme: str) -> None:
    logs = Path(os.environ.get("TMPDIR", "/tmp")) / f"rlaunch-objectstores-{os.getpid()}"
    signal.signal(signal.SIGTERM, _stop_serving)
    with running(scheme, logs) as server:
        print(json.dumps({"env": server.env(), "prefix": server.prefix()}), flush=True)
        while True:
            signal.pause()


if __name__ == "__main__":
    _serve_forever(sys.argv[1] if len(sys.argv) > 1 else "s3")
