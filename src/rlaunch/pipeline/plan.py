"""The plan of a pipeline: every run a terminal stage needs, upstream first, each marked launch
or reuse with the reason, and the artifacts the launches build or reuse.

A stage is reused when its last attempt SUCCEEDED with the fingerprint it has now (a calendar
stage runs once; a dev one is not relaunched while it is finished and unchanged). A stage is
launched when it has not finished, or when a run whose export it reads is launched now (its
input changes), or when it finished but read another export of that run than the store holds
now (the run was launched again on its own since; the attempt records what it read, its
ledger `run_exports`). A calendar stage in either case is refused (bump its version). A stage
relaunched for its input may not resume checkpoints (`resume.mode latest`): they were trained
from the previous export, so the plan refuses it before stage 1 is trained again only to have
the stage's runtime refuse them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rlaunch.builders.base import AnyArtifact, BuildError
from rlaunch.builders.rules import graph_order
from rlaunch.builders.run_export import export_content_now
from rlaunch.launch import LaunchRefused, resolve_store
from rlaunch.ledger import Ledger, LedgerError, last_attempt
from rlaunch.ledger.stages import stage_state
from rlaunch.paths import LATEST_CHECKPOINT_FILE, join, run_paths
from rlaunch.spec import RunExport, RunSpec, fingerprint, identity
from rlaunch.spec.syntax import is_calendar, is_dev
from rlaunch.store import ArtifactStore, StoreError
from rlaunch.store.fs import open_location


@dataclass(frozen=True)
class Stage:
    spec: RunSpec
    action: Literal["launch", "reuse"]
    reason: str


def stage_specs(*terminals: RunSpec) -> list[RunSpec]:
    """The runs the terminals read the exports of, transitively, upstream first; then the
    terminals themselves, each once."""
    ordered: dict[str, RunSpec] = {}

    def visit(spec: RunSpec) -> None:
        for _, export in spec.run_exports():
            if identity(export) not in ordered:
                visit(export.run)
        ordered.setdefault(spec.identity, spec)

    for terminal in terminals:
        visit(terminal)
    return list(ordered.values())


def artifact_runs(artifact: AnyArtifact) -> list[RunSpec]:
    """The runs whose exports an artifact's graph reads (an eval stage's model), in order."""
    return [node.run for node in graph_order([artifact]) if isinstance(node, RunExport)]


def _ledger(spec: RunSpec, store: str | None) -> Ledger:
    return Ledger(resolve_store(spec, store)[1])


def _checkpoint_pointer(spec: RunSpec, store: str | None) -> str | None:
    """The stage's latest-checkpoint pointer when its root holds one (None: no checkpoint, or
    the root cannot be looked at from here; the runtime then checks what its root records)."""
    root = run_paths(resolve_store(spec, store)[1], spec.name, spec.version).checkpoint_root
    try:
        location = open_location(root)
        pointer = join(location.root, LATEST_CHECKPOINT_FILE)
        return pointer if location.fs.exists(pointer) else None
    except (StoreError, OSError):
        return None


def _refuse_stale_resume(spec: RunSpec, store: str | None, why: str | None) -> None:
    """`why`: what the checkpoints were trained from that the stage no longer reads."""
    if why is None or spec.resume.mode != "latest":
        return
    pointer = _checkpoint_pointer(spec, store)
    if pointer is None:
        return
    raise LaunchRefused(
        f"{spec.identity} would resume its checkpoints (resume.mode latest; {pointer}), but "
        f"{why}. Set resume.mode none on {spec.name} to start over from the new export, or "
        f"launch it under a new version"
    )


def _short(content: str | None) -> str:
    return f"{content[:19]}…" if content else "no export"


def _read_elsewhere(spec: RunSpec, store: str | None,
                    attempt: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The exports a finished stage read that are not those in the store now (each as
    `X (content a…, now b…)`), and the runs whose export it read is not on record."""
    prefix = resolve_store(spec, store)[1]
    recorded = attempt.get("run_exports")
    changed: list[str] = []
    unknown: list[str] = []
    for export in {identity(export): export for _, export in spec.run_exports()}.values():
        consumed = recorded.get(identity(export)) if isinstance(recorded, dict) else None
        if not isinstance(consumed, dict) or not consumed.get("content"):
            unknown.append(identity(export))
            continue
        try:
            now = export_content_now(prefix, export, consumed)
        except (BuildError, LedgerError, StoreError, OSError) as err:
            raise LaunchRefused(f"{spec.identity}: reading the export of {identity(export)} "
                                f"failed: {err}") from None
        if now != consumed["content"]:
            changed.append(f"{identity(export)} (content {_short(consumed['content'])}, now "
                           f"{_short(now)})")
    return changed, unknown


def _finished(spec: RunSpec, store: str | None, finished: str,
              attempt: Mapping[str, Any]) -> tuple[str, str | None]:
    """A finished stage none of whose inputs is launched now: the plan's reason, and why its
    checkpoints are stale when it is launched again for another export (None: reused)."""
    calendar = is_calendar(spec.version)
    changed, unknown = _read_elsewhere(spec, store, attempt)
    if changed and calendar:
        raise LaunchRefused(
            f"{spec.identity} finished, and a calendar stage runs once, but it was trained from "
            f"another export of {', '.join(changed)}: launched again since; bump the version "
            f"of {spec.name}"
        )
    if changed:
        elsewhere = f"another export of {', '.join(changed)}"
        return (f"finished, but trained from {elsewhere}",
                f"they were trained from {elsewhere}, launched again since")
    reason = finished + (" (a calendar stage runs once)" if calendar else "")
    if unknown:
        reason += (f"; its attempt does not record which export of {', '.join(unknown)} it "
                   f"read (recorded before rlaunch kept that), so it is reused unchecked")
    return reason, None


def plan_pipeline(terminals: Sequence[RunSpec], store: str | None) -> list[Stage]:
    stages: list[Stage] = []
    launched: set[str] = set()
    for spec in stage_specs(*terminals):
        try:
            record = _ledger(spec, store).read(spec.name, spec.version)
        except LedgerError as err:
            raise LaunchRefused(f"{spec.identity}: {err}") from None
        state = stage_state(record, spec.fingerprint)
        relaunched = [identity(export) for _, export in spec.run_exports()
                      if identity(export) in launched]
        stale: str | None = None
        if relaunched and state.finished and is_calendar(spec.version):
            raise LaunchRefused(
                f"{spec.identity} finished, and a calendar stage runs once, but it reads the "
                f"export of {', '.join(relaunched)}, which is launched again now; bump the "
                f"version of {spec.name}"
            )
        if relaunched:
            stale = (f"it reads the export of {', '.join(relaunched)}, which is launched again "
                     f"now: they were trained from the previous export")
            reason = (f"finished, but reads the export of {', '.join(relaunched)}, launched "
                      f"again now" if state.finished else state.reason)
        elif state.finished:
            reason, stale = _finished(spec, store, state.reason, last_attempt(record) or {})
        else:
            reason = state.reason
        stages.append(Stage(spec, "launch" if stale or not state.finished else "reuse", reason))
        if stages[-1].action == "launch":
            _refuse_stale_resume(spec, store, stale)
            launched.add(spec.identity)
    return stages


def artifact_lines(stages: list[Stage], store: str | None) -> list[str]:
    """`build` / `reuse` of every artifact (but run exports) the launched stages read."""
    lines: list[str] = []
    seen: set[str] = set()
    for stage in stages:
        if stage.action != "launch":
            continue
        prefix = resolve_store(stage.spec, store)[1]
        roots = [a for a in stage.spec.slots().values() if not isinstance(a, RunExport)]
        for artifact in graph_order(roots):
            ident = identity(artifact)
            if ident in seen or isinstance(artifact, RunExport):
                continue
            seen.add(ident)
            lines.append(f"  {_artifact_action(artifact, prefix)}")
    return lines


def _artifact_action(artifact: AnyArtifact, prefix: str) -> str:
    ident = identity(artifact)
    if is_dev(artifact.version):
        return f"build   {ident}: a dev version is rebuilt by each launch"
    try:
        record = ArtifactStore(prefix).read_record(artifact.name, artifact.version, verify=False)
    except StoreError as err:
        return f"build   {ident}: its record cannot be read ({err})"
    if record is None:
        return f"build   {ident}: not in the store"
    if record.fingerprint != fingerprint(artifact):
        return (f"refused {ident}: built with fingerprint {record.fingerprint}, this spec gives "
                f"{fingerprint(artifact)} (bump its version)")
    return f"reuse   {ident}: built, same fingerprint"


def describe(title: str, stages: list[Stage], store: str | None,
             line: Callable[[str], None]) -> None:
    total = len(stages)
    launching = sum(stage.action == "launch" for stage in stages)
    line(f"pipeline of {title}: {total} run(s), upstream first; {launching} to "
         f"launch, {total - launching} reused")
    for text in artifact_lines(stages, store):
        line(text)
    for index, stage in enumerate(stages, start=1):
        line(f"  {stage.action:<7} [{index}/{total}] {stage.spec.identity}: {stage.reason}")
