"""Pipelines: rules across stages, where a run reads another run's export.

Each stage is preflighted on its own (its geometry, runtime, batch...) when it launches; these
rules judge the handoff between two stages: versions, tokenizer, that the upstream trains (an
eval run's export is a report, not a model), and that the upstream run finished before its
export is read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from rlaunch.ledger.stages import stage_state
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.preflight.launch_checks.tokenizer_gate import described_tokenizer, tokenizer_source
from rlaunch.spec.artifacts import AnyArtifact, BuiltArtifact, RunExport, identity
from rlaunch.spec.catalog import SKYRL_EVAL_ENTRYPOINT
from rlaunch.spec.syntax import is_calendar, is_dev

UPSTREAM_FINISHED_CODE = "PIPE003"
EVAL_EXPORT_CODE = "PIPE004"

TOKENIZER_STAGE1 = {
    "type": "built", "name": "qwen-tokenizer-extended", "version": "2026.11.01",
    "kind": "tokenizer", "builder": "extend_tokenizer", "config": {"added_tokens": 16},
    "deps": {}, "facts": None, "rows": None,
}


def _consumers(check: Check) -> Iterator[tuple[str, str, str, RunExport]]:
    """`(export path, consumer path, consumer version, export)` of every run export: the run
    itself for a slot, else the built artifact whose deps name it."""
    for path, artifact in check.artifacts:
        if isinstance(artifact, RunExport) and "." not in path:
            yield path, "version", check.spec.version, artifact
        if isinstance(artifact, BuiltArtifact):
            for slot, dep in sorted(artifact.deps.items()):
                if isinstance(dep, RunExport):
                    yield f"{path}.deps.{slot}", f"{path}.version", artifact.version, dep


def _edit(change: Callable[[dict[str, Any]], None], doc: str) -> Callable[[dict[str, Any]], None]:
    change.__doc__ = doc
    return change


def _dev_upstream(data: dict[str, Any]) -> None:
    data["model"]["version"] = "dev"
    data["model"]["run"]["version"] = "dev"


def _other_tokenizer(data: dict[str, Any]) -> None:
    data["model"]["run"]["tokenizer"] = dict(TOKENIZER_STAGE1)


@rule(
    "PIPE001",
    "A calendar-versioned stage (or artifact) does not read a dev run's export.",
    example=Example(base="grpo-stage2", edits=_edit(
        _dev_upstream, "the first stage `colocated-1x8` versioned `dev`")),
    reads_plan=False,
)
def no_dev_run_under_calendar(check: Check) -> Iterator[Finding]:
    for path, consumer_path, consumer_version, export in _consumers(check):
        if is_calendar(consumer_version) and is_dev(export.version):
            run_level = consumer_path == "version"
            consumer = check.spec.identity if run_level else consumer_path[: -len(".version")]
            other = "give this run a dev version" if run_level else f"make {consumer} dev"
            yield error(
                "PIPE001", (consumer_path, f"{path}.version"),
                f"{consumer} is calendar-versioned (immutable) but reads {path}, the export of "
                f"{identity(export)}: a dev run, relaunched and changed at will",
                f"Give the run {export.name} a calendar version (it then runs once and its "
                f"export never changes), or {other} too.",
            )


@rule(
    "PIPE002",
    "A stage reads another run's export with the tokenizer pin that run trained with (warning: "
    "two pins may hold one tokenizer; the launch compares their files, LAUNCH002).",
    example=Example(base="grpo-stage2", edits=_edit(
        _other_tokenizer, "the first stage trained with another tokenizer")),
    reads_plan=False,
)
def export_tokenizer_matches(check: Check) -> Iterator[Finding]:
    """Warning, never an error: the export's weights learned the ids of the tokenizer its run
    trained with, and read with another tokenizer ids would mean other strings; but whether two
    pins hold one tokenizer is not in the spec. The same tokenizer is published under several
    repos and revisions, a re-pinned revision can hold identical files, and a tokenizer of the
    same identity with another fingerprint (another revision or builder config) may still write
    the same files: no spec field states a tokenizer's contents, so no case is decidable here.
    Pins that name the same files (one repo at one revision, one built identity and
    fingerprint) pass silently. The launch compares the contents once the inputs are
    materialized (LAUNCH002): the export's tokenizer files (SkyRL saves them with the weights
    in the `global_step_N/policy/` folder the stage reads), or those of the upstream's
    tokenizer in the store when the export has none, and refuses an id that means another
    string; a pipeline does so before it launches any stage."""
    mine = tokenizer_source(check.spec.tokenizer)
    for path, export in check.spec.run_exports():
        theirs = export.run.tokenizer
        if tokenizer_source(theirs) == mine:
            continue
        yield warning(
            "PIPE002", ("tokenizer", f"{path}.run.tokenizer"),
            f"{path} is the export of {identity(export)}, trained with tokenizer "
            f"{described_tokenizer(theirs)}, but this run's tokenizer is "
            f"{described_tokenizer(check.spec.tokenizer)}: two pins, which may hold one "
            f"tokenizer (the spec cannot tell). The launch compares their vocabularies and "
            f"special tokens in the store (LAUNCH002) and refuses it if an id means another "
            f"string",
            f"To silence this, set tokenizer to the tokenizer {export.name} trained with "
            f"({identity(theirs)}).",
        )


@rule(
    UPSTREAM_FINISHED_CODE,
    "A stage launches only after every run whose export it reads finished with the spec it "
    "names.",
    scope="world",
    example=Example(base="grpo-stage2", world={"ledger": None}),
)
def upstream_finished(check: Check) -> Iterator[Finding]:
    spec, world = check.spec, check.world
    if world is None:
        return
    for path, export in spec.run_exports():
        state = stage_state(world.ledger(export.name, export.version), export.run.fingerprint)
        if state.finished:
            continue
        yield error(
            UPSTREAM_FINISHED_CODE, (path,),
            f"{path} is the export of {identity(export)}, which has not finished: "
            f"{state.reason}",
            f"Launch {identity(export)} first: {_launch_command(check, path)}.",
        )


def _launch_command(check: Check, path: str) -> str:
    sources = check.spec.build_sources
    slot = path.split(".", 1)[0]
    if sources is not None and path in sources.sections:
        upstream = sources.sections[path].address
        return (f"`./pants run {sources.run.address}` launches every unfinished stage before "
                f"it ({slot} first: `./pants run {upstream}` launches only that one)")
    return ("`rlaunch launch` of this spec launches every unfinished stage before it; "
            "`rlaunch launch --only` of the upstream's spec launches only that one")


def _eval_upstream(data: dict[str, Any]) -> None:
    upstream = data["model"]["run"]
    upstream["runtime"] = dict(upstream["runtime"], entrypoint=SKYRL_EVAL_ENTRYPOINT)


def eval_exports_read_as_models(
    artifacts: Iterable[tuple[str, AnyArtifact]],
) -> Iterator[Finding]:
    """PIPE004's findings on `(field path, artifact)` pairs: every run export is read as a model
    (a run's model slot, a builder's dep), so none may be an eval run's. Shared with the build's
    graph check (rlaunch.builders.rules), which sees artifacts no run reads."""
    for path, export in artifacts:
        if not isinstance(export, RunExport) or not export.run.evaluates_only:
            continue
        scored = export.run.model
        what = "the training run" if isinstance(scored, RunExport) else "the model"
        consumer, dep, _ = path.rpartition(".deps.")
        reader = f"the builder of {consumer}" if dep else "the run"
        yield error(
            # `.name`: where the eval run is written (its run_name), beside the field that names it.
            EVAL_EXPORT_CODE, (path, f"{path}.name"),
            f"{path} is the export of {identity(export)}, an eval run (runtime.entrypoint "
            f"{export.run.runtime.entrypoint} only evaluates): that export is its report "
            f"(report.json, samples.jsonl), not a model; {reader} would find no model to load "
            "in it",
            f"Set {path} to {what} the eval scores ({identity(scored)}, the eval's model) "
            "instead of the eval.",
        )


@rule(
    EVAL_EXPORT_CODE,
    "No stage (or built artifact) reads an eval run's export as a model: it is a report.",
    example=Example(base="grpo-stage2", edits=_edit(
        _eval_upstream, "the first stage `colocated-1x8` on the eval-only entrypoint")),
    reads_plan=False,
)
def no_eval_export_as_model(check: Check) -> Iterator[Finding]:
    """Error: an eval run (an entrypoint that only evaluates, RunSpec.evaluates_only) writes
    report.json and samples.jsonl into its export folder; a stage, or a builder, reading that
    folder as a model fails on the GPUs or in the builder. An eval of an eval is the same
    mistake (reading the report's folder as the model to score). `rlaunch build` of an artifact
    (`./pants run` of an `rl_eval`) refuses such a dependency too, before it launches any run."""
    yield from eval_exports_read_as_models(check.spec.run_exports())
