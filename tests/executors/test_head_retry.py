"""A `ray start` that gives up because the head's raylet did not register with the GCS within
Ray's fixed 30 s ("The current node timed out during startup", Ray 2.60.0
ray/_private/node.py, Node.__init__) is started once more, on a fresh head; no other failure
is retried, and a second timeout fails the launch with both attempts' logs kept."""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from executors.helpers import allocation
from executors.support import HeadWatch, process_tree, ray_processes
from rlaunch.executors import ExecutorError
from rlaunch.executors.head_ready import START_TIMEOUT_ENV
from rlaunch.executors.local_head import (
    DASHBOARD_MODULE_ENV,
    DASHBOARD_STARTUP_ENV,
    FAILED_START_LOGS,
    FIRST_ATTEMPT_LOGS,
    RAY_START_TIMED_OUT,
    is_alive,
    read_record,
    start_head,
)

# Ray's own words, as `ray start` prints them when it raises (Ray 2.60.0, Node.__init__).
RAY_TIMEOUT_LINE = (
    "Exception: The current node timed out during startup. This could happen because some of "
    "the raylet failed to startup or the GCS has become overloaded."
)
# Ray's fault injection for its own tests (src/ray/common/asio/asio_chaos.cc, read by every Ray
# process from the environment): "<service>.grpc_server.<method>=<min us>:<max us>" delays the
# handling of each such request on the server. 600 s: the GCS handles the raylet's RegisterNode
# long after `ray start` has given up waiting for it.
DELAY_ENV = "RAY_testing_asio_delay_us"
DELAY_REGISTER_NODE = "NodeInfoGcsService.grpc_server.RegisterNode=600000000:600000000"


def _retry_message(kept: Path) -> str:
    return (
        f'rlaunch: `ray start` gave up: "{RAY_START_TIMED_OUT}" (Ray waits a fixed 30 s for the '
        f"head's raylet to register with the GCS); starting the head once more on fresh ports "
        f"(the first attempt's logs are kept in {kept})"
    )


def _temp_dir(starting: str) -> str:
    return starting.rsplit("temp dir ", 1)[1].rstrip(")")


def _supervisors(state_dir: Path) -> set[int]:
    """The head sessions that a live head supervisor watches in `state_dir`."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            words = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "rlaunch.head_supervisor" in words and str(state_dir) in words:
            found.add(int(words[-2]))
    return found


def test_a_ray_start_that_timed_out_is_started_once_more_on_a_fresh_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both starts are the real `ray start`. The first times out for real, the way Ray does: Ray's
    own fault injection (DELAY_ENV, which start_head passes to the head like every RAY_*
    variable) holds the GCS's RegisterNode, so the raylet cannot register while `ray start`
    waits its 30 s. When start_head says it starts again, the test's progress callback removes
    the variable, so the second head starts as usual."""
    watch = HeadWatch(tmp_path / "heads")
    kept = watch.state_dir / FAILED_START_LOGS
    monkeypatch.setenv(DELAY_ENV, DELAY_REGISTER_NODE)
    # On a loaded machine `ray start` takes a minute or more before its 30 s wait even begins:
    # rlaunch's own deadline (120 s by default) must not end the first attempt before Ray does.
    monkeypatch.setenv(START_TIMEOUT_ENV, "600")
    said: list[str] = []

    def say(message: str) -> None:
        said.append(message)
        if message == _retry_message(kept):
            monkeypatch.delenv(DELAY_ENV)

    starts: list[str] = []
    try:
        record = start_head(allocation(), watch.state_dir, say)
        watch.snapshot()
        starts = [m for m in said if m.startswith("rlaunch: starting a local Ray head")]
        watch.temp_dirs.update(_temp_dir(m) for m in starts)
        assert len(starts) == 2, said
        first_dir, second_dir = (_temp_dir(m) for m in starts)
        retry = said.index(_retry_message(kept))
        stopping = said[retry - 1]
        assert stopping.startswith("rlaunch: stopping the local Ray head (session "), said
        first_session = int(stopping.split("(session ", 1)[1].split(",")[0])
        assert said[retry + 1] == starts[1]
        assert said[-1].startswith("rlaunch: the local Ray head is ready after ")
        assert said[-1].endswith(f" s ({record.dashboard_url})")
        # The first head is gone whole: its session, its temp dir, any Ray process naming it.
        assert process_tree({first_session}) == set()
        assert not Path(first_dir).exists()
        assert not [pid for pid, cmd in ray_processes().items() if first_dir in cmd]
        # Ray's own timeout ended the first attempt; its logs are kept.
        assert RAY_TIMEOUT_LINE in (kept / "ray-start.log").read_text().splitlines()
        assert list(kept.glob("session_2*/raylet.out"))
        # The second head is recorded, answers, and is watched by its own supervisor only.
        assert read_record(watch.state_dir) == record
        assert (record.temp_dir, record.session_name != "") == (second_dir, True)
        assert record.session_id != first_session
        assert is_alive(record)
        deadline = time.monotonic() + 10
        while first_session in _supervisors(watch.state_dir) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _supervisors(watch.state_dir) == {record.session_id}
    finally:
        watch.temp_dirs.update(_temp_dir(m) for m in said if "temp dir " in m)
        watch.finish()


def _start_on_fake_ray(tmp_path: Path, output: str) -> tuple[str, list[str], Path, list[str]]:
    """start_head with, as the interpreter it runs `-m ray.scripts.scripts start ...` with, an
    executable that prints `output` and exits 1. Returns the error, what start_head said, its
    state dir and the arguments of each `ray start`."""
    calls = tmp_path / "calls"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho \"$@\" >> '{calls}'\n"
                      f"echo \"$RAY_DASHBOARD_STARTUP_TIMEOUT_S\""
                      f" \"$RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT\""
                      f" >> '{tmp_path / 'waits'}'\n"
                      f"printf '%s\\n' '{output}'\nexit 1\n")
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    watch = HeadWatch(tmp_path / "heads")
    said: list[str] = []
    try:
        with pytest.raises(ExecutorError) as caught:
            start_head(allocation(), watch.state_dir, said.append, python=str(python))
    finally:
        watch.temp_dirs.update(_temp_dir(m) for m in said if "temp dir " in m)
        watch.finish()
    return str(caught.value), said, watch.state_dir, calls.read_text().splitlines()


def test_a_second_timeout_fails_the_start_and_keeps_both_attempts_logs(tmp_path: Path) -> None:
    """`ray start` is replaced here by a real executable that prints Ray's timeout line and exits
    1, given to start_head as the interpreter it runs `-m ray.scripts.scripts start` with: the
    real timeout costs a whole head start and Ray's 30 s (about 25 CPU-s, measured) each time,
    and the test above proves it is recognised; this one proves what start_head does with a
    second one, through its own code."""
    error, said, state_dir, ran = _start_on_fake_ray(tmp_path, RAY_TIMEOUT_LINE)
    kept = state_dir / FAILED_START_LOGS
    assert error == (
        "the local Ray head did not start: `ray start` exited with code 1 on its second attempt "
        f"(the first ended with `ray start`'s \"{RAY_START_TIMED_OUT}\"; its logs are in "
        f"{kept / FIRST_ATTEMPT_LOGS}). The head's logs (`ray start`'s output ray-start.log, and "
        f"the session's gcs_server, raylet, dashboard and dashboard_agent logs) are kept in "
        f"{kept}; the head was stopped. On a slow or loaded machine, raise "
        f"RLAUNCH_HEAD_START_TIMEOUT (seconds). `ray start`'s output ends with:\n"
        f"{RAY_TIMEOUT_LINE}\n"
    )
    starts = [m for m in said if m.startswith("rlaunch: starting a local Ray head")]
    assert said == [starts[0], _retry_message(kept), starts[1]]
    first_dir, second_dir = (_temp_dir(m) for m in starts)
    assert first_dir != second_dir
    assert [line.split("--temp-dir ", 1)[1].split()[0] for line in ran] == [first_dir, second_dir]
    ports = [line.split("--port ", 1)[1].split()[0] for line in ran]
    assert ports[0] != ports[1]
    for logs in (kept, kept / FIRST_ATTEMPT_LOGS):
        assert (logs / "ray-start.log").read_text() == f"{RAY_TIMEOUT_LINE}\n"
    assert os.listdir(state_dir) == [FAILED_START_LOGS]
    assert not Path(first_dir).exists() and not Path(second_dir).exists()
    assert read_record(state_dir) is None


@pytest.mark.parametrize("output", [
    "Exception: Failed to start the GCS server.",
    "ValueError: Ray component gcs_server is trying to use a port number 6379 that is used by "
    "other components.",
])
def test_any_other_failure_of_ray_start_is_not_retried(tmp_path: Path, output: str) -> None:
    """The replaced `ray start` of the test above, with other messages of Ray's."""
    error, said, state_dir, ran = _start_on_fake_ray(tmp_path, output)
    kept = state_dir / FAILED_START_LOGS
    assert error == (
        "the local Ray head did not start: `ray start` exited with code 1. The head's logs "
        "(`ray start`'s output ray-start.log, and the session's gcs_server, raylet, dashboard "
        f"and dashboard_agent logs) are kept in {kept}; the head was stopped. On a slow or "
        "loaded machine, raise RLAUNCH_HEAD_START_TIMEOUT (seconds). `ray start`'s output ends "
        f"with:\n{output}\n"
    )
    assert len(said) == 1 and said[0].startswith("rlaunch: starting a local Ray head")
    assert len(ran) == 1
    assert os.listdir(kept) == ["ray-start.log"]
    assert os.listdir(state_dir) == [FAILED_START_LOGS]


def test_ray_waits_for_its_dashboard_as_long_as_rlaunch_waits_for_the_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ray start` exits 1 when its dashboard is not up within RAY_DASHBOARD_STARTUP_TIMEOUT_S
    (default 60 s; "Failed to start the dashboard", seen here at load 15 on 2 cores) or a
    dashboard module within RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT (default 30 s;
    "Module MetricsHead failed to start", seen at load 15-30): the head gets rlaunch's own
    deadline for both instead, unless a variable is set. Read by the replaced `ray start`
    above, from the environment start_head gives it."""
    output = "Exception: Failed to start the dashboard"
    waits = tmp_path / "waits"
    for name in (DASHBOARD_STARTUP_ENV, DASHBOARD_MODULE_ENV):
        monkeypatch.delenv(name, raising=False)
    for deadline, own, expected in (("", {}, "120 120"), ("300.5", {}, "301 301"),
                                    ("", {DASHBOARD_STARTUP_ENV: "90"}, "90 120"),
                                    ("", {DASHBOARD_MODULE_ENV: "45"}, "90 45")):
        monkeypatch.setenv(START_TIMEOUT_ENV, deadline)
        for name, value in own.items():
            monkeypatch.setenv(name, value)
        waits.unlink(missing_ok=True)
        shutil.rmtree(tmp_path / "heads", ignore_errors=True)
        _start_on_fake_ray(tmp_path, output)
        assert waits.read_text() == f"{expected}\n"
