"""The one submission path, end to end on a real local Ray head: preflight refusals, the ledger
rules (immutable calendar versions, clean tree, smoke gate, checkpoint runtime), secret hygiene,
one launch per identity at a time (two real processes), Ctrl-C, and the CLI around it.

One Ray head serves the whole module, the session's `echo_head` (tests/conftest.py; shared with
test_experiment): launches reuse it; it is stopped after its last user, and none of its
processes may be left."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from ray.job_submission import JobSubmissionClient

from executors.helpers import release
from executors.support import (
    HeadWatch,
    echo_cli,
    clean_git_repo,
    echo_profiles,
    echo_spec,
    job_env,
    shared_store,
    wait_gone,
)
from rlaunch import interrupts
from rlaunch import launch as launch_module
from rlaunch.cli import main
from rlaunch.executors import ExecutorOptions, Submission, jobs_api
from rlaunch.executors.local import LocalExecutor
from rlaunch.executors.local_head import STATE_DIR_ENV, read_record
from rlaunch.launch import LaunchRefused, LaunchRequest, launch
from rlaunch.ledger import Ledger
from rlaunch.spec import catalog, parse_spec
from rlaunch.status import AttemptStatus

SECRET = "s3cr3t-rlaunch-test-value-8c1f"


class World:
    """Paths shared by the module: the store, a clean launcher checkout, the head's state."""

    def __init__(self, root: Path, store: Path, heads: HeadWatch) -> None:
        self.root = root
        self.store = store
        self.repo = clean_git_repo(root / "repo")
        self.dist = root / "dist"
        self.heads = heads
        self.ledger = Ledger(str(self.store))

    def spec(self, **options):
        return parse_spec(echo_spec(self.store, **options))

    def spec_file(self, **options) -> Path:
        data = echo_spec(self.store, **options)
        path = self.root / "specs" / f"{data['name']}-{data['version']}.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(data))
        return path

    def out(self, name: str) -> Path:
        return self.dist / name / "launch.yaml"


@pytest.fixture(scope="module")
def world(echo_head: HeadWatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    here = World(tmp_path_factory.mktemp("launch"),
                 shared_store(tmp_path_factory.getbasetemp()), echo_head)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(catalog, "PROFILES", echo_profiles())
        for name, value in job_env(**{STATE_DIR_ENV: str(here.heads.state_dir)}).items():
            patch.setenv(name, value)
        yield here


@pytest.fixture(autouse=True)
def _remember_processes(world: World) -> Iterator[None]:
    yield
    world.heads.snapshot()


def run(world: World, spec, *, name: str | None = None, **options):
    """launch() with the module's paths; returns (result, job output, rlaunch messages)."""
    echoed: list[str] = []
    said: list[str] = []
    options.setdefault("repo", world.repo)
    request = LaunchRequest(spec=spec, out=world.out(name or spec.name), **options)
    result = launch(request, echo=echoed.append, say=said.append)
    return result, "".join(echoed), "\n".join(said)


def cli(world: World, *args: str, **env: str) -> subprocess.Popen:
    """`rlaunch ARGS` in the module's root (`echo_cli`), the environment's `env` added."""
    return echo_cli(*args, cwd=world.root, env={**os.environ, **env})


def read_until(launcher: subprocess.Popen, text: str, timeout_s: float = 120) -> None:
    assert launcher.stdout is not None
    deadline = time.monotonic() + timeout_s
    line = ""
    while text not in line and time.monotonic() < deadline:
        line = launcher.stdout.readline()
    assert text in line, f"the job never printed {text!r}"


def files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def test_a_launch_runs_the_job_records_it_and_never_writes_a_credential(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUNCH_TEST_SECRET", SECRET)
    spec = world.spec(name="echo-secret", credentials=["RLAUNCH_TEST_SECRET"])
    result, output, said = run(world, spec)
    assert result.exit_code == 0 and result.status == AttemptStatus.SUCCEEDED
    digest = hashlib.sha256(SECRET.encode()).hexdigest()[:12]
    # The job had the value (it prints only its length and digest) ...
    assert f"credential RLAUNCH_TEST_SECRET present, {len(SECRET)} chars, sha256 {digest}" in output
    # ... and no file rlaunch wrote has it: dist, store (inputs, attempts, job log), ledger.
    assert files_containing(world.root, SECRET.encode()) == []
    assert files_containing(world.store, SECRET.encode()) == []
    assert SECRET not in output + said

    record = world.ledger.read("echo-secret", "dev")
    [attempt] = record["attempts"]
    yaml_bytes = world.out("echo-secret").read_bytes()
    assert attempt["yaml_digest"] == "sha256:" + hashlib.sha256(yaml_bytes).hexdigest()
    assert record["status"] == attempt["status"] == "SUCCEEDED"
    assert record["fingerprint"] == spec.fingerprint
    assert record["runtime_fingerprint"] == spec.runtime_fingerprint
    assert attempt["submission"]["executor"] == "local"
    attempt_dir = world.store / "echo-secret" / "dev" / "attempts" / attempt["attempt_id"]
    assert "echo-runtime: done" in (attempt_dir / "job.log").read_text()
    assert json.loads((attempt_dir / "submission.json").read_text()) == attempt["submission"]
    # The job read an immutable copy of exactly the preflighted YAML, named by its digest, in
    # the attempt's folder (the user's copy in dist/ may be overwritten without effect).
    copy = Path(attempt["yaml_path"])
    assert copy == attempt_dir.resolve() / f"launch.{attempt['yaml_digest'][7:23]}.yaml"
    assert copy.read_bytes() == yaml_bytes
    assert copy.stat().st_mode & 0o777 == 0o444
    assert b"RLAUNCH_TEST_SECRET" in yaml_bytes  # the name is in the YAML, the value never

    # Where the launch's time went, phase by phase, for its last line (the echo runtime writes
    # no terminal manifest: no runtime phases).
    assert list(result.laps.seconds) == [
        "preflight", "inputs", "head and submission", "job", "wind-down"]
    assert result.runtime_timings is None
    seconds = result.laps.seconds
    assert result.timings_line() == (
        f"rlaunch: timings of echo-secret@dev ({sum(seconds.values()):.1f} s): "
        + ", ".join(f"{name} {value:.1f} s" for name, value in seconds.items()))
    line = result.timings_line(result.laps.started_at - 2.5)
    assert line.startswith("rlaunch: timings of echo-secret@dev (")
    assert " s since ./pants started): start-up 2.5 s, preflight " in line


def test_a_dry_run_writes_the_yaml_and_records_nothing(world: World) -> None:
    spec = world.spec(name="echo-dry")
    result, _, said = run(world, spec, dry_run=True)
    assert result.dry_run and result.exit_code == 0 and result.submission is None
    assert result.yaml_path == world.out("echo-dry").resolve() and result.yaml_path.exists()
    assert f"rlaunch: dry run of echo-dry@dev: wrote {result.yaml_path}" in said
    assert f"  entrypoint: {sys.executable} -m rlaunch_echo_runtime {result.yaml_path}" in said
    assert world.ledger.read("echo-dry", "dev") is None


def test_a_preflight_error_refuses_before_anything_is_written(world: World) -> None:
    data = echo_spec(world.store, name="echo-bad")
    data["role_plan"]["batch"]["train_batch_size"] = 3
    with pytest.raises(LaunchRefused) as caught:
        run(world, parse_spec(data))
    assert "refused, " in str(caught.value) and "error BATCH" in str(caught.value)
    assert not world.out("echo-bad").exists()
    assert world.ledger.read("echo-bad", "dev") is None


def test_a_calendar_version_keeps_its_fingerprint(world: World) -> None:
    spec = world.spec(name="echo-cal", version="2026.11.29")
    result, _, said = run(world, spec, skip_smoke_gate="no smoke in this test")
    assert result.exit_code == 0
    assert "smoke gate skipped for echo-cal@2026.11.29: no smoke in this test" in said
    record = world.ledger.read("echo-cal", "2026.11.29")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=world.repo, capture_output=True,
                          text=True, check=True).stdout.strip()
    assert record["launcher_commit"] == head
    assert record["skip_smoke_gate"] == "no smoke in this test"
    assert record["attempts"][0]["skip_smoke_gate"] == "no smoke in this test"

    changed = world.spec(name="echo-cal", version="2026.11.29", seed=8)
    with pytest.raises(LaunchRefused) as caught:
        run(world, changed, skip_smoke_gate="no smoke in this test")
    message = str(caught.value)
    assert (
        "error VER002 version: echo-cal@2026.11.29 was launched before (status SUCCEEDED)"
        in message
    )
    assert (
        f"with fingerprint {spec.fingerprint}; this spec's fingerprint is "
        f"{changed.fingerprint}" in message
    )
    assert "fix: Bump the version to 2026.11.29.1" in message
    # The same spec again: it finished, and a calendar version runs once.
    with pytest.raises(LaunchRefused) as caught:
        run(world, spec, skip_smoke_gate="no smoke in this test")
    assert "error VER005 version: echo-cal@2026.11.29 already finished (attempt " in str(
        caught.value)
    # A dev version relaunches whatever changed.
    assert run(world, world.spec(name="echo-cal", seed=9))[0].exit_code == 0


def test_a_dirty_launcher_tree_refuses_a_calendar_version(world: World, tmp_path: Path) -> None:
    repo = clean_git_repo(tmp_path / "dirty")
    (repo / "tracked.txt").write_text("one\n")
    subprocess.run(["git", "add", "tracked.txt"], cwd=repo, check=True)
    spec = world.spec(name="echo-dirty", version="2026.11.29")
    with pytest.raises(LaunchRefused) as caught:
        run(world, spec, repo=repo, skip_smoke_gate="test")
    assert (
        "error VER004 version: calendar version 2026.11.29 launched from a launcher tree "
        "with uncommitted changes" in str(caught.value)
    )
    assert world.ledger.read("echo-dirty", "2026.11.29") is None


def test_the_smoke_gate_opens_after_a_successful_smoke(world: World) -> None:
    full = world.spec(name="echo-gated", version="2026.11.29")
    with pytest.raises(LaunchRefused) as caught:
        run(world, full)
    assert (
        "error LAUNCH001 version, smoke_of: calendar version echo-gated@2026.11.29 is a "
        "full launch and needs a recorded successful smoke" in str(caught.value)
    )

    smoke = world.spec(name="echo-gated-smoke", smoke_of="echo-gated@2026.11.29")
    result, _, said = run(world, smoke)
    assert result.exit_code == 0
    assert "recorded echo-gated-smoke@dev as a successful smoke of echo-gated@2026.11.29" in said
    [recorded] = world.ledger.read("echo-gated", "2026.11.29")["smoke_results"]
    assert recorded["smoke"] == "echo-gated-smoke@dev"
    assert recorded["runtime_fingerprint"] == full.runtime_fingerprint

    result, _, _ = run(world, full)
    assert result.exit_code == 0
    assert world.ledger.read("echo-gated", "2026.11.29")["skip_smoke_gate"] is None


def test_resume_latest_refuses_a_root_written_by_another_runtime(world: World) -> None:
    root = world.store / "echo-resume" / "dev" / "checkpoints"
    root.mkdir(parents=True)
    old = "sha256:" + "e" * 64
    (root / "runtime.json").write_text(json.dumps({"runtime_fingerprint": old}))
    with pytest.raises(LaunchRefused) as caught:
        run(world, world.spec(name="echo-resume"), dry_run=True)
    assert (
        f"error VER003 resume.mode, runtime, resume.compatible_runtimes: resume.mode latest "
        f"would load {root}, written by runtime {old}" in str(caught.value)
    )

    declared = echo_spec(world.store, name="echo-resume")
    declared["resume"]["compatible_runtimes"] = [old]
    assert run(world, parse_spec(declared), dry_run=True)[0].exit_code == 0


def test_a_failed_job_exits_3_and_is_recorded_failed(world: World) -> None:
    result, output, _ = run(world, world.spec(name="echo-fail-run"))
    assert "echo-runtime: failing as asked" in output
    assert (result.status, result.exit_code) == (AttemptStatus.FAILED, 3)
    assert world.ledger.read("echo-fail-run", "dev")["status"] == "FAILED"


def test_a_running_launch_blocks_a_relaunch_until_stopped(world: World) -> None:
    spec = world.spec(name="echo-wait-detached")
    result, _, said = run(world, spec, follow=False)
    assert result.exit_code == 0 and result.status == AttemptStatus.PENDING
    assert "detached; follow with `rlaunch logs echo-wait-detached@dev --follow`" in said
    with pytest.raises(LaunchRefused) as caught:
        run(world, spec)
    assert f"as job {result.submission.submission_id} (local at " in str(caught.value)
    assert "stop it (`rlaunch stop echo-wait-detached@dev`)" in str(caught.value)

    store = ["--store", str(world.store)]
    runner = CliRunner()
    status = runner.invoke(main, ["status", "echo-wait-detached@dev", *store])
    assert status.exit_code == 0, status.output
    attempt_id = result.submission.attempt_id
    assert status.output.startswith(f"echo-wait-detached@dev attempt {attempt_id}: ")
    deadline = time.monotonic() + 60
    logs = runner.invoke(main, ["logs", "echo-wait-detached@dev", *store])
    while "echo-runtime: waiting for" not in logs.output and time.monotonic() < deadline:
        time.sleep(0.3)
        logs = runner.invoke(main, ["logs", "echo-wait-detached@dev", *store])
    assert logs.exit_code == 0 and "echo-runtime: run echo-wait-detached@dev" in logs.output
    stopped = runner.invoke(main, ["stop", "echo-wait-detached@dev", *store])
    assert stopped.exit_code == 0, stopped.output
    assert stopped.output.splitlines()[0].endswith(": STOPPED")
    assert world.ledger.read("echo-wait-detached", "dev")["status"] == "STOPPED"


def test_logs_follow_shows_a_detached_jobs_steps_as_a_bar_on_a_terminal(world: World) -> None:
    """Issue 16: `rlaunch logs --follow` reads the job's step lines as `launch` does: a bar on
    stderr when it is a terminal (rich forced to one here), the job's lines as they are on
    stdout."""
    result, _, _ = run(world, world.spec(name="echo-wait-follow"), follow=False)
    assert result.status == AttemptStatus.PENDING
    follower = cli(world, "logs", "echo-wait-follow@dev", "--follow", "--store",
                   str(world.store), TTY_COMPATIBLE="1", COLUMNS="120")
    read_until(follower, "echo-runtime: waiting for")
    release(world.store, "echo-wait-follow")
    out, err = follower.communicate(timeout=120)
    assert follower.returncode == 0, err
    assert "step 2/2 | echo-runtime: released" in out and "\x1b" not in out
    assert "training: step 1/2" in err and "training: step 2/2" in err and "\x1b[" in err


def test_a_launch_shows_its_jobs_steps_as_a_bar_on_a_terminal(world: World) -> None:
    """Issue 16: `rlaunch launch`, following its job, shows the job's step lines as a bar on
    stderr when it is a terminal (rich forced to one here); its stdout, a pipe, gets the job's
    lines as they are."""
    spec_file = world.spec_file(name="echo-wait-bar")
    launcher = cli(world, "launch", str(spec_file), "--out", str(world.out("echo-wait-bar")),
                   "--repo", str(world.repo), TTY_COMPATIBLE="1", COLUMNS="120")
    read_until(launcher, "echo-runtime: waiting for")
    release(world.store, "echo-wait-bar")
    out, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 0, err
    assert "step 2/2 | echo-runtime: released" in out and "\x1b" not in out
    assert "training: step 1/2" in err and "training: step 2/2" in err and "\x1b[" in err, (
        err[-2000:])


def test_two_launches_of_one_identity_at_once_exactly_one_proceeds(world: World) -> None:
    spec_file = world.spec_file(name="echo-wait-race")
    args = ["launch", str(spec_file), "--out", str(world.out("echo-wait-race")),
            "--repo", str(world.repo)]
    racers = [cli(world, *args), cli(world, *args)]
    deadline = time.monotonic() + 120
    while all(r.poll() is None for r in racers) and time.monotonic() < deadline:
        time.sleep(0.2)
    loser = next(r for r in racers if r.poll() is not None)
    winner = next(r for r in racers if r is not loser)
    _, loser_err = loser.communicate()
    assert loser.returncode == 1, loser_err
    assert (
        "rlaunch: launch refused\necho-wait-race@dev is being launched by another process "
        f"(pid {winner.pid} on" in loser_err
    )
    release(world.store, "echo-wait-race")
    winner_out, winner_err = winner.communicate(timeout=120)
    assert winner.returncode == 0, winner_err
    assert "echo-runtime: done" in winner_out
    assert len(world.ledger.read("echo-wait-race", "dev")["attempts"]) == 1


def test_ctrl_c_stops_the_job_and_records_it(world: World) -> None:
    spec_file = world.spec_file(name="echo-wait-interrupt")
    launcher = cli(world, "launch", str(spec_file), "--out", str(world.out("interrupt")))
    assert launcher.stdout is not None
    deadline = time.monotonic() + 120
    line = ""
    while "echo-runtime: waiting for" not in line and time.monotonic() < deadline:
        line = launcher.stdout.readline()
    launcher.send_signal(signal.SIGINT)
    _, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 130, err
    assert "rlaunch: interrupted; stopping job rlaunch-echo-wait-interrupt-dev-" in err
    record = world.ledger.read("echo-wait-interrupt", "dev")
    assert record["status"] == "STOPPED"
    local = LocalExecutor(ExecutorOptions(say=lambda m: None))
    assert local.status(Submission.from_dict(record["submission"])) == AttemptStatus.STOPPED


def test_ctrl_c_also_stops_the_head_the_launch_started(world: World, tmp_path: Path) -> None:
    heads = HeadWatch(tmp_path / "own-head")
    spec_file = world.spec_file(name="echo-wait-own-head")
    launcher = cli(world, "launch", str(spec_file), "--out", str(world.out("own-head")),
                   **{STATE_DIR_ENV: str(heads.state_dir)})
    try:
        read_until(launcher, "echo-runtime: waiting for")
        head = read_record(heads.state_dir)
        assert head is not None and head.started_by_pid == launcher.pid
        heads.snapshot()  # the head's processes, the job's driver among them
        assert len(heads.seen) > 3
        launcher.send_signal(signal.SIGINT)
        _, err = launcher.communicate(timeout=90)
        assert launcher.returncode == 130, err
        assert "rlaunch: interrupted; stopping job rlaunch-echo-wait-own-head-dev-" in err
        assert f"rlaunch: stopping the local Ray head (session {head.session_id}, " in err
        # Ray said STOPPED before its head was stopped; then nothing of the head is left.
        assert world.ledger.read("echo-wait-own-head", "dev")["status"] == "STOPPED"
        assert read_record(heads.state_dir) is None
        assert wait_gone(heads.seen) == set()
        assert not Path(head.temp_dir).exists()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()
        heads.finish()


def test_ctrl_c_while_the_head_starts_stops_it_and_submits_nothing(
    world: World, tmp_path: Path
) -> None:
    heads = HeadWatch(tmp_path / "starting-head")
    spec_file = world.spec_file(name="echo-head-start")
    launcher = cli(world, "launch", str(spec_file), "--out", str(world.out("head-start")),
                   **{STATE_DIR_ENV: str(heads.state_dir)})
    assert launcher.stderr is not None
    try:
        deadline = time.monotonic() + 120
        line = ""
        while "rlaunch: starting a local Ray head" not in line and time.monotonic() < deadline:
            line = launcher.stderr.readline()
        while read_record(heads.state_dir) is None and time.monotonic() < deadline:
            time.sleep(0.02)
        head = read_record(heads.state_dir)
        assert head is not None and head.session_name == "", "the head was ready already"
        heads.snapshot()
        launcher.send_signal(signal.SIGINT)
        _, err = launcher.communicate(timeout=60)
        assert launcher.returncode == 130, err
        # The head starts while the inputs are checked: Ctrl-C lands in either phase.
        record = world.ledger.read("echo-head-start", "dev")
        if "rlaunch: interrupted while the inputs of echo-head-start@dev were built; nothing" \
                " was submitted" in err:
            assert record is None or record.get("attempts", []) == []
        else:
            assert "rlaunch: interrupted while submitting echo-head-start@dev; attempt " in err
            [attempt] = record["attempts"]
            assert (attempt["status"], attempt["submission"]) == ("submit-failed", None)
            assert attempt["error"] == "interrupted (Ctrl-C) while submitting"
        assert read_record(heads.state_dir) is None
        assert wait_gone(heads.seen) == set()
        assert not Path(head.temp_dir).exists()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.communicate()
        heads.finish()


def test_the_cli_refuses_an_invalid_spec_file_with_its_problems(world: World) -> None:
    bad = world.root / "specs" / "bad.yaml"
    bad.parent.mkdir(exist_ok=True)
    bad.write_text("schema_version: 1\nname: x\n")
    outcome = CliRunner().invoke(main, ["launch", str(bad)])
    assert outcome.exit_code == 1
    assert f"{bad}: not a valid RunSpec (" in outcome.output


def test_the_store_option_wins_and_is_preflighted_as_given(world: World, tmp_path: Path) -> None:
    spec = world.spec(name="echo-elsewhere")
    result, _, _ = run(world, spec, dry_run=True, store=str(tmp_path / "other"))
    assert f"store_prefix: {tmp_path / 'other'}" in result.yaml_path.read_text()
    with pytest.raises(LaunchRefused) as caught:
        run(world, spec, dry_run=True, store="~/rlaunch-store")
    assert "error PATH003 execution.store_prefix" in str(caught.value)


def test_a_launch_request_is_frozen_and_keyword_only(world: World) -> None:
    spec = world.spec(name="echo-request")
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        LaunchRequest(spec)  # type: ignore[misc]
    request = LaunchRequest(spec=spec, dry_run=True)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'dry_run'"):
        request.dry_run = False  # type: ignore[misc]
    assert (request.follow, request.store, request.upstream_runs_first) == (True, None, ())


def test_a_ctrl_c_a_finalizer_dropped_still_stops_the_launch_before_it_submits() -> None:
    """Python prints and drops a KeyboardInterrupt raised in a `__del__` (a file lock's, seen
    when Ctrl-C landed while the inputs were verified): the launch asks again before it
    submits."""

    class Finalized:
        def __del__(self) -> None:
            interrupts.interrupt(signal.SIGINT, None)

    try:
        Finalized()  # its KeyboardInterrupt is printed and dropped
        with pytest.raises(KeyboardInterrupt):
            interrupts.raise_if_interrupted()
    finally:
        interrupts.forget_interrupts()


def interrupted_launch(world: World, name: str):
    """run() of a spec NAME with the launch command's Ctrl-C handler installed, as `rlaunch
    launch` installs it (the test raises SIGINT in the launch; the handler and the count are
    put back after): (result, job output, messages)."""
    previous = signal.signal(signal.SIGINT, interrupts.interrupt)
    try:
        result, output, said = run(world, world.spec(name=name))
    finally:
        signal.signal(signal.SIGINT, previous)
        interrupts.forget_interrupts()
    return result, output, said


def test_a_ctrl_c_while_the_attempt_is_recorded_waits_for_the_record_then_fails_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C landing inside the ledger write that records the attempt (seen on a loaded
    machine: it escaped the launch as a bare "Aborted!", exit 1) is held until the write ends:
    the attempt is recorded whole, then failed, and nothing is submitted."""
    recorded = launch_module.start_attempt

    def interrupted_while_recording(record, **fields):
        signal.raise_signal(signal.SIGINT)  # Ctrl-C, inside the ledger write
        return recorded(record, **fields)

    monkeypatch.setattr(launch_module, "start_attempt", interrupted_while_recording)
    result, output, said = interrupted_launch(world, "echo-ctrl-c-record")
    [attempt] = world.ledger.read("echo-ctrl-c-record", "dev")["attempts"]
    assert (result.interrupted, result.submission, result.exit_code) == (True, None, 130)
    assert (attempt["status"], attempt["submission"]) == ("submit-failed", None)
    assert attempt["error"] == "interrupted (Ctrl-C) while submitting"
    assert (f"rlaunch: interrupted while submitting echo-ctrl-c-record@dev; attempt "
            f"{attempt['attempt_id']} recorded as submit-failed") in said
    assert output == ""


def test_a_ctrl_c_during_the_submission_request_lets_it_return_then_stops_the_job(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while Ray's Jobs API takes the job: the request returns, the submission is
    recorded, then the interrupt is raised and the job it made is stopped, not left running
    unrecorded. Ray's client is the real one; the signal's arrival is made by calling its
    handler inside the request."""

    class InterruptedDuringRequest(JobSubmissionClient):
        def submit_job(self, **request):
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, as the request goes out
            return super().submit_job(**request)

    monkeypatch.setattr(jobs_api, "_client", InterruptedDuringRequest)
    result, _, said = interrupted_launch(world, "echo-ctrl-c-request")
    [attempt] = world.ledger.read("echo-ctrl-c-request", "dev")["attempts"]
    assert result.interrupted and result.exit_code == 130
    assert result.submission is not None
    assert attempt["submission"]["submission_id"] == result.submission.submission_id
    assert attempt["status"] == result.status.value
    assert result.status in (AttemptStatus.STOPPED, AttemptStatus.SUCCEEDED)
    assert f"rlaunch: interrupted; stopping job {result.submission.submission_id}" in said


def test_a_ctrl_c_before_the_attempt_is_recorded_records_nothing(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C as the record of the attempt begins, before the ledger is written: nothing is
    recorded, nothing is failed that does not exist, and the launch says so."""
    original = launch_module.interrupts_held
    calls = []

    def interrupted_at_the_first_record():
        calls.append(1)
        if len(calls) == 1:
            signal.raise_signal(signal.SIGINT)  # Ctrl-C, outside any block: it raises
        return original()

    monkeypatch.setattr(launch_module, "interrupts_held", interrupted_at_the_first_record)
    result, output, said = interrupted_launch(world, "echo-ctrl-c-early")
    assert (result.interrupted, result.submission, result.exit_code) == (True, None, 130)
    assert "rlaunch: interrupted before an attempt of echo-ctrl-c-early@dev was recorded; " \
           "nothing was submitted" in said
    record = world.ledger.read("echo-ctrl-c-early", "dev")
    assert record is None or record.get("attempts", []) == []
    assert output == ""
