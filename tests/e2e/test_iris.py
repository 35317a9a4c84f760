"""The countdown smoke on a real local Iris controller, through `./pants run`.

The session's scratch copy of the repository (its pantsd shared), its countdown execution
made `executor="iris"` with `cluster` naming the local cluster config of a controller this test
starts (tests/irisserver.py): the launch submits through Iris's client, follows the job to
SUCCEEDED, and records it in the ledger; a second launch, detached, is then asked for by
`rlaunch status`, `logs` and `stop`. The launch finds the countdown inputs (data, tokenizer, the
SFT model) in a store of its own, a copy of the session's (`countdown_store`: built once by
`./pants run experiments/countdown:sft_model`, as test_main_command reuses them), and reuses
them."""

from __future__ import annotations

import getpass
import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from iris.client import IrisClient
from iris.cluster.types import JobName
from iris.rpc import job_pb2

from executors.support import listening_addresses
from irisserver import Controller, start_controller
from pants_scratch import ScratchRepo

RUN = "countdown-grpo-smoke"
FULL = "countdown-grpo"
LOCAL_EXECUTION = '''    executor="local",
    allocation=dict(
        num_nodes=1,
        gpus_per_node=2,
        accelerator="sim",'''


@pytest.fixture(scope="module")
def scratch(scratch_copy: ScratchRepo) -> Iterator[ScratchRepo]:
    """The session's scratch copy (its pantsd, up already when test_hostile_build ran first,
    shared with other modules); the countdown BUILD the test edits is put back at the end."""
    repo = scratch_copy.view()
    build = repo.root / "experiments/countdown/BUILD"
    original = build.read_text()
    try:
        yield repo
    finally:
        if build.read_text() != original:
            build.write_text(original)
            repo.commit_all("experiments/countdown/BUILD as it was")


@pytest.fixture(scope="module")
def controller(scratch: ScratchRepo, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[Controller]:
    started = start_controller(tmp_path_factory.mktemp("iris-controller"),
                               pythonpath=[scratch.root / "src"])
    try:
        yield started
    finally:
        started.stop()
    assert started.process.returncode is not None


def _rlaunch(scratch: ScratchRepo, python: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "rlaunch", *args], cwd=scratch.root,
                          env={**scratch.env, "PYTHONPATH": str(scratch.root / "src")},
                          capture_output=True, text=True, timeout=300, check=False)


def _run_watching(command: Callable[[], subprocess.Popen], pids_of: Callable[[], set[int]]
                  ) -> tuple[str, str, int, set[str]]:
    """Run a command to its end, sampling the listening sockets of `pids_of()` meanwhile."""
    process = command()
    seen: set[str] = set()
    while process.poll() is None:
        seen |= listening_addresses(pids_of())
        time.sleep(0.5)
    out, err = process.communicate()
    return out, err, process.returncode, seen


def test_countdown_smoke_on_a_local_iris_controller(
    scratch: ScratchRepo, controller: Controller, countdown_store: Path,
) -> None:
    # The session's countdown inputs: the scratch copy changes only the execution, so the
    # launch finds them up to date (the ~30 s SFT model is not trained again).
    build = scratch.root / "experiments/countdown/BUILD"
    text = build.read_text()
    assert LOCAL_EXECUTION in text
    build.write_text(text.replace(LOCAL_EXECUTION, LOCAL_EXECUTION.replace(
        'executor="local",',
        f'executor="iris",\n    cluster="{controller.config}",\n    priority="interactive",')))
    scratch.commit_all("countdown on a local Iris controller")
    env = {**scratch.env, "RLAUNCH_STORE": str(countdown_store)}

    def launch() -> subprocess.Popen:
        return subprocess.Popen(
            [str(scratch.root / "pants"), "run", "experiments/countdown:smoke"],
            cwd=scratch.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)

    out, err, code, listening = _run_watching(launch, lambda: {controller.process.pid})
    assert code == 0, out[-4000:] + err[-4000:]
    # The controller and its thread workers serve on the loopback address only.
    assert listening and all(address.startswith("127.0.0.1:") for address in listening), listening
    assert "step 2/2 | reward " in out
    assert "sft_model@2026.11.30.1 up to date" in out + err
    assert "built sft_model" not in out + err

    ledger = json.loads((countdown_store / "_ledger" / RUN / "dev.json").read_text())
    attempt = ledger["attempts"][-1]
    submission = attempt["submission"]
    assert attempt["status"] == "SUCCEEDED"
    assert submission["executor"] == "iris"
    assert submission["address"] == str(controller.config)
    assert submission["submission_id"] == (
        f"/{getpass.getuser()}/rlaunch-{RUN}-dev-{attempt['attempt_id']}")
    assert (f"rlaunch: submitted {RUN}@dev as {submission['submission_id']} (iris at "
            f"{controller.config}); attempt {attempt['attempt_id']}\n") in err
    assert f"rlaunch: {RUN}@dev attempt {attempt['attempt_id']}: SUCCEEDED" in err, err[-3000:]
    job_log = countdown_store / RUN / "dev" / "attempts" / attempt["attempt_id"] / "job.log"
    assert "step 2/2 | reward " in job_log.read_text()
    assert (countdown_store / RUN / "dev" / "terminal.json").is_file()

    python = scratch.runtime_python()
    status = _rlaunch(scratch, python, "status", f"{RUN}@dev", "--store", str(countdown_store))
    assert status.stdout == (
        f"{RUN}@dev attempt {attempt['attempt_id']}: SUCCEEDED (iris job "
        f"{submission['submission_id']} at {controller.config}; from the ledger)\n"), status.stderr

    # The full run (60 steps, about a minute), detached: status, logs and stop go to Iris.
    detached = subprocess.run(
        [str(scratch.root / "pants"), "run", "experiments/countdown:launch", "--", "--detach"],
        cwd=scratch.root, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert detached.returncode == 0, detached.stdout[-3000:] + detached.stderr[-3000:]
    ledger = json.loads((countdown_store / "_ledger" / FULL / "dev.json").read_text())
    second = ledger["attempts"][-1]
    job = second["submission"]["submission_id"]
    assert job == f"/{getpass.getuser()}/rlaunch-{FULL}-dev-{second['attempt_id']}"
    status = _rlaunch(scratch, python, "status", f"{FULL}@dev", "--store", str(countdown_store))
    assert re.fullmatch(
        rf"{FULL}@dev attempt {second['attempt_id']}: (PENDING|RUNNING) \(iris job {job} at "
        rf"{re.escape(str(controller.config))}\)\n", status.stdout), status.stdout + status.stderr
    logs = _rlaunch(scratch, python, "logs", f"{FULL}@dev", "--store", str(countdown_store))
    assert logs.returncode == 0, logs.stderr
    stopped = _rlaunch(scratch, python, "stop", f"{FULL}@dev", "--store", str(countdown_store))
    assert stopped.stdout == f"{FULL}@dev attempt {second['attempt_id']}: STOPPED\n", (
        stopped.stdout + stopped.stderr)
    ledger = json.loads((countdown_store / "_ledger" / FULL / "dev.json").read_text())
    assert ledger["attempts"][-1]["status"] == "STOPPED"
    status = _rlaunch(scratch, python, "status", f"{FULL}@dev", "--store", str(countdown_store))
    assert status.stdout == (
        f"{FULL}@dev attempt {second['attempt_id']}: STOPPED (iris job {job} at "
        f"{controller.config}; from the ledger)\n")
    summary = IrisClient.remote(controller.url).status(JobName.from_wire(job))
    assert job_pb2.JobState.Name(summary.state) == "JOB_STATE_KILLED"
