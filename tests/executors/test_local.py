"""The local executor against the real Ray head it starts: loopback only, reused, replaced,
stopped exactly. One head per allocation for the whole module (a head takes 10-30 s here)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from executors.helpers import edited, release, rendered
from executors.support import (
    ECHO_DIR,
    SRC,
    HeadWatch,
    listening_addresses,
    process_tree,
    wait_gone,
)
from rlaunch.executors import ExecutorError, ExecutorOptions
from rlaunch.executors.follow import wait_terminal
from rlaunch.executors.local import LocalExecutor
from rlaunch.head_record import STATE_FILE, read_record
from rlaunch.status import AttemptStatus


@pytest.fixture(scope="module")
def heads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeadWatch]:
    watch = HeadWatch(tmp_path_factory.mktemp("heads"))
    yield watch
    watch.finish()


@pytest.fixture(autouse=True)
def _remember_processes(heads: HeadWatch, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # The job inherits rlaunch's sources and the echo runtime through PYTHONPATH.
    monkeypatch.setenv("PYTHONPATH", f"{SRC}{os.pathsep}{ECHO_DIR}")
    yield
    heads.snapshot()


def executor(
    heads: HeadWatch, *, keep_head: bool = True, said: list[str] | None = None
) -> LocalExecutor:
    say = said.append if said is not None else (lambda m: None)
    return LocalExecutor(
        ExecutorOptions(keep_head=keep_head, head_state_dir=heads.state_dir, say=say)
    )


def output(local: LocalExecutor, submission) -> str:
    return "".join(local.logs(submission, follow=True))


def test_first_submission_starts_a_loopback_head_and_runs_the_job(
    heads: HeadWatch, tmp_path: Path
) -> None:
    path, launch = rendered(tmp_path, credentials=["ECHO_TOKEN"])
    said: list[str] = []
    local = executor(heads, said=said)
    submission = local.submit(path, launch, env={"ECHO_TOKEN": "tok-123456"}, attempt_id="a1")
    text = output(local, submission)
    assert wait_terminal(local, submission, 30) == AttemptStatus.SUCCEEDED
    assert "echo-runtime: run echo-run@dev" in text
    assert "echo-runtime: credential ECHO_TOKEN present, 10 chars" in text
    assert "echo-runtime: attempt a1" in text
    assert submission.entrypoint[1:] == ("-m", "rlaunch_echo_runtime", str(path.resolve()))

    record = read_record(heads.state_dir)
    assert local.started_head == record
    assert record.dashboard_url == submission.address
    # Ray logs a job's runtime env: the credential went through a file the job deleted, so
    # nothing in the head's temp dir (Ray's session logs included) holds the value.
    kept = [p for p in Path(record.temp_dir).rglob("*") if p.is_file()
            and b"tok-123456" in p.read_bytes()]
    assert kept == []
    assert not list(Path(record.temp_dir).glob("credentials-*"))
    # It was submitted to only once the head was ready (job agent healthy, Jobs API answering).
    assert said[0].startswith("rlaunch: starting a local Ray head on 127.0.0.1 (1 simulated GPUs")
    assert re.fullmatch(
        rf"rlaunch: the local Ray head is ready after \d+ s \({record.dashboard_url}\)", said[-1]
    ), said
    assert record.dashboard_url.startswith("http://127.0.0.1:")
    assert (record.num_nodes, record.gpus_per_node, record.num_cpus) == (1, 1, 2)
    assert record.pgid == record.pid == record.session_id
    assert len(record.temp_dir) < 30
    state = json.loads((heads.state_dir / STATE_FILE).read_text())
    assert state["session_name"].startswith("session_")
    # Every server of the head listens on the loopback interface only.
    addresses = listening_addresses(process_tree({record.session_id}))
    assert addresses, "the head has no listening sockets?"
    assert {address.rsplit(":", 1)[0] for address in addresses} == {"127.0.0.1"}


def test_a_second_submission_reuses_the_running_head(heads: HeadWatch, tmp_path: Path) -> None:
    path, launch = rendered(tmp_path)
    before = read_record(heads.state_dir)
    local = executor(heads)
    submission = local.submit(path, launch, env={}, attempt_id="a2")
    assert output(local, submission).count("echo-runtime: done") == 1
    assert local.started_head is None
    assert read_record(heads.state_dir) == before
    assert submission.address == before.dashboard_url


def test_a_failing_job_ends_failed(heads: HeadWatch, tmp_path: Path) -> None:
    path, launch = rendered(tmp_path, name="echo-fail")
    local = executor(heads)
    submission = local.submit(path, launch, env={}, attempt_id="a3")
    assert "echo-runtime: failing as asked" in output(local, submission)
    assert wait_terminal(local, submission, 30) == AttemptStatus.FAILED


def test_a_head_with_a_running_job_is_not_replaced(heads: HeadWatch, tmp_path: Path) -> None:
    path, launch = rendered(tmp_path, name="echo-wait")
    local = executor(heads)
    submission = local.submit(path, launch, env={}, attempt_id="a4")
    wider = edited(launch, gpus_per_node=2)
    with pytest.raises(ExecutorError) as caught:
        executor(heads).head(wider)
    record = read_record(heads.state_dir)
    assert str(caught.value) == (
        f"the local Ray head at {record.dashboard_url} was started for 1 node(s) x 1 GPUs and "
        f"2 CPUs, and job(s) {submission.submission_id} still run on it; this launch needs "
        f"1 x 2 GPUs and 2 CPUs. Wait for them or stop them (`rlaunch stop`), then launch again"
    )
    release(tmp_path / "store", "echo-wait")
    assert wait_terminal(local, submission, 60) == AttemptStatus.SUCCEEDED


def test_stop_ends_a_running_job(heads: HeadWatch, tmp_path: Path) -> None:
    path, launch = rendered(tmp_path, name="echo-wait")
    local = executor(heads)
    submission = local.submit(path, launch, env={}, attempt_id="a5")
    deadline = time.monotonic() + 60
    while local.status(submission) != AttemptStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(0.2)
    local.stop(submission)
    assert wait_terminal(local, submission, 30) == AttemptStatus.STOPPED


def test_another_allocation_replaces_the_head_and_close_stops_exactly_it(
    heads: HeadWatch, tmp_path: Path
) -> None:
    old = read_record(heads.state_dir)
    old_processes = process_tree({old.session_id})
    path, launch = rendered(tmp_path)
    launch = edited(launch, gpus_per_node=2)
    local = executor(heads, keep_head=False)
    submission = local.submit(path, launch, env={}, attempt_id="a6")
    new = read_record(heads.state_dir)
    heads.snapshot()
    assert new.session_id != old.session_id and (new.gpus_per_node, new.num_cpus) == (2, 2)
    assert wait_gone(old_processes) == set()
    assert not Path(old.temp_dir).exists()
    assert "echo-runtime: done" in output(local, submission)
    assert wait_terminal(local, submission, 30) == AttemptStatus.SUCCEEDED

    new_processes = process_tree({new.session_id})
    local.close()
    assert wait_gone(new_processes) == set()
    assert not Path(new.temp_dir).exists()
    assert read_record(heads.state_dir) is None
    with pytest.raises(ExecutorError, match="is no longer running: a launch stops the head"):
        local.status(submission)


def test_prepare_starts_the_head_in_the_background_and_close_stops_an_unused_one(
    heads: HeadWatch, tmp_path: Path
) -> None:
    # A launch refused while its inputs build: the head prepare started (here still starting)
    # is stopped by close, even with keep_head (nothing was submitted to it).
    assert read_record(heads.state_dir) is None
    path, launch = rendered(tmp_path)
    said: list[str] = []
    local = executor(heads, keep_head=True, said=said)
    local.prepare(launch)
    deadline = time.monotonic() + 120
    while read_record(heads.state_dir) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    record = read_record(heads.state_dir)
    heads.snapshot()
    local.close()
    assert wait_gone(process_tree({record.session_id})) == set()
    assert not Path(record.temp_dir).exists()
    assert read_record(heads.state_dir) is None
    assert said[0].startswith("rlaunch: starting a local Ray head on 127.0.0.1 (1 simulated GPUs")
    assert said[-1].startswith(f"rlaunch: stopping the local Ray head (session {record.session_id}")

    # Prepared, then submitted to: the job runs on the head prepare started, which this
    # executor owns (close stops it).
    local = executor(heads, keep_head=False)
    local.prepare(launch)
    submission = local.submit(path, launch, env={}, attempt_id="a7")
    record = read_record(heads.state_dir)
    heads.snapshot()
    assert local.started_head == record
    assert submission.address == record.dashboard_url
    assert "echo-runtime: done" in output(local, submission)
    assert wait_terminal(local, submission, 30) == AttemptStatus.SUCCEEDED
    local.close()
    assert wait_gone(process_tree({record.session_id})) == set()
    assert read_record(heads.state_dir) is None
