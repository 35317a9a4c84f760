"""LAUNCH002 and LAUNCH003: the run's tokenizer, read from the store, against its models.

A run has one tokenizer; its policy, reference and critic models may come from other pins (a
reference model from another repo, a policy whose repo names another tokenizer repo). The spec
cannot tell whether two tokenizer pins mean the same ids: the vocabulary lives in the files, and
the models' `vocab_size` facts count embedding rows, which models sharing one tokenizer pad
differently (Qwen2.5-1.5B has 151936 rows, Qwen2.5-14B 152064, for one tokenizer). So
these checks run when the launch has materialized the inputs (`rlaunch.launch`), on the files
in the store (`rlaunch.store.tokenizers`), and `rlaunch rules` lists them with the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import launch_check
from rlaunch.spec import RunSpec
from rlaunch.spec.artifacts import AnyArtifact, HFModel, RunExport, fingerprint, identity
from rlaunch.spec.examples import worked_example
from rlaunch.spec.io import parse_spec
from rlaunch.store.tokenizers import (
    TokenizerContents,
    TokenizerDifference,
    TokenizerFileError,
    compare,
    read_payload_tokenizers,
)

TOKENIZER_CONTENTS_CODE = "LAUNCH002"
TOKENIZER_ROWS_CODE = "LAUNCH003"
MODEL_SLOTS = ("model", "reference_model", "critic_model")
SHOWN = 3
"""Differences quoted in a message; the count says how many there are."""


def tokenizer_source(artifact: AnyArtifact) -> str:
    """Where an artifact's tokenizer comes from: a Hugging Face model's tokenizer pin, a run
    export's run tokenizer, else the artifact itself (identity and fingerprint)."""
    if isinstance(artifact, HFModel):
        return f"{artifact.tokenizer_repo_id}@{artifact.tokenizer_revision}"
    if isinstance(artifact, RunExport):
        return tokenizer_source(artifact.run.tokenizer)
    return f"{identity(artifact)} ({fingerprint(artifact)[:19]})"


def described_tokenizer(artifact: AnyArtifact) -> str:
    """A tokenizer artifact for a message: its identity and where its files come from, e.g.
    `tiny-chatml@2026.11.01 (org/chatml@<commit>)` or `char@dev (sha256:0123456789ab)`."""
    source = tokenizer_source(artifact)
    return source if source.startswith(identity(artifact)) else f"{identity(artifact)} ({source})"


def _models(spec: RunSpec) -> list[tuple[str, AnyArtifact]]:
    slots = ((slot, getattr(spec, slot)) for slot in MODEL_SLOTS)
    return [(slot, artifact) for slot, artifact in slots if artifact is not None]


def _conflicts(difference: TokenizerDifference, slot: str) -> str:
    shown = "; ".join(f"id {token_id} is {mine!r} in the run's tokenizer, {theirs!r} in "
                      f"{slot}'s" for token_id, mine, theirs in difference.conflicts[:SHOWN])
    more = "" if len(difference.conflicts) <= SHOWN else "; ..."
    return (f"{len(difference.conflicts)} of the {difference.shared_ids} ids both have map to "
            f"other strings ({shown}{more})")


def _moved(difference: TokenizerDifference, slot: str) -> str:
    shown = "; ".join(f"{token!r} is id {mine} in the run's tokenizer, {theirs} in {slot}'s"
                      for token, mine, theirs in difference.moved[:SHOWN])
    more = "" if len(difference.moved) <= SHOWN else "; ..."
    return f"{len(difference.moved)} strings moved to ids the other does not have ({shown}{more})"


def _specials(difference: TokenizerDifference, slot: str) -> str:
    return "; ".join(f"{name} {mine!r} (id {mine_id}) in the run's tokenizer, {theirs!r} "
                     f"(id {theirs_id}) in {slot}'s"
                     for name, mine, mine_id, theirs, theirs_id in difference.specials)


def _where(spec: RunSpec, slot: str, artifact: AnyArtifact) -> str:
    """Which two tokenizers were compared: the slot's (for a run's export, the tokenizer its
    run trained with) and the run's."""
    mine = f"the run's tokenizer is {described_tokenizer(spec.tokenizer)}"
    if isinstance(artifact, RunExport):
        return (f"{slot} is the export of {identity(artifact)}, trained with tokenizer "
                f"{described_tokenizer(artifact.run.tokenizer)}, {mine}")
    return f"{slot} {identity(artifact)} comes with tokenizer {tokenizer_source(artifact)}, {mine}"


def _fix(slot: str, artifact: AnyArtifact) -> str:
    same = "a tokenizer with its vocabulary and special tokens (only the chat template may differ)"
    if isinstance(artifact, RunExport):
        return (f"Set tokenizer to the tokenizer {artifact.name} trained with "
                f"({identity(artifact.run.tokenizer)}), or to {same}.")
    return f"Use a {slot} trained with the run's tokenizer, or {same}."


def _finding(spec: RunSpec, slot: str, artifact: AnyArtifact,
             difference: TokenizerDifference) -> Finding:
    paths = ("tokenizer", slot)
    where, fix = _where(spec, slot, artifact), _fix(slot, artifact)
    if difference.conflicts or difference.moved or difference.opaque:
        parts = [_conflicts(difference, slot)] if difference.conflicts else []
        if difference.moved:
            parts.append(_moved(difference, slot))
        if difference.opaque:
            parts.append(f"their {', '.join(difference.opaque)} differ (a vocabulary rlaunch "
                         f"does not read: only identical files are known to agree)")
        if difference.specials:
            parts.append(f"special tokens differ: {_specials(difference, slot)}")
        return error(TOKENIZER_CONTENTS_CODE, paths,
                     f"{where}, and their files in the store differ: {'; and '.join(parts)}: "
                     f"{slot} would read the run's token ids as other strings", fix)
    return warning(TOKENIZER_CONTENTS_CODE, paths,
                   f"{where}: the same vocabulary, but the special tokens differ: "
                   f"{_specials(difference, slot)}. Ids mean the same strings, so training "
                   f"reads them right; generation stops at the run's tokenizer's eos, which "
                   f"{slot} may not have learned to write", fix)


def _example_contents() -> dict[str, TokenizerContents]:
    vocabulary = {0: "<unk>", 1: "<pad>", 2: "<|endoftext|>", 3: "<|im_start|>",
                  4: "<|im_end|>", 5: "user", 6: "assistant"}
    shifted = vocabulary | {3: "<|im_end|>", 4: "<|im_start|>"}
    special = {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<pad>",
               "unk_token": "<unk>"}
    source = "tokenizer.json + tokenizer_config.json"
    return {"tokenizer": TokenizerContents(vocabulary, special, {}, source),
            "reference_model": TokenizerContents(shifted, special, {}, source)}


def _contents_example() -> list[Finding]:
    """worked example `colocated-1x8` with a `reference_model` whose tokenizer pin is another
    repo (`org/other-tokenizer`), in which `<|im_start|>` and `<|im_end|>` swapped ids 3 and 4
    (the eos, `<|im_end|>`, is id 4 in the run's tokenizer and id 3 in the reference's)"""
    data = worked_example("colocated-1x8")
    data["reference_model"] = dict(data["model"], name="other-ref",
                                   tokenizer_repo_id="org/other-tokenizer")
    spec = parse_spec(data, "example of LAUNCH002")
    return tokenizer_mismatches(spec, _example_contents())


@launch_check(
    TOKENIZER_CONTENTS_CODE,
    "A model that comes with another tokenizer pin than the run's (policy, reference, critic) "
    "has the run's tokenizer's vocabulary (every shared id the same string) and special "
    "tokens, read from the files the launch materialized; the chat template may differ.",
    example=_contents_example,
)
def tokenizer_mismatches(spec: RunSpec,
                         contents: Mapping[str, TokenizerContents | None]) -> list[Finding]:
    """Each model slot whose tokenizer pin is not the run tokenizer's, against the run's
    tokenizer: `contents` maps `tokenizer` and the model slots to what their payloads hold
    (None: no tokenizer files; a slot it does not name is not compared). A run's export is
    compared by its own tokenizer files, or by those of the tokenizer its run trained with
    when the export has none (`rlaunch.builders.upstream_tokenizer`)."""
    mine = contents.get("tokenizer")
    findings = []
    for slot, artifact in _models(spec):
        if tokenizer_source(artifact) == tokenizer_source(spec.tokenizer) or slot not in contents:
            continue
        theirs = contents[slot]
        if mine is None or theirs is None:
            missing = "the run's tokenizer" if mine is None else slot
            findings.append(warning(
                TOKENIZER_CONTENTS_CODE, ("tokenizer", slot),
                f"{_where(spec, slot, artifact)}, and {missing} has no tokenizer files in "
                f"the store: their vocabularies were not compared",
                f"Give {missing} its tokenizer files (tokenizer.json, or vocab.json), or use "
                f"one tokenizer pin for both."))
            continue
        difference = compare(mine, theirs)
        if not difference.same:
            findings.append(_finding(spec, slot, artifact, difference))
    return findings


def _rows_example() -> list[Finding]:
    """worked example `colocated-1x8` (Qwen2.5-1.5B-Instruct, `vocab_size` 151936) with a
    tokenizer whose largest id is 151999 (151936 tokens and 64 added ones)"""
    spec = parse_spec(worked_example("colocated-1x8"), "example of LAUNCH003")
    vocabulary = {token_id: f"t{token_id}" for token_id in range(151936 + 64)}
    special = {"bos_token": None, "eos_token": "t151643", "pad_token": None, "unk_token": None}
    return tokenizer_rows(spec, TokenizerContents(vocabulary, special, {}, "tokenizer.json"))


@launch_check(
    TOKENIZER_ROWS_CODE,
    "Every model of the run (policy, reference, critic) has an embedding row for every id of "
    "the run's tokenizer (its declared `vocab_size` is above the tokenizer's largest id).",
    example=_rows_example,
)
def tokenizer_rows(spec: RunSpec, tokenizer: TokenizerContents | None) -> list[Finding]:
    """The run's tokenizer (as the launch read it from the store; None: not readable) against
    each model's declared `vocab_size` (verified against config.json by the snapshot
    builder)."""
    if tokenizer is None or not tokenizer.size:
        return []
    findings = []
    for slot, artifact in _models(spec):
        facts = artifact.facts
        if facts is None or facts.vocab_size >= tokenizer.size:
            continue
        findings.append(error(
            TOKENIZER_ROWS_CODE, ("tokenizer", f"{slot}.facts.vocab_size"),
            f"the run's tokenizer {identity(spec.tokenizer)} has ids up to "
            f"{tokenizer.size - 1} ({tokenizer.tokens[tokenizer.size - 1]!r}), but {slot} "
            f"{identity(artifact)} has vocab_size {facts.vocab_size} embedding rows: "
            f"{tokenizer.size} > {facts.vocab_size}, so ids {facts.vocab_size}.."
            f"{tokenizer.size - 1} have no row and the embedding lookup fails",
            f"Use a tokenizer with at most {facts.vocab_size} ids, or a {slot} whose embeddings "
            f"were resized to at least {tokenizer.size} rows."))
    return findings


def tokenizer_findings(spec: RunSpec, payloads: Mapping[str, Path]) -> list[Finding]:
    """LAUNCH002 and LAUNCH003 on the materialized inputs (`slot -> local payload folder`, as
    `rlaunch.builders.materialize` returns them). Reads the run's tokenizer, and a model's
    tokenizer files only when its tokenizer pin is another (each set of files parsed once per
    process). A tokenizer file that cannot be read is a warning: nothing was compared."""
    mine = tokenizer_source(spec.tokenizer)
    slots = ["tokenizer", *(slot for slot, artifact in _models(spec)
                            if tokenizer_source(artifact) != mine)]
    try:
        contents = read_payload_tokenizers({slot: payloads[slot] for slot in slots})
    except TokenizerFileError as err:
        return [warning(
            TOKENIZER_CONTENTS_CODE, tuple(slots),
            f"a tokenizer file of {', '.join(slots)} cannot be read ({err}): the run's "
            f"tokenizer and its models were not compared",
            "Give it a tokenizer.json in Hugging Face's format (or vocab.json), or use one "
            "tokenizer pin for the run and its models.")]
    return (tokenizer_mismatches(spec, contents)
            + tokenizer_rows(spec, contents["tokenizer"]))
