"""Versions: syntax, immutability of calendar versions, runtime changes under a checkpoint root,
and a clean launcher tree for calendar versions."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rlaunch.paths import run_paths
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.syntax import CALENDAR, is_calendar, is_dev, next_calendar
from rlaunch.status import AttemptStatus

OLD_FINGERPRINT = "sha256:" + "0" * 64
OTHER_RUNTIME = "sha256:" + "1" * 64


def _version_problem(version: str) -> str | None:
    if is_calendar(version) or is_dev(version):
        return None
    if CALENDAR.fullmatch(version):
        return "is not a real date"
    return (
        "is neither a calendar version (YYYY.MM.DD or YYYY.MM.DD.N, a real date) nor dev or"
        " <label>-dev"
    )


@rule(
    "VER001",
    "Versions are calendar (YYYY.MM.DD[.N], a real date), dev or LABEL-dev.",
    example=Example(edits={"version": "2026.02.30"}),
    reads_plan=False,
)
def version_syntax(check: Check) -> Iterator[Finding]:
    spec = check.spec
    versions = [("version", spec.version)]
    versions += [(f"{path}.version", artifact.version) for path, artifact in check.artifacts]
    if spec.smoke_of is not None:
        versions.append(("smoke_of.version", spec.smoke_of.version))
    for path, version in versions:
        problem = _version_problem(version)
        if problem is not None:
            yield error(
                "VER001", (path,), f"{path} {version!r} {problem}",
                f"Set {path} to a calendar version such as 2026.11.29 (immutable once launched)"
                " or dev / <label>-dev (rebuilt every time).",
            )


@rule(
    "VER002",
    "A calendar version launched before keeps its fingerprint (else: bump the version).",
    scope="world",
    example=Example(
        world={
            "ledger": {
                "fingerprint": OLD_FINGERPRINT, "runtime_fingerprint": OTHER_RUNTIME,
                "status": "succeeded",
            }
        }
    ),
)
def calendar_immutable(check: Check) -> Iterator[Finding]:
    spec, world = check.spec, check.world
    if world is None or not is_calendar(spec.version):
        return
    record = world.ledger(spec.name, spec.version)
    if record is None:
        return
    recorded = record.get("fingerprint")
    if recorded is None:
        return  # a record that was never launched fixes nothing
    current = spec.fingerprint
    attempt = _last_launched_attempt(record)
    if attempt is not None and attempt["fingerprint"] != recorded:
        launched_fp = attempt["fingerprint"]
        spec_is = ("this spec's fingerprint too" if launched_fp == current else
                   f"this spec's fingerprint is {current}")
        yield error(
            "VER002", ("version",),
            f"the ledger record of {spec.identity} was edited by hand or damaged: it records"
            f" fingerprint {recorded}, but its last attempt {attempt.get('attempt_id')} was"
            f" launched with {launched_fp} ({spec_is})",
            f"Restore the record's fingerprint to {launched_fp}; if this spec's content changed"
            f" since that launch, also bump the version to {next_calendar(spec.version)}.",
        )
    elif recorded != current and not _only_the_runtime_changed(spec, record):
        yield error(
            "VER002", ("version",),
            f"{spec.identity} was launched before (status {record.get('status', 'unknown')})"
            f" with fingerprint {recorded}; this spec's fingerprint is {current}, and a calendar"
            " version is immutable",
            f"Bump the version to {next_calendar(spec.version)} (or restore the launched spec).",
        )


def _only_the_runtime_changed(spec: Any, record: Mapping[str, Any]) -> bool:
    """Whether the record was launched on another runtime with everything else as this spec has
    it (the fingerprint beside the runtime, recorded since it exists): an upgrade, which VER006
    judges, not VER002."""
    beside = record.get("fingerprint_beside_runtime")
    return (record.get("runtime_fingerprint") not in (None, spec.runtime_fingerprint)
            and beside is not None and beside == spec.fingerprint_beside_runtime)


def _last_launched_attempt(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The last attempt that records a fingerprint: the record's own `fingerprint` is a copy of
    it (rlaunch.ledger.records.start_attempt), so the two differ only after a hand edit."""
    attempts = record.get("attempts")
    if not isinstance(attempts, list):
        return None
    for attempt in reversed(attempts):
        if isinstance(attempt, Mapping) and isinstance(attempt.get("fingerprint"), str):
            return attempt
    return None


@rule(
    "VER003",
    "resume latest never loads a checkpoint root written by another runtime (unless declared).",
    scope="world",
    example=Example(world={"checkpoint_runtime": OTHER_RUNTIME}),
)
def checkpoint_runtime_matches(check: Check) -> Iterator[Finding]:
    spec, world = check.spec, check.world
    prefix = check.store_prefix
    if world is None or prefix is None or spec.resume.mode != "latest":
        return
    root = run_paths(prefix, spec.name, spec.version).checkpoint_root
    recorded = world.checkpoint_runtime(root)
    current = spec.runtime_fingerprint
    if recorded is None or recorded == current or recorded in spec.resume.compatible_runtimes:
        return
    yield error(
        "VER003", ("resume.mode", "runtime", "resume.compatible_runtimes"),
        f"resume.mode latest would load {root}, written by runtime {recorded}, but this run's"
        f" runtime {spec.runtime.name} is {current}",
        "List the old fingerprint in resume.compatible_runtimes if its checkpoints load in this"
        f" runtime, set resume.mode to none, or bump the version to"
        f" {next_calendar(spec.version)} for a fresh root.",
    )


@rule(
    "VER006",
    "A calendar version launched on one runtime moves to another only with checkpoint"
    " compatibility stated (else: a fresh version).",
    scope="world",
    example=Example(
        world={
            "ledger": {
                "fingerprint": OLD_FINGERPRINT, "runtime_fingerprint": OTHER_RUNTIME,
                "runtime_pin": "skyrl==0.2.9", "status": "FAILED",
            }
        }
    ),
)
def runtime_change_is_a_fresh_version(check: Check) -> Iterator[Finding]:
    """Error. DESIGN.md, "Releases are data": an upgrade is a runtime change, so a fresh
    version, unless the spec states checkpoint compatibility (`resume.compatible_runtimes` lists
    the runtime the version was launched on); then VER003 still refuses to resume from a
    checkpoint root written by any runtime the list does not name."""
    spec, world = check.spec, check.world
    if world is None or not is_calendar(spec.version):
        return
    record = world.ledger(spec.name, spec.version)
    if record is None or record.get("fingerprint") is None:
        return
    launched = record.get("runtime_fingerprint")
    current = spec.runtime_fingerprint
    if launched is None or launched == current or launched in spec.resume.compatible_runtimes:
        return
    before = record.get("runtime_pin") or "another runtime"
    now = spec.runtime.pin_label
    yield error(
        "VER006", ("version", "runtime", "resume.compatible_runtimes"),
        f"{spec.identity} was launched on {before} (runtime {launched}); this spec pins {now}"
        f" (runtime {current}): a runtime change is a fresh version, and the spec states no"
        " checkpoint compatibility with the runtime it was launched on",
        f"Bump the version to {next_calendar(spec.version)} (a fresh checkpoint root;"
        f" `rlaunch upgrade-check` lists what {now} changes), or, if the checkpoints {before}"
        f" wrote load in {now}, state it: resume.compatible_runtimes: [\"{launched}\"].",
    )


@rule(
    "VER004",
    "A calendar version is launched from a clean launcher tree (unknown: warning).",
    scope="world",
    example=Example(world={"git_dirty": True, "launcher_commit": "4" * 40}),
)
def clean_launcher(check: Check) -> Iterator[Finding]:
    spec, world = check.spec, check.world
    if world is None or not is_calendar(spec.version):
        return
    commit = world.launcher_commit or "unknown"
    if world.git_dirty:
        yield error(
            "VER004", ("version",),
            f"calendar version {spec.version} launched from a launcher tree with uncommitted"
            f" changes or untracked files (launcher commit {commit}); the launch could not be"
            f" reproduced",
            "Commit (or stash) the launcher's changes and add or ignore its untracked files,"
            " or use a dev version.",
        )
    elif world.git_dirty is None:
        yield warning(
            "VER004", ("version",),
            f"calendar version {spec.version}: cannot tell whether the launcher tree is clean"
            " (not a git checkout)",
            "Launch calendar versions from a clean git checkout of the launcher.",
        )


@rule(
    "VER005",
    "A calendar version runs to completion once: a finished one is not launched again.",
    scope="world",
    example=Example(
        world={
            "ledger": {
                "fingerprint": None, "status": "SUCCEEDED",
                "attempts": [{"attempt_id": "20261129T120000Z-abc123", "status": "SUCCEEDED"}],
            }
        }
    ),
)
def calendar_runs_once(check: Check) -> Iterator[Finding]:
    spec, world = check.spec, check.world
    if world is None or not is_calendar(spec.version):
        return
    record = world.ledger(spec.name, spec.version) or {}
    finished = [a for a in record.get("attempts", ()) if a.get("status") == AttemptStatus.SUCCEEDED]
    if not finished:
        return
    where = ""
    if check.store_prefix:
        manifest = run_paths(check.store_prefix, spec.name, spec.version).terminal_manifest
        where = f"; terminal manifest {manifest}"
    yield error(
        "VER005", ("version",),
        f"{spec.identity} already finished (attempt {finished[-1].get('attempt_id')} SUCCEEDED"
        f"{where}); a calendar version runs once, so a second launch would overwrite its outputs",
        f"Bump the version to {next_calendar(spec.version)} to train again.",
    )
