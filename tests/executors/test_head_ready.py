"""Waiting for a local Ray head to be ready: one configurable deadline, progress, and a failure
that names the step it waited for and keeps the head's logs. The readiness of a real head is
proven by every test that starts one (test_local.py asserts its "ready" message)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from executors.helpers import allocation
from executors.support import HeadWatch
from rlaunch.executors import ExecutorError, head_ready
from rlaunch.executors.head_ready import (
    START_TIMEOUT_ENV,
    HeadEndpoints,
    HeadNotReady,
    start_timeout_s,
    wait_ready,
)
from rlaunch.executors.local_head import FAILED_START_LOGS, read_record, start_head


def test_the_deadline_defaults_to_120_s_and_is_configurable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(START_TIMEOUT_ENV, raising=False)
    assert start_timeout_s() == 120.0
    monkeypatch.setenv(START_TIMEOUT_ENV, "300")
    assert start_timeout_s() == 300.0
    monkeypatch.setenv(START_TIMEOUT_ENV, " 2.5 ")
    assert start_timeout_s() == 2.5


@pytest.mark.parametrize("raw", ["soon", "0", "-5", "nan", "inf"])
def test_a_deadline_that_is_not_a_positive_number_is_refused(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(START_TIMEOUT_ENV, raw)
    with pytest.raises(ExecutorError) as caught:
        start_timeout_s()
    assert str(caught.value) == (
        f"RLAUNCH_HEAD_START_TIMEOUT={raw!r} is not a positive number of seconds; set it to e.g. "
        "300 (a slow or loaded machine) or unset it (default 120 s)"
    )


class _SickAgent(BaseHTTPRequestHandler):
    """A job agent whose GCS check fails, as Ray's `/api/healthz` reports it."""

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        self.send_response(503)
        self.end_headers()
        self.wfile.write(b"raylet: success\ngcs: GCS health check failed.")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def sick_agent() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _SickAgent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _exited(code: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-c", f"raise SystemExit({code})"])
    process.wait()
    return process


def test_the_failure_names_the_step_waited_for_and_its_last_answer(
    sick_agent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(head_ready, "_PROGRESS_EVERY_S", 0.3)
    said: list[str] = []
    endpoints = HeadEndpoints(agent_url=sick_agent, dashboard_url="http://127.0.0.1:9")
    with pytest.raises(HeadNotReady) as caught:
        wait_ready(_exited(0), endpoints, timeout_s=1.0, head_alive=lambda: True,
                   say=said.append)
    step = (f"the head's job agent to report its raylet and the GCS healthy "
            f"({sick_agent}/api/healthz)")
    assert str(caught.value) == (
        f"the local Ray head was not ready within 1 s (RLAUNCH_HEAD_START_TIMEOUT): still "
        f"waiting for {step} (last answer: {sick_agent}/api/healthz answered HTTP 503 "
        f"(raylet: success, gcs: GCS health check failed.))"
    )
    assert (caught.value.waited_for, caught.value.exit_code) == (step, 0)
    assert said and said[0].startswith("rlaunch: still waiting for the local Ray head (")
    assert said[0].endswith(f" s of 1 s): {step}")


def test_ray_start_failing_or_the_head_dying_ends_the_wait_at_once() -> None:
    endpoints = HeadEndpoints("http://127.0.0.1:9", "http://127.0.0.1:9")
    with pytest.raises(HeadNotReady) as caught:
        wait_ready(_exited(3), endpoints, timeout_s=60, head_alive=lambda: True,
                   say=lambda m: None)
    assert str(caught.value) == (
        "the local Ray head did not start: `ray start` exited with code 3"
    )
    with pytest.raises(HeadNotReady) as caught:
        wait_ready(_exited(0), endpoints, timeout_s=60, head_alive=lambda: False,
                   say=lambda m: None)
    assert str(caught.value) == (
        "the local Ray head's processes exited while rlaunch waited for the head's job agent to "
        "report its raylet and the GCS healthy (http://127.0.0.1:9/api/healthz)"
    )


def test_a_real_head_not_ready_in_time_is_stopped_and_its_logs_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch = HeadWatch(tmp_path / "heads")
    monkeypatch.setenv(START_TIMEOUT_ENV, "0.5")
    said: list[str] = []
    try:
        with pytest.raises(ExecutorError) as caught:
            start_head(allocation(), watch.state_dir, said.append)
    finally:
        # The record is gone with the head: its processes are found by its temp dir.
        temp_dir = said[0].rsplit("temp dir ", 1)[1].rstrip(")")
        watch.temp_dirs.add(temp_dir)
        watch.finish()
    kept = watch.state_dir / FAILED_START_LOGS
    message = str(caught.value)
    assert message.startswith(
        "the local Ray head was not ready within 0.5 s (RLAUNCH_HEAD_START_TIMEOUT): still "
        "waiting for `ray start` to exit. The head's logs (`ray start`'s output "
        "ray-start.log, and the session's gcs_server, raylet, dashboard and dashboard_agent "
        f"logs) are kept in {kept}; the head was stopped. On a slow or loaded machine, raise "
        "RLAUNCH_HEAD_START_TIMEOUT (seconds). `ray start`'s output ends with:\n"
    )
    assert (kept / "ray-start.log").is_file()
    assert read_record(watch.state_dir) is None
    assert Path(temp_dir).name.startswith("rlh-") and not Path(temp_dir).exists()
    assert said[0].startswith("rlaunch: starting a local Ray head on 127.0.0.1 (1 simulated GPUs")
    # Only `ray start`'s own timeout is retried (test_head_retry.py): a deadline is not.
    assert [m for m in said if m.startswith("rlaunch: starting")] == said[:1]
