"""`rlaunch launch | status | logs | stop`: the command line of the one submission path.

`launch` loads a spec and calls `rlaunch.launch.launch`; the others find the last submission of
a run in the ledger (by spec file or `name@version`) and ask its executor.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

from rlaunch.executors import (
    ExecutorError,
    ExecutorOptions,
    JobLost,
    Submission,
    load_executor,
    local_head,
)
from rlaunch.executors.follow import wait_terminal
from rlaunch.executors.job_progress import JobProgress
from rlaunch.launch import (
    EXIT_INTERRUPTED,
    LaunchRefused,
    LaunchRequest,
    launch,
    record_status,
    rehearsal_store,
    resolve_store,
)
from rlaunch.interrupts import install as install_interrupts
from rlaunch.ledger import Ledger, LedgerError, last_attempt
from rlaunch.ledger.records import attempt_status, set_status
from rlaunch.paths import resolve_store_prefix
from rlaunch.pipeline import run_pipeline
from rlaunch.progress import progress_board
from rlaunch.spec import RunSpec, SpecError, load_spec
from rlaunch.spec.syntax import SAFE_NAME, is_calendar, is_dev
from rlaunch.status import AttemptStatus
from rlaunch.view import RunStore, ViewError
from rlaunch.view.plot import CURVES_FILE, plot_finished_run


def _say(message: str) -> None:
    click.echo(message, err=True)


@click.command("launch")
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False))
@click.option("--dry-run", is_flag=True,
              help="Preflight and write the launch YAML, print what would be submitted, stop.")
@click.option("--follow/--detach", default=True, show_default=True,
              help="Stream the job's logs until it ends (exit 0 only if it succeeded), or "
                   "return once it is submitted.")
@click.option("--skip-smoke-gate", metavar="REASON",
              help="Launch a calendar-versioned full run without a recorded smoke; the reason "
                   "is recorded in the ledger.")
@click.option("--store", metavar="PREFIX",
              help="Artifact store prefix (directory or fsspec URL); default: "
                   "execution.store_prefix, else $RLAUNCH_STORE or ~/.cache/rlaunch/store.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the launch YAML (default dist/<name>/launch.yaml).")
@click.option("--keep-head", is_flag=True,
              help="local: leave the Ray head this launch starts running afterwards.")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path),
              help="The launcher checkout whose git commit and cleanliness are recorded "
                   "(default: the working directory).")
@click.option("--verify", is_flag=True,
              help="Hash every file of the reused input artifacts instead of trusting the "
                   "digest cache for files unchanged since they were hashed.")
@click.option("--check-handoffs", is_flag=True,
              help="SkyRL runs: build and stage the inputs and run SkyRL's own handoff check "
                   "on them as the job (config, tokenizer, PromptDataset, env), then stop; "
                   "nothing trains and the ledger records nothing.")
@click.option("--rehearse", is_flag=True,
              help="SkyRL runs: run the launch YAML through SkyRL's own training loop on this "
                   "machine's CPU (a local Ray head, the model shrunk to its architecture and "
                   "tokenizer, a few steps), in the store's _rehearsal/ folder; nothing is "
                   "recorded in the store itself (docs/rehearsal.md).")
@click.option("--only", is_flag=True,
              help="A run that reads other runs' exports: launch it alone, not the upstream "
                   "runs that have not finished (preflight then refuses it: PIPE003).")
def launch_command(
    spec_path: str,
    dry_run: bool,
    follow: bool,
    skip_smoke_gate: str | None,
    store: str | None,
    out: Path | None,
    keep_head: bool,
    repo: Path | None,
    verify: bool,
    check_handoffs: bool,
    rehearse: bool,
    only: bool,
) -> None:
    """Preflight SPEC, write its launch YAML and submit it through its executor.

    Refuses (exit 1) on any preflight error, a calendar version launched before with another
    fingerprint, a dirty launcher tree, a missing smoke, or another launch of the same
    name@version in progress. Exit 3: the job ended FAILED or STOPPED; 130: interrupted.

    A run whose model is another run's export is a pipeline: the plan (what is built,
    launched, reused, and why) is printed, then every upstream run that has not finished is
    launched first, in order, each as it would be alone (`--only`: this run alone).
    """
    try:
        spec = load_spec(spec_path)
    except SpecError as err:
        _say(err.render())
        sys.exit(1)
    install_interrupts()
    if spec.run_exports() and not only and not check_handoffs:
        out_dir = out.parent if out is not None else Path("dist")
        try:
            pipeline_store = rehearsal_store(spec, store) if rehearse else store
        except LaunchRefused as err:
            _say(f"rlaunch: launch refused\n{err}")
            sys.exit(err.exit_code)
        try:
            code = run_pipeline([spec], title=spec.identity, source=spec_path, out_dir=out_dir,
                                store=pipeline_store, repo=repo, dry_run=dry_run,
                                line=click.echo, say=_say, rehearse=rehearse)
        except KeyboardInterrupt:
            _interrupted(spec, spec_path)
        sys.exit(code)
    try:
        request = LaunchRequest(
            spec=spec, source=spec_path, dry_run=dry_run, follow=follow,
            skip_smoke_gate=skip_smoke_gate, store=store, out=out, keep_head=keep_head,
            repo=repo, verify=verify, check_handoffs=check_handoffs, rehearse=rehearse,
        )
        result = launch(request, echo=lambda text: click.echo(text, nl=False), say=_say)
    except LaunchRefused as err:
        _say(f"rlaunch: launch refused\n{err}")
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        _interrupted(spec, spec_path)
    # A handoff check trains nothing: there are no curves to plot.
    if result.followed and result.submission is not None and not check_handoffs:
        _plot_curves(spec, rehearsal_store(spec, store) if rehearse else store,
                     result.yaml_path.parent / CURVES_FILE)
        if result.laps is not None:
            result.laps.lap("curves")
    if result.laps is not None:
        _say(result.timings_line(_pants_started_at()))
    sys.exit(result.exit_code)


def _interrupted(spec: RunSpec, spec_path: str) -> NoReturn:
    """A Ctrl-C the launch did not handle itself (in its preflight, say, or a second one while
    it recorded the first): the head it started is stopped on the way out; exit 130."""
    _say(f"rlaunch: interrupted; what {spec.identity} has recorded: "
         f"`rlaunch status {spec_path}`")
    sys.exit(EXIT_INTERRUPTED)


PANTS_STARTED_ENV = "RLAUNCH_PANTS_STARTED_AT"
"""Set by ./pants to the time it started (seconds since the epoch): the launch's last line
counts Pants' own start-up from there."""


def _pants_started_at() -> float | None:
    try:
        return float(os.environ[PANTS_STARTED_ENV])
    except (KeyError, ValueError):
        return None


def _plot_curves(spec: RunSpec, store: str | None, out: Path) -> None:
    """After a followed launch: the run's curves beside its launch YAML, and where they are."""
    try:
        path = plot_finished_run(RunStore(resolve_store(spec, store)[1]), spec.name,
                                 spec.version, out)
    except (ViewError, LaunchRefused) as err:
        _say(f"rlaunch: no curves for {spec.identity}: {err}")
        return
    if path is not None:
        _say(f"rlaunch: curves of {spec.identity} (reward, eval reward, KL by step): {path}")


def _find(target: str, store: str | None) -> tuple[Ledger, str, str, Submission]:
    """The ledger and the last submission of TARGET (a spec file or name@version)."""
    if _is_file(target):
        try:
            spec = load_spec(target)
        except SpecError as err:
            raise click.ClickException(err.render()) from None
        name, version = spec.name, spec.version
        prefix = resolve_store_prefix(store, spec.execution.store_prefix)
    elif "@" in target:
        name, _, version = target.partition("@")
        _check_identity(target, name, version)
        prefix = resolve_store_prefix(store)
    else:
        raise click.BadParameter(f"{target!r} is neither a spec file nor name@version",
                                 param_hint="TARGET")
    try:
        ledger = Ledger(prefix)
        record = ledger.read(name, version)
    except LedgerError as err:
        # Name the spec the identity came from: the ledger's path is built from its fields.
        raise click.ClickException(f"{target}: {err}" if target != f"{name}@{version}"
                                   else str(err)) from None
    attempt = last_attempt(record)
    if not attempt or not attempt.get("submission"):
        given = f" (from {target})" if target != f"{name}@{version}" else ""
        raise click.ClickException(
            f"no submitted launch of {name}@{version}{given} in the ledger "
            f"{ledger.record_path(name, version)} (wrong --store?)"
        )
    try:
        submission = Submission.from_dict(attempt["submission"])
    except ExecutorError as err:
        raise click.ClickException(
            f"the last attempt in the ledger {ledger.record_path(name, version)} is damaged "
            f"({err}); move the record aside"
        ) from None
    return ledger, name, version, submission


_MAX_IDENTITY = 200


def _is_file(target: str) -> bool:
    try:
        return Path(target).is_file()
    except OSError:  # a name longer than the filesystem allows is no file
        return False


def _check_identity(target: str, name: str, version: str) -> None:
    """Refuse a name@version no run can have, before it becomes a path in the store."""
    shown = target if len(target) <= 60 else f"{target[:57]}... ({len(target)} characters)"
    if len(target) > _MAX_IDENTITY:
        raise click.BadParameter(
            f"{shown} is longer than any run identity ({_MAX_IDENTITY} characters at most)",
            param_hint="TARGET",
        )
    if not SAFE_NAME.fullmatch(name) or not (is_calendar(version) or is_dev(version)):
        raise click.BadParameter(
            f"{shown} is not name@version (a name of a-z, 0-9, '.', '_', '-' and a version "
            f"YYYY.MM.DD[.N] or dev / <label>-dev)",
            param_hint="TARGET",
        )


_TARGET = click.argument("target", metavar="TARGET")
_STORE = click.option("--store", metavar="PREFIX", help="Artifact store prefix of the ledger.")


@click.command("status")
@_TARGET
@_STORE
def status_command(target: str, store: str | None) -> None:
    """Print the status of TARGET's last launch (a spec file or name@version) and record it.

    A finished launch answers from the ledger (its head may be long gone); a live one asks its
    executor."""
    ledger, name, version, submission = _find(target, store)
    recorded = _recorded_status(ledger, name, version)
    where = f"{submission.executor} job {submission.submission_id} at {submission.address}"
    if recorded is not None and recorded.is_terminal():
        click.echo(f"{name}@{version} attempt {submission.attempt_id}: {recorded} ({where}; "
                   f"from the ledger)")
        return
    try:
        with load_executor(submission.executor, ExecutorOptions(say=_say)) as executor:
            status = executor.status(submission)
    except JobLost as err:
        # Its launcher was killed and took the head with it: the job cannot be running.
        lost = str(err)
        lost_status = AttemptStatus.LOST
        ledger.update(name, version, lambda record: set_status(
            record, submission.attempt_id, lost_status, error=lost))
        click.echo(f"{name}@{version} attempt {submission.attempt_id}: {lost_status} (was "
                   f"{recorded}; {lost})")
        return
    except ExecutorError as err:
        raise click.ClickException(
            f"{err}\nThe ledger last recorded {name}@{version} attempt {submission.attempt_id} "
            f"as {recorded}.") from None
    click.echo(f"{name}@{version} attempt {submission.attempt_id}: {status} ({where})")
    if status.is_terminal():
        record_status(ledger, name, version, submission.attempt_id, status, _say)


def _recorded_status(ledger: Ledger, name: str, version: str) -> AttemptStatus | None:
    return attempt_status(last_attempt(ledger.read(name, version)))


def _stored_log(ledger: Ledger, name: str, version: str, attempt_id: str) -> str | None:
    try:
        return RunStore(ledger.prefix).job_log(name, version, attempt_id)
    except ViewError as err:
        raise click.ClickException(str(err)) from None


@click.command("logs")
@_TARGET
@_STORE
@click.option("--follow", is_flag=True, help="Keep streaming until the job ends.")
def logs_command(target: str, store: str | None, follow: bool) -> None:
    """Print the output of TARGET's last launch (a spec file or name@version).

    A finished launch prints the copy kept in the store (`attempts/<id>/job.log`); a live one
    streams from its executor."""
    ledger, name, version, submission = _find(target, store)
    recorded = _recorded_status(ledger, name, version)
    if recorded is not None and recorded.is_terminal():
        stored = _stored_log(ledger, name, version, submission.attempt_id)
        if stored is not None:
            click.echo(stored, nl=False)
            return
    try:
        with (load_executor(submission.executor, ExecutorOptions(say=_say)) as executor,
              progress_board() as board):
            # A job followed live shows its steps and staging as bars, as `launch` does.
            watch = JobProgress(board).feed if follow else None
            for chunk in executor.logs(submission, follow):
                click.echo(chunk, nl=False)
                if watch is not None:
                    watch(chunk)
    except ExecutorError as err:
        stored = _stored_log(ledger, name, version, submission.attempt_id)
        if stored is None:
            raise click.ClickException(str(err)) from None
        _say(f"rlaunch: {err}\nrlaunch: printing the copy kept in the store instead")
        click.echo(stored, nl=False)


@click.command("stop")
@_TARGET
@_STORE
@click.option("--head", "stop_head", is_flag=True,
              help="local: then stop the local Ray head too (left running by --detach or "
                   "--keep-head), unless other jobs still run on it.")
def stop_command(target: str, store: str | None, stop_head: bool) -> None:
    """Stop TARGET's last launch (a spec file or name@version) and record that it stopped."""
    ledger, name, version, submission = _find(target, store)
    try:
        with load_executor(submission.executor, ExecutorOptions(say=_say)) as executor:
            executor.stop(submission)
            status = wait_terminal(executor, submission, 30.0)
    except ExecutorError as err:
        raise click.ClickException(str(err)) from None
    click.echo(f"{name}@{version} attempt {submission.attempt_id}: {status}")
    if status.is_terminal():
        record_status(ledger, name, version, submission.attempt_id, status, _say)
    if stop_head:
        _stop_local_head()


def _stop_local_head() -> None:
    state_dir = local_head.default_state_dir()
    record = local_head.read_record(state_dir)
    if record is None or not local_head.is_alive(record):
        _say("rlaunch: no local Ray head is running")
        return
    busy = local_head.running_jobs(record)
    if busy is None:
        raise click.ClickException(
            f"the local Ray head at {record.dashboard_url} did not list its jobs; it is left "
            f"running (try again)"
        )
    if busy:
        raise click.ClickException(
            f"the local Ray head at {record.dashboard_url} still runs job(s) {', '.join(busy)}; "
            f"stop them first"
        )
    local_head.stop_head(record, state_dir, _say)
