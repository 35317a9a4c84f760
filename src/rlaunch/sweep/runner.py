"""Launching the points of a sweep through the one submission path (`rlaunch.launch.launch`).

Smokes first (one per distinct geometry: a full point's smoke gate may wait on it), then the
points, in the order declared. On the local executor the points run one after another on one Ray
head, kept between them and stopped at the end if the sweep started it; on a remote executor up
to `max_parallel` run at once. Each point is launched exactly as `rlaunch launch` would launch it
alone, so a sweep refuses nothing that a launch of the point would accept. Job output goes to each
attempt's job.log (`rlaunch logs NAME@VERSION`); the sweep prints one line per point on stdout
as it starts and ends, and rlaunch's own messages (builds, the head, preflight warnings) on
stderr, each tagged with its point.

Ctrl-C (or SIGTERM) stops the sweep: no point starts after it. A point launched one after
another handles it as `rlaunch launch` does (its job stopped and recorded). With points at
once, the sweep stops every job they submitted, before or after the Ctrl-C, through its
executor; each launch then records its job as stopped. A second Ctrl-C while it waits for that
leaves at once, naming the points whose jobs may still run.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from rlaunch.executors import (
    ExecutorError,
    ExecutorOptions,
    Submission,
    load_executor,
    local_head,
)
from rlaunch.interrupts import interrupts_seen
from rlaunch.launch import (
    EXIT_INTERRUPTED,
    LaunchRefused,
    LaunchRequest,
    launch,
    resolve_store,
)
from rlaunch.ledger.ledger import Ledger
from rlaunch.ledger.smoke import recorded_smoke_success, share_smoke_result
from rlaunch.preflight.launch_checks.smoke_gate import smoke_mismatch
from rlaunch.progress import progress
from rlaunch.spec import RunSpec
from rlaunch.status import AttemptStatus
from rlaunch.view import RunStore, ViewError, summarize

SEQUENTIAL_EXECUTORS = frozenset({"local"})
"""Executors whose runs share one machine's head: its GPUs hold one run at a time."""

Line = Callable[[str], None]
DRY_RUN = "dry-run"


@dataclass(frozen=True)
class SweepPoint:
    source: str
    """Where the spec came from (its file), for messages."""
    spec: RunSpec


@dataclass(frozen=True)
class PointOutcome:
    identity: str
    status: str
    """SUCCEEDED, FAILED, STOPPED, refused, interrupted or dry-run."""
    exit_code: int


def launch_order(points: Sequence[SweepPoint]) -> list[SweepPoint]:
    """Smokes first, then the full points, each group in declared order."""
    return ([p for p in points if p.spec.smoke_of is not None]
            + [p for p in points if p.spec.smoke_of is None])


def parallelism(points: Sequence[SweepPoint], max_parallel: int) -> int:
    if any(p.spec.execution.executor in SEQUENTIAL_EXECUTORS for p in points):
        return 1
    return max(1, max_parallel)


def result_line(spec: RunSpec, store: str | None, status: str, seconds: float) -> str:
    text = f"{spec.identity}: {status} in {seconds:.0f} s"
    try:
        summary = summarize(RunStore(resolve_store(spec, store)[1]), spec.name, spec.version)
    except (ViewError, LaunchRefused):
        return text
    if summary.reward_first is not None and summary.reward_last is not None:
        text += (f" | {summary.steps} steps, reward {summary.reward_first:.3f} -> "
                 f"{summary.reward_last:.3f}")
    if summary.eval_reward is not None:
        text += f", eval {summary.eval_reward:.3f}"
    if status != "SUCCEEDED":
        text += f" | rlaunch logs {spec.identity}"
    return text


class PointLauncher:
    def __init__(self, *, total: int, out_dir: Path, store: str | None, repo: Path | None,
                 line: Line, say: Line, advance: Callable[..., None],
                 rehearse: bool = False) -> None:
        self.total = total
        self.rehearse = rehearse
        self.out_dir = out_dir
        self.store = store
        self.repo = repo
        self.line = line
        self.say = say
        self.advance = advance
        self.done = 0
        self.interrupted = False
        """Ctrl-C came: no point starts after it."""
        self._submitted: dict[str, Submission] = {}
        """The jobs of the points launched at once, by identity, as their launches record
        them (`launch_group` stops them on Ctrl-C)."""
        self._stopped: set[str] = set()
        self._lock = threading.Lock()

    def launch_point(self, index: int, point: SweepPoint) -> PointOutcome:
        spec = point.spec
        tag = f"[{index}/{self.total}]"
        if self.interrupted:
            return PointOutcome(spec.identity, "interrupted", EXIT_INTERRUPTED)
        self.line(f"{tag} {spec.identity}: launching")
        started = time.monotonic()
        try:
            request = LaunchRequest(spec=spec, source=point.source, follow=True,
                                    store=self.store, hold_head=True, repo=self.repo,
                                    out=self.out_dir / spec.name / "launch.yaml",
                                    rehearse=self.rehearse,
                                    on_submitted=lambda job: self._record(spec.identity, job))
            result = launch(request, echo=lambda text: None,
                            say=lambda text: self.say(f"{tag} {text}"))
        except LaunchRefused as err:
            self.line(f"{tag} {spec.identity}: refused\n" + _indent(str(err)))
            self.advance(1)
            return PointOutcome(spec.identity, "refused", err.exit_code)
        if result.interrupted:
            self.interrupted = True
            self.line(f"{tag} {spec.identity}: interrupted")
            return PointOutcome(spec.identity, "interrupted", result.exit_code)
        if result.dry_run:
            self.line(f"{tag} {spec.identity}: dry run, nothing submitted ({result.yaml_path})")
            self.advance(1)
            return PointOutcome(spec.identity, DRY_RUN, result.exit_code)
        status = str(result.status) if result.status is not None else "unknown"
        if result.status == AttemptStatus.STOPPED and spec.identity in self._stopped:
            self.line(f"{tag} {spec.identity}: interrupted (its job stopped by the sweep)")
            return PointOutcome(spec.identity, "interrupted", EXIT_INTERRUPTED)
        self.line(f"{tag} " + result_line(spec, self.store, status,
                                           time.monotonic() - started))
        self.advance(1)
        return PointOutcome(spec.identity, status, result.exit_code)

    def _record(self, identity: str, submission: Submission) -> None:
        with self._lock:
            self._submitted[identity] = submission

    def launch_group(self, group: Sequence[tuple[int, SweepPoint]],
                     workers: int) -> list[PointOutcome]:
        if workers == 1:
            return [self.launch_point(index, point) for index, point in group]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self.launch_point, index, point) for index, point in group]
            seen = interrupts_seen()
            try:
                while wait(futures, timeout=0.5).not_done:
                    if interrupts_seen() != seen:
                        raise KeyboardInterrupt  # deferred: raised in the point that held it
            except KeyboardInterrupt:
                self.interrupted = True
                self._stop_jobs(futures, [point for _, point in group])
        return [future.result() for future in futures]

    def _stop_jobs(self, futures: list[Future[PointOutcome]], points: list[SweepPoint]) -> None:
        """After a Ctrl-C: stop every job the points submitted, including those submitted
        after it, until every point's launch has ended (and recorded its job's end); a second
        Ctrl-C leaves at once."""
        running = [p.spec.identity for f, p in zip(futures, points) if not f.done()]
        self.say(f"sweep: interrupted; stopping the jobs of {len(running)} point(s) still "
                 f"running: {', '.join(running)}")
        seen = interrupts_seen()
        try:
            while True:
                pending = {p.spec.identity for f, p in zip(futures, points) if not f.done()}
                with self._lock:
                    due = [(identity, job) for identity, job in self._submitted.items()
                           if identity in pending and identity not in self._stopped]
                    self._stopped.update(identity for identity, _ in due)
                for identity, job in due:
                    self._stop(identity, job)
                if not wait(futures, timeout=0.5).not_done:
                    return
                if interrupts_seen() != seen:
                    raise KeyboardInterrupt
        except KeyboardInterrupt:
            left = [p.spec.identity for f, p in zip(futures, points) if not f.done()]
            self.say(f"sweep: a second Ctrl-C: leaving now; the jobs of {', '.join(left)} may "
                     "still run (`rlaunch status NAME@VERSION`, `rlaunch stop NAME@VERSION`)")
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)  # the launch threads would hold the exit until they end

    def _stop(self, identity: str, submission: Submission) -> None:
        try:
            with load_executor(submission.executor, ExecutorOptions(say=self.say)) as executor:
                executor.stop(submission)
        except ExecutorError as err:
            self.say(f"sweep: could not stop the job of {identity} ({submission.submission_id})"
                     f": {err}; `rlaunch stop {identity}`")
            return
        self.say(f"sweep: stopping {identity} ({submission.submission_id})")


def _ledger(spec: RunSpec, store: str | None) -> Ledger:
    return Ledger(resolve_store(spec, store)[1])


def share_smokes(smokes: Sequence[tuple[SweepPoint, PointOutcome]],
                 points: Sequence[SweepPoint], *, store: str | None, say: Line) -> None:
    """Record each smoke that succeeded for every full point it stands for, not only for its
    `smoke_of`: the points of the same role geometry and runtime fingerprint, which the smoke
    gate (LAUNCH001) checks again when each point launches. So a calendar-versioned sweep
    launches all its points after one smoke per geometry."""
    for smoke, outcome in smokes:
        if outcome.status != "SUCCEEDED" or smoke.spec.smoke_of is None:
            continue
        full_name, full_version = smoke.spec.smoke_of.name, smoke.spec.smoke_of.version
        full = f"{full_name}@{full_version}"
        try:
            result = recorded_smoke_success(_ledger(smoke.spec, store), smoke.spec.identity,
                                            full_name, full_version)
        except LaunchRefused:
            continue
        if result is None:
            continue
        for point in points:
            spec = point.spec
            if spec.identity == full or smoke_mismatch(result, spec) is not None:
                continue
            try:
                ledger = _ledger(spec, store)
            except LaunchRefused:
                continue  # its launch refuses it and says why
            share_smoke_result(ledger, dict(result, shared_from=full), spec.name, spec.version)
            say(f"rlaunch: recorded {smoke.spec.identity} as a successful smoke of "
                f"{spec.identity} too (same role geometry and runtime fingerprint as {full})")


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def run_sweep(
    points: Sequence[SweepPoint],
    *,
    out_dir: Path,
    store: str | None,
    repo: Path | None,
    max_parallel: int,
    line: Line,
    say: Line,
) -> list[PointOutcome]:
    """Launch every point (smokes first); one line per point as it starts and as it ends."""
    ordered = launch_order(points)
    workers = parallelism(ordered, max_parallel)
    state_dir = local_head.default_state_dir()
    previous_head = local_head.read_record(state_dir)
    outcomes: list[PointOutcome] = []
    try:
        with progress("sweep", total=len(ordered)) as advance:
            sweep = PointLauncher(total=len(ordered), out_dir=out_dir, store=store, repo=repo,
                           line=line, say=say, advance=advance)
            numbered = list(enumerate(ordered, start=1))
            smokes = [n for n in numbered if n[1].spec.smoke_of is not None]
            fulls = [n for n in numbered if n[1].spec.smoke_of is None]
            outcomes += sweep.launch_group(smokes, workers)
            share_smokes(list(zip([point for _, point in smokes], outcomes)),
                         [point for _, point in fulls], store=store, say=say)
            outcomes += sweep.launch_group(fulls, workers)
    finally:
        local_head.stop_if_started_since(previous_head, state_dir, say)
    return outcomes
