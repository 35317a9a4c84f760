"""The one submission path. `rlaunch launch`, the Pants `run` rule and `@rl_build_options` all
call `launch()` with a `LaunchRequest`; nothing else submits a job.

    preflight (scope all, with the real world) -> refuse on any error
    -> render the launch YAML into dist/ -> (dry run: print what would run, stop here)
    -> take the launch lock -> materialize inputs -> record the attempt in the ledger
    -> submit through the executor plugin -> record the submission
    -> follow: stream logs until the job ends, record its status (and a smoke's success)

docs/launching.md describes every step, the exit codes and the local Ray head's lifecycle.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rlaunch.builders import BuildError, materialize
from rlaunch.builders.run_export import consumed_exports
from rlaunch.builders.upstream_tokenizer import upstream_tokenizer_payloads
from rlaunch.clock import Laps
from rlaunch.executors import (
    Executor,
    ExecutorError,
    ExecutorOptions,
    JobLost,
    Submission,
    load_executor,
)
from rlaunch.executors.follow import AttemptFiles, Redactor, credential_values, stream
from rlaunch.executors.follow import wait_terminal as wait_job
from rlaunch.executors.job_progress import JobProgress
from rlaunch.executors.runtime_python import REHEARSAL_PYTHON_ENV, rehearsal_python
from rlaunch.interrupts import interrupts_held, raise_if_interrupted
from rlaunch.ledger import (
    Ledger,
    LedgerError,
    attempt_status,
    last_attempt,
    set_status,
    set_submission,
    set_wandb_url,
    start_attempt,
)
from rlaunch.ledger.checkpoints import list_checkpoints
from rlaunch.ledger.smoke import read_terminal_manifest, record_smoke_success, role_geometry
from rlaunch.paths import LAUNCH_DIGEST_ENV, resolve_store_prefix, run_paths
from rlaunch.preflight import format_text, run_preflight
from rlaunch.preflight.engine.world import World, current_world
from rlaunch.store.probe import probe_store
from rlaunch.preflight.launch_checks.smoke_gate import SMOKE_GATE_CODE, smoke_gate_findings
from rlaunch.preflight.launch_checks.tokenizer_gate import tokenizer_findings
from rlaunch.preflight.rules.pipeline import UPSTREAM_FINISHED_CODE
from rlaunch.progress import progress_board
from rlaunch.rehearsal import (
    REHEARSAL_GATE_REASON,
    REHEARSAL_WAIVED,
    RehearsalError,
    forget_rehearsal,
    not_rehearsed,
    rehearsal_prefix,
    rehearsal_report,
    rehearsal_spec,
)
from rlaunch.render import LaunchDocument, loads_launch, render_launch, write_atomically
from rlaunch.runtimes.skyrl import CHECK_FLAG, REHEARSE_FLAG
from rlaunch.spec import RunSpec, identity
from rlaunch.status import AttemptStatus
from rlaunch.store import StoreError

EXIT_OK = 0
EXIT_REFUSED = 1
"""Preflight, the ledger, the lock or the executor refused: nothing was submitted."""
EXIT_JOB_FAILED = 3
"""The job was submitted and ended FAILED or STOPPED."""
EXIT_INTERRUPTED = 130

SMOKE_GATE_CODES = frozenset({SMOKE_GATE_CODE})
"""The smoke gate's code: the only finding `--skip-smoke-gate REASON` waives."""

Say = Callable[[str], None]


class LaunchRefused(Exception):
    """The launch was refused before anything was submitted; the message says why and how to
    fix it."""

    exit_code = EXIT_REFUSED


@dataclass(frozen=True)
class Plan:
    """A spec that passed preflight, in the world it will launch in."""

    spec: RunSpec
    store_prefix: str
    launcher_commit: str | None
    findings: tuple[Any, ...]
    skip_smoke_gate: str | None


@dataclass(frozen=True)
class LaunchResult:
    identity: str
    yaml_path: Path
    yaml_digest: str
    dry_run: bool
    submission: Submission | None = None
    status: AttemptStatus | None = None
    """The job's last known status; None when it could not be learned."""
    interrupted: bool = False
    followed: bool = False
    """The launch waited for the job's end (then only SUCCEEDED exits 0)."""
    laps: Laps | None = None
    """Where a submitted launch's time went, by phase (`timings_line`)."""
    runtime_timings: Mapping[str, float] | None = None
    """The job's own phases, from its terminal manifest (`metrics.timings_s`), when it wrote
    them."""

    def timings_line(self, started_at: float | None = None) -> str:
        """`rlaunch: timings of name@version (N s since ./pants started): start-up ..., preflight
        ..., inputs ..., job ... (its runtime: ...), ...`. `started_at`: when the command began
        (time.time()), for the start-up before this process had a say."""
        laps = self.laps.seconds if self.laps is not None else {}
        total = sum(laps.values())
        parts = []
        if started_at is not None and self.laps is not None:
            startup = max(self.laps.started_at - started_at, 0.0)
            total += startup
            parts.append(f"start-up {startup:.1f} s")
        for name, seconds in laps.items():
            part = f"{name} {seconds:.1f} s"
            if name == "job" and self.runtime_timings:
                inner = ", ".join(f"{phase} {value:.1f} s"
                                  for phase, value in self.runtime_timings.items())
                part += f" (its runtime: {inner})"
            parts.append(part)
        since = " since ./pants started" if started_at is not None else ""
        return f"rlaunch: timings of {self.identity} ({total:.1f} s{since}): {', '.join(parts)}"

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        if self.dry_run or self.status == AttemptStatus.SUCCEEDED:
            return EXIT_OK
        if self.followed or (self.status is not None and self.status.is_terminal()):
            return EXIT_JOB_FAILED
        return EXIT_OK


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def new_attempt_id() -> str:
    """`20261129T225400Z-1a2b3c`: sortable by time, unique across machines."""
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(3)}"


def resolve_store(spec: RunSpec, store: str | None) -> tuple[RunSpec, str]:
    """`--store` wins over `execution.store_prefix`, which wins over the local default. A
    `--store` is written into the spec (the prefix is not part of the fingerprint), so that
    preflight judges the prefix actually used; the returned prefix is its normalized form
    (absolute for a local directory), which the YAML and the ledger record."""
    if store is not None:
        execution = spec.execution.model_copy(update={"store_prefix": store})
        spec = spec.model_copy(update={"execution": execution})
    raw = resolve_store_prefix(store, spec.execution.store_prefix)
    try:
        return spec, Ledger(raw).prefix
    except LedgerError as err:
        raise LaunchRefused(f"store prefix {raw!r}: {err}") from None


def build_world(
    spec: RunSpec, ledger: Ledger, *, repo: Path | None, env: Mapping[str, str]
) -> World:
    """The World preflight judges the launch in: env, launcher git state, ledger lookups, the
    runtime recorded in checkpoint roots, recorded smoke results."""
    world = current_world(
        cwd=repo,
        ledger=ledger.launched_record,
        checkpoint_runtime=ledger.checkpoint_runtime,
        smoke_record=ledger.smoke_result,
    )
    return replace(world, env=dict(env), store_prefix=ledger.prefix,
                   checkpoints=list_checkpoints)


CHECK_GATE_REASON = "--check-handoffs: nothing trains"
"""Why a handoff check passes the smoke gate (it guards training)."""
def rehearsal_store(spec: RunSpec, store: str | None) -> str:
    """The store a rehearsal of `spec` uses (rlaunch.rehearsal.rehearsal_prefix of the store
    the run resolves to)."""
    return rehearsal_prefix(resolve_store(spec, store)[1])


def preflight(
    spec: RunSpec,
    *,
    source: str = "<spec>",
    store: str | None = None,
    skip_smoke_gate: str | None = None,
    repo: Path | None = None,
    env: Mapping[str, str] | None = None,
    say: Say = _stderr,
    smoke_runs_first: str | None = None,
    upstream_runs_first: Collection[str] = (),
    rehearsal: bool = False,
) -> Plan:
    """Preflight with scope `all`; raises LaunchRefused (with every finding) on any error.
    `rehearsal`: the launch rehearses (its own store, nothing recorded as a real attempt), so
    a launcher tree with uncommitted changes (VER004) does not refuse it.

    `smoke_runs_first`: for plans and dry runs only, the identity of a smoke of this run that
    will be launched before it (an experiment returning both); its smoke gate is then reported
    as pending instead of refused. `upstream_runs_first`: likewise, the identities of runs
    whose export this run reads that a pipeline launches before it (PIPE003 is pending)."""
    if skip_smoke_gate is not None and not skip_smoke_gate.strip():
        raise LaunchRefused("--skip-smoke-gate needs a reason (it is recorded in the ledger)")
    spec, prefix = resolve_store(spec, store)
    # One bounded probe before anything reads the store: a store that does not answer refuses
    # the launch within seconds, naming it, instead of every read waiting on its retries.
    probe = probe_store(prefix)
    if not probe.reachable:
        raise LaunchRefused(f"{spec.identity}: refused before anything ran\nerror EXEC009 "
                            f"{probe.problem()}\n    fix: {probe.fix()}")
    ledger = Ledger(prefix)
    try:
        world = replace(build_world(spec, ledger, repo=repo,
                                    env=os.environ if env is None else env), store_probe=probe)
        findings = list(run_preflight(spec, scope="all", world=world))
        findings += smoke_gate_findings(spec, ledger)
    except LedgerError as err:
        raise LaunchRefused(str(err)) from None
    findings = _pending_upstream(spec, findings, upstream_runs_first, say)
    if rehearsal and any(f.code in REHEARSAL_WAIVED and f.is_error for f in findings):
        findings = [f for f in findings if f.code not in REHEARSAL_WAIVED]
        say(f"rlaunch: rehearsing {spec.identity} from a launcher tree with uncommitted "
            "changes: allowed (VER004 guards real launches of a calendar version)")
    if smoke_runs_first is not None and any(f.code in SMOKE_GATE_CODES for f in findings):
        findings = [f for f in findings if f.code not in SMOKE_GATE_CODES]
        say(f"rlaunch: smoke gate of {spec.identity}: pending on {smoke_runs_first}, which is "
            f"launched before it")
    if skip_smoke_gate is not None:
        waived = [f for f in findings if f.code in SMOKE_GATE_CODES]
        findings = [f for f in findings if f.code not in SMOKE_GATE_CODES]
        if waived:
            say(f"rlaunch: smoke gate skipped for {spec.identity}: {skip_smoke_gate} "
                f"(recorded in the ledger when the launch is submitted; a dry run records "
                f"nothing)")
        elif skip_smoke_gate != CHECK_GATE_REASON:
            say(f"rlaunch: --skip-smoke-gate given, but the smoke gate does not block "
                f"{spec.identity}; the reason is recorded anyway")
    errors = [f for f in findings if f.is_error]
    if findings:
        text = format_text(findings, source, spec.identity, spec.build_sources)
        if errors:
            raise LaunchRefused(text)
        say(text)
    return Plan(spec, prefix, world.launcher_commit, tuple(findings), skip_smoke_gate)


def _pending_upstream(spec: RunSpec, findings: list[Any], upstream_runs_first: Collection[str],
                      say: Say) -> list[Any]:
    """Drop the PIPE003 findings of upstream runs launched before this one (plans only)."""
    exports = {path: identity(export) for path, export in spec.run_exports()}
    pending = [f for f in findings if f.code == UPSTREAM_FINISHED_CODE
               and exports.get(f.paths[0]) in upstream_runs_first]
    for finding in pending:
        say(f"rlaunch: {finding.paths[0]} of {spec.identity}: pending on "
            f"{exports[finding.paths[0]]}, which is launched before it")
    return [f for f in findings if f not in pending]


def default_out_path(spec: RunSpec) -> Path:
    return Path("dist") / spec.name / "launch.yaml"


@dataclass(frozen=True)
class Rendered:
    """The launch YAML of a plan, not yet written anywhere: where it will go (`path`, the
    user's copy), its text, its sha256 digest and its parsed document."""

    path: Path
    text: str
    digest: str
    document: LaunchDocument


def render(plan: Plan, out: Path | None) -> Rendered:
    """Render the launch YAML in memory: nothing is written before the launch lock is held."""
    text = render_launch(
        plan.spec, store_prefix=plan.store_prefix, launcher_commit=plan.launcher_commit
    )
    path = Path(out or default_out_path(plan.spec)).resolve()
    digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Rendered(path, text, digest, loads_launch(text, str(path)))


def attempt_copy(plan: Plan, rendered: Rendered, attempt_id: str) -> Path:
    """The immutable, content-addressed copy of the YAML the job reads: in the attempt's folder
    of a local store (else beside the user's copy), named by its digest and read-only. The job
    refuses it if its digest is not the one recorded (`LAUNCH_DIGEST_ENV`)."""
    paths = run_paths(plan.store_prefix, plan.spec.name, plan.spec.version)
    folder = (Path(paths.attempts_root) if "://" not in plan.store_prefix
              else rendered.path.parent / "attempts") / attempt_id
    copy = folder / f"launch.{rendered.digest.split(':', 1)[1][:16]}.yaml"
    write_atomically(copy, rendered.text)
    copy.chmod(0o444)
    return copy.resolve()


def materialize_inputs(plan: Plan, say: Say, *, verify: bool = False) -> None:
    """Build or reuse every input artifact in the store before the job reads it (`verify`:
    hash every file of a reused input, not only those whose identity changed); then compare
    the run's tokenizer with its models' as the store holds them (LAUNCH002, LAUNCH003): a
    run's export by its tokenizer files, else by the tokenizer its run trained with."""
    try:
        payloads = materialize(plan.spec, plan.store_prefix, verify=verify, log=say)
        payloads |= upstream_tokenizer_payloads(plan.spec, plan.store_prefix, payloads, say)
    except (BuildError, StoreError) as err:
        raise LaunchRefused(f"materializing the inputs of {plan.spec.identity} failed: {err}")
    findings = tokenizer_findings(plan.spec, payloads)
    if findings:
        text = format_text(findings, "the materialized inputs", plan.spec.identity,
                           plan.spec.build_sources)
        if any(finding.is_error for finding in findings):
            raise LaunchRefused(text)
        say(text)


def _refuse_if_running(
    ledger: Ledger, spec: RunSpec, options: ExecutorOptions, say: Say
) -> None:
    """Two jobs of one identity would write the same checkpoint root: refuse a launch while
    the previous attempt still runs. An attempt its launcher left unsettled (killed while
    submitting or following) is settled here: the launch lock is held, so no launcher is
    still working on it."""
    attempt = last_attempt(ledger.read(spec.name, spec.version))
    recorded = attempt_status(attempt)
    if not attempt or (recorded is not None and recorded.is_terminal()):
        return
    attempt_id = str(attempt.get("attempt_id"))
    if not attempt.get("submission"):
        reason = "its launcher stopped before the job was submitted"
        ledger.update(spec.name, spec.version,
                      lambda record: set_status(record, attempt_id, AttemptStatus.SUBMIT_FAILED,
                                           error=reason))
        say(f"rlaunch: {spec.identity} attempt {attempt_id} was left {attempt.get('status')}: "
            f"{reason}; recorded as {AttemptStatus.SUBMIT_FAILED}")
        return
    submission = Submission.from_dict(attempt["submission"])
    try:
        with load_executor(submission.executor, options) as executor:
            status = executor.status(submission)
    except JobLost as err:
        lost = str(err)
        ledger.update(spec.name, spec.version,
                      lambda record: set_status(record, attempt_id, AttemptStatus.LOST,
                                           error=lost))
        say(f"rlaunch: {spec.identity} attempt {attempt_id} was left {attempt.get('status')} "
            f"and its job is gone; recorded as {AttemptStatus.LOST}")
        return
    except ExecutorError:
        return  # the executor cannot tell now; nothing is known to run
    if status.is_terminal():
        record_status(ledger, spec.name, spec.version, attempt_id, status, say)
        return
    raise LaunchRefused(
        f"{spec.identity} is still {status} as job {submission.submission_id} "
        f"({submission.executor} at {submission.address}); wait for it "
        f"(`rlaunch logs {spec.identity} --follow`) or stop it (`rlaunch stop "
        f"{spec.identity}`) before launching it again"
    )


@dataclass(frozen=True, kw_only=True)
class LaunchRequest:
    """One launch as a front end asks for it (`rlaunch launch`, `@rl_build_options`, a pipeline
    or a sweep point): what to launch and how. Where its messages go is not part of it: see
    `launch`'s `echo` and `say`. `LaunchRequest(spec=spec)` is a real launch, followed to its
    end, into the spec's store, from the working directory's checkout and environment."""

    spec: RunSpec
    """The run to launch."""
    source: str = "<spec>"
    """Where the spec came from (a file, a target), as preflight's messages name it."""
    dry_run: bool = False
    """Preflight and render only: write the launch YAML, say what would run, submit nothing."""
    follow: bool = True
    """Stream the job's output to its end and record its status; False: return once submitted
    (a local head is then kept)."""
    skip_smoke_gate: str | None = None
    """Why the smoke gate (LAUNCH001) is waived; recorded in the ledger. Never blank."""
    store: str | None = None
    """The store prefix; wins over `execution.store_prefix`, which wins over the local
    default."""
    out: Path | None = None
    """Where the launch YAML is written (default `dist/<name>/launch.yaml`)."""
    keep_head: bool = False
    """local: a Ray head this launch starts outlives it and this process (released)."""
    hold_head: bool = False
    """local: a Ray head this launch starts stays up for the rest of this process, which
    launches more runs on it and stops it; if the process dies, the head's supervisor stops
    it."""
    repo: Path | None = None
    """The launcher's git checkout (default: the working directory's)."""
    env: Mapping[str, str] | None = None
    """Where credential values are read (default `os.environ`); they reach the job only."""
    smoke_runs_first: str | None = None
    """Dry runs only: the identity of a smoke of this run launched before it (an experiment
    returning both); its smoke gate is then pending instead of refused."""
    upstream_runs_first: tuple[str, ...] = ()
    """Dry runs only: the identities of runs whose export this run reads that a pipeline
    launches before it (PIPE003 is then pending)."""
    verify: bool = False
    """Hash every file of the reused inputs, not only those whose identity changed."""
    check_handoffs: bool = False
    """Submit the SkyRL adapter's `--check-handoffs` mode instead of training: the inputs are
    built, staged and checked by SkyRL's own code; nothing trains and the ledger records
    nothing."""
    rehearse: bool = False
    """Run the launch YAML through SkyRL's own training loop on this machine's CPU: the local
    executor, the rehearsal environment, the rehearsal store (`rehearsal_store`: nothing is
    recorded in the store itself), the model shrunk and a few steps (docs/rehearsal.md)."""
    on_submitted: Callable[[Submission], None] | None = None
    """Told the job's submission once the ledger holds it, from the launching thread (a sweep
    that launches points at once stops their jobs on Ctrl-C)."""


def launch(request: LaunchRequest, *, echo: Say | None = None, say: Say = _stderr) -> LaunchResult:
    """Preflight, render, submit and (with `request.follow`) follow `request.spec`. Raises
    LaunchRefused when nothing was submitted; returns the result (see
    `LaunchResult.exit_code`) otherwise. The job's output goes to `echo` (stdout by default),
    rlaunch's own messages to `say` (stderr). A local head this launch starts is stopped at its
    end, unless `keep_head` or `hold_head` is set."""
    spec, dry_run, check_handoffs = request.spec, request.dry_run, request.check_handoffs
    skip_smoke_gate, follow, rehearse = request.skip_smoke_gate, request.follow, request.rehearse
    store = request.store
    laps = Laps()
    env = dict(os.environ if request.env is None else request.env)
    echo = echo or (lambda text: print(text, end="", flush=True))
    job_python: tuple[str, str] | None = None
    if rehearse:
        if check_handoffs:
            raise LaunchRefused("--rehearse runs the handoff check before SkyRL trains; give "
                                "--rehearse or --check-handoffs, not both")
        unrehearsed = not_rehearsed(spec)
        if unrehearsed is not None:
            raise LaunchRefused(unrehearsed)
        store = rehearsal_store(spec, store)
        spec = rehearsal_spec(spec)
        skip_smoke_gate = skip_smoke_gate or REHEARSAL_GATE_REASON
        if not dry_run:
            try:
                forget_rehearsal(spec, resolve_store(spec, store)[1], say)
            except RehearsalError as err:
                raise LaunchRefused(str(err)) from None
        try:
            job_python = (REHEARSAL_PYTHON_ENV, rehearsal_python(env, say))
        except ExecutorError as err:
            raise LaunchRefused(str(err)) from None
    if check_handoffs:
        if spec.runtime.profile != "skyrl":
            raise LaunchRefused(
                f"--check-handoffs runs SkyRL's handoff check, but {spec.identity} uses the "
                f"{spec.runtime.profile!r} runtime profile (runtime {spec.runtime.name}); "
                "launch it without --check-handoffs"
            )
        # The smoke gate guards training; a check trains nothing.
        skip_smoke_gate = skip_smoke_gate or CHECK_GATE_REASON
    plan = preflight(spec, source=request.source, store=store,
                     skip_smoke_gate=skip_smoke_gate, repo=request.repo, env=env, say=say,
                     smoke_runs_first=request.smoke_runs_first if dry_run else None,
                     upstream_runs_first=request.upstream_runs_first if dry_run else (),
                     rehearsal=rehearse)
    spec = plan.spec
    rendered = render(plan, request.out)
    laps.lap("preflight")
    yaml_path, digest, document = rendered.path, rendered.digest, rendered.document
    executor_name = spec.execution.executor
    runtime_args = (CHECK_FLAG,) if check_handoffs else (REHEARSE_FLAG,) if rehearse else ()
    options = ExecutorOptions(keep_head=request.keep_head or not follow,
                              hold_head=request.hold_head, say=say,
                              runtime_args=runtime_args, job_python=job_python)
    try:
        executor = load_executor(executor_name, options)
    except ExecutorError as err:
        raise LaunchRefused(str(err)) from None
    if dry_run or executor_name == "dry-run":
        write_atomically(yaml_path, rendered.text)
        say(f"rlaunch: dry run of {spec.identity}: wrote {yaml_path} ({digest}); nothing submitted")
        try:
            for line in executor.describe(yaml_path, document):
                say(f"  {line}")
        except ExecutorError as err:
            raise LaunchRefused(str(err)) from None
        return LaunchResult(spec.identity, yaml_path, digest, dry_run=True)
    if check_handoffs:
        # Nothing is recorded for a check, so no lock: the YAML goes where the user expects it.
        write_atomically(yaml_path, rendered.text)
        with executor:
            result = _check_handoffs(plan, executor, yaml_path, digest, document, env=env,
                                     echo=echo, say=say, verify=request.verify, laps=laps)
        laps.lap("wind-down")
        return result
    ledger = Ledger(plan.store_prefix)
    lock = ledger.launch_lock(spec.name, spec.version)
    try:
        lock.acquire()
    except LedgerError as err:
        raise LaunchRefused(str(err)) from None
    try:
        write_atomically(yaml_path, rendered.text)
        with executor:
            result = _submit_and_follow(plan, executor, ledger, rendered,
                                        env=env, follow=follow, echo=echo, say=say,
                                        verify=request.verify, laps=laps,
                                        on_submitted=request.on_submitted)
    finally:
        lock.release()
    if rehearse and result.followed:
        rehearsal_report(spec, plan.store_prefix, say)
    laps.lap("wind-down")
    return result


def _check_handoffs(
    plan: Plan,
    executor: Executor,
    yaml_path: Path,
    digest: str,
    document: LaunchDocument,
    *,
    env: dict[str, str],
    echo: Say,
    say: Say,
    verify: bool,
    laps: Laps,
) -> LaunchResult:
    """Build the inputs, submit the adapter's check mode, follow it to its end. The job gets
    the run's credentials, as a training job would: staging reads the store with them."""
    spec = plan.spec
    try:
        executor.prepare(document)
    except ExecutorError as err:
        raise LaunchRefused(str(err)) from None
    materialize_inputs(plan, say, verify=verify)
    laps.lap("inputs")
    raise_if_interrupted()
    attempt_id = f"check-{new_attempt_id()}"
    credentials = credential_values(spec.execution.credentials, env)
    try:
        submission = executor.submit(yaml_path, document, attempt_id=attempt_id,
                                     env={**credentials, LAUNCH_DIGEST_ENV: digest})
    except ExecutorError as err:
        raise LaunchRefused(str(err)) from None
    laps.lap("head and submission")
    say(f"rlaunch: checking the handoffs of {spec.identity} as {submission.submission_id} "
        f"({submission.executor} at {submission.address}); nothing trains")
    try:
        raise_if_interrupted()  # one the submission request deferred: the job is stopped
        status = follow_job(executor, submission, echo=echo,
                            redact=Redactor(credentials.values()), files=None)
    except KeyboardInterrupt:
        status = _settle(executor, submission, say, stop=True)
        return LaunchResult(spec.identity, yaml_path, digest, False, submission, status,
                            interrupted=True, followed=True)
    laps.lap("job")
    say(f"rlaunch: handoff check of {spec.identity}: "
        f"{'passed' if status == AttemptStatus.SUCCEEDED else f'FAILED ({status})'}")
    return LaunchResult(spec.identity, yaml_path, digest, False, submission, status,
                        followed=True, laps=laps)


def _submit_and_follow(
    plan: Plan,
    executor: Executor,
    ledger: Ledger,
    rendered: Rendered,
    *,
    env: dict[str, str],
    follow: bool,
    echo: Say,
    say: Say,
    verify: bool,
    laps: Laps,
    on_submitted: Callable[[Submission], None] | None,
) -> LaunchResult:
    spec = plan.spec
    _refuse_if_running(ledger, spec, executor.options, say)
    # The executor gets ready (a local head starts) while the inputs build.
    try:
        executor.prepare(rendered.document)
    except ExecutorError as err:
        raise LaunchRefused(f"{err}; nothing was built, recorded or submitted") from None
    try:
        materialize_inputs(plan, say, verify=verify)
        laps.lap("inputs")
        try:
            consumed = consumed_exports(spec, plan.store_prefix)
        except (BuildError, StoreError, LedgerError) as err:
            raise LaunchRefused(f"recording the run exports {spec.identity} reads failed: {err}")
        attempt_id = new_attempt_id()
        job_yaml = attempt_copy(plan, rendered, attempt_id)
        raise_if_interrupted()
    except KeyboardInterrupt:
        # Up to here no attempt is recorded (the inputs, the exports they read, the attempt's
        # copy of the YAML); the executor stops the head it was starting.
        say(f"rlaunch: interrupted while the inputs of {spec.identity} were built; nothing was"
            " submitted")
        return LaunchResult(spec.identity, rendered.path, rendered.digest, False,
                            interrupted=True)
    yaml_path, digest, document = rendered.path, rendered.digest, rendered.document
    smoke_of = f"{spec.smoke_of.name}@{spec.smoke_of.version}" if spec.smoke_of else None
    credentials = credential_values(spec.execution.credentials, env)
    files = AttemptFiles(run_paths(plan.store_prefix, spec.name, spec.version).attempts_root,
                         attempt_id)
    # One try from the attempt's record to the job's end, so that a Ctrl-C anywhere in it is
    # handled by what it interrupted: a submission (recorded as failed) or a job (stopped).
    recorded = False
    submission: Submission | None = None
    status: AttemptStatus | None = None
    interrupted = False
    try:
        with interrupts_held():
            ledger.update(spec.name, spec.version, lambda record: start_attempt(
                record, attempt_id=attempt_id, fingerprint=spec.fingerprint,
                runtime_fingerprint=spec.runtime_fingerprint, geometry=role_geometry(spec),
                launcher_commit=plan.launcher_commit, yaml_digest=digest,
                yaml_path=str(job_yaml), smoke_of=smoke_of,
                skip_smoke_gate=plan.skip_smoke_gate, run_exports=consumed,
                runtime_pin=spec.runtime.pin_label,
                fingerprint_beside_runtime=spec.fingerprint_beside_runtime))
            recorded = True  # a Ctrl-C in the block waits for its end
        # The job checks the YAML it reads against the digest recorded above.
        submission = executor.submit(job_yaml, document, attempt_id=attempt_id,
                                     env={**credentials, LAUNCH_DIGEST_ENV: digest})
        submitted = submission.to_dict()
        with interrupts_held():
            ledger.update(spec.name, spec.version,
                          lambda record: set_submission(record, attempt_id, submitted))
            files.write_submission(submission)
        if on_submitted is not None:
            on_submitted(submission)
        laps.lap("head and submission")
        say(f"rlaunch: submitted {spec.identity} as {submission.submission_id} "
            f"({submission.executor} at {submission.address}); attempt {attempt_id}")
        if not follow:
            say(f"rlaunch: detached; follow with `rlaunch logs {spec.identity} --follow`")
            return LaunchResult(spec.identity, yaml_path, digest, False, submission,
                                AttemptStatus.PENDING)
        status = follow_job(executor, submission, echo=echo,
                            redact=Redactor(credentials.values()), files=files)
    except ExecutorError as err:
        if submission is not None:
            say(f"rlaunch: lost the job's log stream ({err}); asking for its status")
            status = _settle(executor, submission, say, stop=False)
        else:
            _record_submit_failed(ledger, spec, attempt_id, str(err))
            raise LaunchRefused(str(err)) from None
    except KeyboardInterrupt:
        if not recorded:
            say(f"rlaunch: interrupted before an attempt of {spec.identity} was recorded; "
                "nothing was submitted")
            return LaunchResult(spec.identity, yaml_path, digest, False, interrupted=True)
        if submission is None:
            # E.g. while the local head starts: it is stopped (by the executor), no job was
            # made.
            _record_submit_failed(ledger, spec, attempt_id,
                                  "interrupted (Ctrl-C) while submitting")
            say(f"rlaunch: interrupted while submitting {spec.identity}; attempt {attempt_id} "
                f"recorded as {AttemptStatus.SUBMIT_FAILED}")
            return LaunchResult(spec.identity, yaml_path, digest, False, interrupted=True)
        say(f"rlaunch: interrupted; stopping job {submission.submission_id}")
        status = _settle(executor, submission, say, stop=True)
        interrupted = True
    laps.lap("job")
    runtime_timings = None
    if status is not None:
        record_status(ledger, spec.name, spec.version, attempt_id, status, say)
        if status == AttemptStatus.SUCCEEDED:
            runtime_timings = _runtime_timings(ledger, spec.name, spec.version, attempt_id)
    return LaunchResult(spec.identity, yaml_path, digest, False, submission, status, interrupted,
                        followed=True, laps=laps, runtime_timings=runtime_timings)


def _record_submit_failed(ledger: Ledger, spec: RunSpec, attempt_id: str, reason: str) -> None:
    with interrupts_held():
        ledger.update(spec.name, spec.version, lambda record: set_status(
            record, attempt_id, AttemptStatus.SUBMIT_FAILED, error=reason))


def _runtime_timings(ledger: Ledger, name: str, version: str,
                     attempt_id: str) -> Mapping[str, float] | None:
    """The job's phases as its terminal manifest gives them (the smoke runtime writes them)."""
    manifest = read_terminal_manifest(ledger.prefix, name, version) or {}
    timings = (manifest.get("metrics") or {}).get("timings_s")
    if manifest.get("attempt_id") != attempt_id or not isinstance(timings, list):
        return None
    return {str(pair[0]): float(pair[1]) for pair in timings
            if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], (int, float))}


def follow_job(
    executor: Executor,
    submission: Submission,
    *,
    echo: Say,
    redact: Redactor,
    files: AttemptFiles | None,
) -> AttemptStatus:
    """Stream the job's output to its end; meanwhile its training steps and staged bytes show
    as bars on a terminal (`job_progress`)."""
    with progress_board() as board:
        return stream(executor, submission, echo=echo, redact=redact, files=files,
                      watch=JobProgress(board).feed)


def _settle(
    executor: Executor, submission: Submission, say: Say, *, stop: bool
) -> AttemptStatus | None:
    """Stop (if asked) and wait for the job's end; None when the executor cannot tell."""
    try:
        if stop:
            executor.stop(submission)
        return wait_job(executor, submission, 30.0)
    except ExecutorError as err:
        say(f"rlaunch: the status of {submission.submission_id} is unknown: {err}")
        return None


def _record_wandb_url(ledger: Ledger, name: str, version: str, attempt_id: str,
                      say: Say) -> None:
    """The W&B run URL the runtime reported in its terminal manifest, into the attempt."""
    manifest = read_terminal_manifest(ledger.prefix, name, version) or {}
    url = manifest.get("wandb_url")
    if not isinstance(url, str) or manifest.get("attempt_id") not in (None, attempt_id):
        return
    ledger.update(name, version, lambda r: set_wandb_url(r, attempt_id, url))
    say(f"rlaunch: {name}@{version} attempt {attempt_id}: W&B run {url}")


def record_status(
    ledger: Ledger, name: str, version: str, attempt_id: str, status: AttemptStatus, say: Say
) -> None:
    """Write an observed status into the ledger (launch, `rlaunch status` and `stop` do); a
    smoke that SUCCEEDED is recorded for its full run."""
    record = ledger.update(name, version, lambda r: set_status(r, attempt_id, status))
    say(f"rlaunch: {name}@{version} attempt {attempt_id}: {status}")
    if status == AttemptStatus.SUCCEEDED:
        _record_wandb_url(ledger, name, version, attempt_id, say)
    if status != AttemptStatus.SUCCEEDED or not record.get("smoke_of"):
        return
    if record_smoke_success(ledger, record, attempt_id) is None:
        say(f"rlaunch: smoke {name}@{version} exited 0 but wrote no terminal manifest; "
            f"not recorded as a smoke of {record['smoke_of']}")
    else:
        say(f"rlaunch: recorded {name}@{version} as a successful smoke of {record['smoke_of']}")
