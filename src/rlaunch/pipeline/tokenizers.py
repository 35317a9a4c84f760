"""Before a pipeline launches any stage: each stage's tokenizer against the tokenizer of every
upstream run whose export it reads as a model, by content (LAUNCH002).

Preflight cannot tell whether two tokenizer pins hold one tokenizer (PIPE002 warns); each
stage's launch compares the files once its inputs are materialized. A stage waits for its
upstream to train, though, and a tokenizer is a small input: so the pipeline compares the two
tokenizers first, and a stage whose ids would mean other strings refuses the pipeline before
stage 1 trains. A launch materializes both tokenizers (its stages would); a dry run builds
nothing, so it compares only what the store already holds and says what it left to the launch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rlaunch.builders import BuildError
from rlaunch.builders.upstream_tokenizer import (
    reads_a_run,
    stored_payload,
    tokenizer_payload,
    upstream_slots,
)
from rlaunch.launch import LaunchRefused, resolve_store
from rlaunch.pipeline.plan import Stage
from rlaunch.preflight import format_text
from rlaunch.preflight.launch_checks.tokenizer_gate import tokenizer_mismatches
from rlaunch.spec import RunExport, RunSpec, identity
from rlaunch.store import ArtifactStore, StoreError
from rlaunch.store.tokenizers import TokenizerFileError, read_payload_tokenizers

Say = Callable[[str], None]


def _payloads(spec: RunSpec, slots: list[tuple[str, RunExport]], store: str | None,
              build: bool, say: Say) -> dict[str, Path] | None:
    """The stage's tokenizer and each upstream's: materialized (`build`), or as the store holds
    them; None when one of them is not at hand (see `tokenizer_payload`)."""
    opened = ArtifactStore(resolve_store(spec, store)[1])
    wanted = {"tokenizer": spec.tokenizer} | {slot: export.run.tokenizer for slot, export in slots}
    found = {}
    for slot, artifact in wanted.items():
        try:
            path = (tokenizer_payload(opened, artifact, say, spec) if build
                    else stored_payload(opened, artifact, say))
        except (BuildError, StoreError) as err:
            raise LaunchRefused(f"materializing the tokenizer {identity(artifact)} of "
                                f"{spec.identity} ({slot}) failed: {err}") from None
        if path is None:
            return None
        found[slot] = path
    return found


def refuse_tokenizer_mismatches(stages: Sequence[Stage], store: str | None, *, build: bool,
                                say: Say) -> None:
    """Raise LaunchRefused, naming the stage, when a stage to launch reads an upstream's export
    with a tokenizer whose ids mean other strings (LAUNCH002's error). Warnings are left to
    the stage's own launch, which reports them."""
    for index, stage in enumerate(stages, start=1):
        # A stage's own tokenizer read from another run's output exists only once that ran.
        slots = (upstream_slots(stage.spec) if stage.action == "launch"
                 and not reads_a_run(stage.spec.tokenizer) else [])
        if not slots:
            continue
        spec, tag = stage.spec, f"[{index}/{len(stages)}] {stage.spec.identity}"
        payloads = _payloads(spec, slots, store, build, say)
        if payloads is None:
            say(f"rlaunch: {tag}: its tokenizer and the one "
                f"{', '.join(identity(export) for _, export in slots)} trained with are not both "
                f"in the store; they are compared when it launches (LAUNCH002)")
            continue
        try:
            contents = read_payload_tokenizers(payloads)
        except TokenizerFileError:
            continue  # the stage's launch reports the file it cannot read
        findings = tokenizer_mismatches(spec, contents)
        if any(finding.is_error for finding in findings):
            raise LaunchRefused(
                f"{tag}: refused before any stage launches\n"
                + format_text(findings, "the tokenizers in the store", spec.identity,
                              spec.build_sources))
