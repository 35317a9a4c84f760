"""Artifacts: pins, checksums, typed handoffs, model facts, identities, dev dependencies."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from rlaunch.plugins import BUILDER_GROUP, registered_names
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.artifacts import (
    AdoptedArtifact,
    BuiltArtifact,
    HFDataset,
    HFModel,
    RunExport,
    fingerprint,
)
from rlaunch.spec.builder_configs import BUILDER_CONFIGS, PromptConfig, config_problems
from rlaunch.spec.syntax import COMMIT, HEX, SHA256, URI_SCHEME, is_calendar, is_dev
from rlaunch.tasks.prompts import GROUND_TRUTH, GROUND_TRUTH_COLUMN, VERBATIM, no_ground_truth

# What each slot of a run accepts: a tokenizer may come from a model repo.
SLOT_KINDS = {
    "model": ("model",),
    "tokenizer": ("tokenizer", "model"),
    "reference_model": ("model",),
    "critic_model": ("model",),
    "train_data": ("dataset",),
    "eval_data": ("dataset",),
    "environment_data": ("dataset",),
}
ADOPTED_DATA = {
    "type": "adopted", "name": "gsm8k-train", "version": "2026.11.01", "kind": "dataset",
    "uri": "rlaunch-data/gsm8k/train.parquet", "sha256": "d41d8cd98f00b204e9800998ecf8427e",
    "facts": None, "rows": 7473,
}
ADOPTED_MODEL = {
    "type": "adopted", "name": "qwen2.5-1.5b-sft", "version": "2026.11.01", "kind": "model",
    "uri": "gs://rlaunch-example/models/qwen2.5-1.5b-sft",
    "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "facts": None, "rows": None,
}


def _commit_problem(value: str) -> str:
    if HEX.fullmatch(value) is None:
        return "is a branch or tag name, not a commit: it moves"
    if len(value) != 40:
        return f"is not a full commit sha ({len(value)} hex characters, 40 needed)"
    return "has upper-case hex; write the sha in lower case"


@rule(
    "ART001",
    "Every Hugging Face revision and tokenizer revision is a 40-hex commit sha.",
    example=Example(edits={"model.revision": "main"}),
    reads_plan=False,
)
def hf_revisions_pinned(check: Check) -> Iterator[Finding]:
    for path, artifact in check.artifacts:
        fields: tuple[str, ...]
        if isinstance(artifact, HFModel):
            fields = ("revision", "tokenizer_revision")
        elif isinstance(artifact, HFDataset):
            fields = ("revision",)
        else:
            continue
        for name in fields:
            value = getattr(artifact, name)
            if COMMIT.fullmatch(value) is None:
                repo = artifact.tokenizer_repo_id if name == "tokenizer_revision" \
                    else artifact.repo_id
                yield error(
                    "ART001", (f"{path}.{name}",),
                    f"{path}.{name} {value!r} {_commit_problem(value)}",
                    f"Pin {path}.{name} to the 40-hex commit sha of {repo} you mean (the Hub"
                    " shows it under 'Files and versions' > 'History').",
                )


@lru_cache(maxsize=1024)
def _repo_id_problem(value: str) -> str | None:
    """Why the Hub refuses a repo id (huggingface_hub's validate_repo_id), or None; cached, as
    a search preflights the same repo ids many times."""
    # Lazily: huggingface_hub costs start-up time that a spec without Hub artifacts never pays.
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError as err:
        return str(err).split(":")[0].rstrip(".")
    return None


@rule(
    "ART011",
    "Every Hugging Face repo id is one the Hub accepts (huggingface_hub's validate_repo_id).",
    example=Example(edits={"model.repo_id": "Qwen/Qwen2.5--1.5B"}),
    reads_plan=False,
)
def hf_repo_ids_valid(check: Check) -> Iterator[Finding]:
    """A repo id the Hub refuses passed check and failed at download, after the launch began."""
    seen: set[tuple[str, str]] = set()
    for path, artifact in check.artifacts:
        if isinstance(artifact, HFModel):
            fields: tuple[str, ...] = ("repo_id", "tokenizer_repo_id")
        elif isinstance(artifact, HFDataset):
            fields = ("repo_id",)
        else:
            continue
        if (artifact.name, artifact.version) in seen:
            continue
        seen.add((artifact.name, artifact.version))
        for name in fields:
            value = getattr(artifact, name)
            reason = _repo_id_problem(value)
            if reason is not None:
                yield error(
                    "ART011", (f"{path}.{name}",),
                    f"{path}.{name} {value[:100]!r} is not a Hugging Face repo id: {reason}",
                    f"Set {path}.{name} to the repo as the Hub names it, namespace/name"
                    " (`rlaunch pin <repo_id>` writes it).",
                )


@rule(
    "ART002",
    "An adopted artifact has a 64-hex sha256 and a URI with a scheme.",
    example=Example(edits={"train_data": ADOPTED_DATA}),
    reads_plan=False,
)
def adopted_checksummed(check: Check) -> Iterator[Finding]:
    for path, artifact in check.artifacts:
        if not isinstance(artifact, AdoptedArtifact):
            continue
        if SHA256.fullmatch(artifact.sha256) is None:
            yield error(
                "ART002", (f"{path}.sha256",),
                f"{path}.sha256 {artifact.sha256!r} is not a sha256 digest (64 lower-case hex)",
                f"Set {path}.sha256 to the sha256 of the object's content"
                " (`sha256sum`, 64 hex characters).",
            )
        if URI_SCHEME.fullmatch(artifact.uri) is None:
            yield error(
                "ART002", (f"{path}.uri",),
                f"{path}.uri {artifact.uri!r} has no scheme (gs://, s3://, file://, hf://)",
                f"Write {path}.uri as a full URI, e.g. gs://bucket/path.",
            )


@rule(
    "ART003",
    "Typed handoffs: each slot takes the artifact kind it consumes.",
    example=Example(edits={"eval_data": ADOPTED_MODEL}),
    reads_plan=False,
)
def typed_handoffs(check: Check) -> Iterator[Finding]:
    for slot, artifact in check.slots.items():
        accepted = SLOT_KINDS[slot]
        if artifact.kind not in accepted:
            yield error(
                "ART003", (slot,),
                f"{slot} takes a {' or '.join(accepted)}, but {artifact.name}@{artifact.version}"
                f" is a {artifact.kind}",
                f"Put a {accepted[0]} artifact in {slot}.",
            )


@rule(
    "ART004",
    "Every model-kind artifact declares its facts, with positive counts and whole GQA groups.",
    example=Example(edits={"model": ADOPTED_MODEL}),
    reads_plan=False,
)
def model_facts_present(check: Check) -> Iterator[Finding]:
    for path, artifact in check.artifacts:
        if artifact.kind != "model":
            continue
        facts = artifact.facts
        if facts is None:
            yield error(
                "ART004", (f"{path}.facts",),
                f"{path} {artifact.name}@{artifact.version} is a model but {path}.facts is null",
                f"Declare {path}.facts from the model's config.json (`rlaunch pin <repo_id>`"
                " prints them for a Hugging Face model).",
            )
            continue
        bad = [(name, value) for name, value in facts.counts() if value < 1]
        for name, value in bad:
            yield error(
                "ART004", (f"{path}.facts.{name}",),
                f"{path}.facts.{name} is {value}; model facts must be at least 1",
                f"Copy {name} from the model's config.json (`rlaunch pin` reads it).",
            )
        heads, kv = facts.num_attention_heads, facts.num_key_value_heads
        if not bad and heads % kv:
            yield error(
                "ART004",
                (f"{path}.facts.num_attention_heads", f"{path}.facts.num_key_value_heads"),
                f"{path}.facts.num_attention_heads {heads} is not a multiple of"
                f" num_key_value_heads {kv} ({heads} % {kv} = {heads % kv})",
                "Copy both head counts from the model's config.json.",
            )


@rule(
    "ART005",
    "An identity name@version names one artifact (one fingerprint) across the spec.",
    example=Example(edits={"eval_data.name": "gsm8k-train-prompts"}),
    reads_plan=False,
)
def unique_identities(check: Check) -> Iterator[Finding]:
    # Each distinct artifact behind an identity is reported once, against the first one seen.
    seen: dict[str, list[tuple[str, Any]]] = {}
    for path, artifact in check.artifacts:
        identity = f"{artifact.name}@{artifact.version}"
        known = seen.setdefault(identity, [])
        if any(other is artifact or other == artifact for _, other in known):
            continue
        known.append((path, artifact))
        if len(known) == 1:
            continue
        first_path, first = known[0]
        yield error(
            "ART005", (first_path, path),
            f"{identity} names two different artifacts: {first_path} ({fingerprint(first)})"
            f" and {path} ({fingerprint(artifact)})",
            f"Give one of them another name or version; {identity} must always mean the same"
            " content.",
        )


@rule(
    "ART006",
    "Nothing calendar-versioned (the run or an artifact) depends on a dev artifact.",
    example=Example(edits={"model.version": "dev"}),
    reads_plan=False,
)
def no_dev_under_calendar(check: Check) -> Iterator[Finding]:
    spec = check.spec
    # Another run's dev export under a calendar consumer is PIPE001's.
    if is_calendar(spec.version):
        for slot, artifact in check.slots.items():
            if is_dev(artifact.version) and not isinstance(artifact, RunExport):
                yield error(
                    "ART006", ("version", f"{slot}.version"),
                    f"the run {spec.identity} is calendar-versioned (immutable) but {slot}"
                    f" {artifact.name}@{artifact.version} is a dev version that changes under it",
                    f"Pin {slot} to a calendar version, or give the run a dev version.",
                )
    for path, artifact in check.artifacts:
        if not isinstance(artifact, BuiltArtifact) or not is_calendar(artifact.version):
            continue
        for dep_slot, dep in sorted(artifact.deps.items()):
            if is_dev(dep.version) and not isinstance(dep, RunExport):
                yield error(
                    "ART006", (f"{path}.version", f"{path}.deps.{dep_slot}.version"),
                    f"{path} {artifact.name}@{artifact.version} is calendar-versioned but"
                    f" depends on {path}.deps.{dep_slot} {dep.name}@{dep.version}, a dev version",
                    f"Pin {path}.deps.{dep_slot} to a calendar version, or make {path} dev.",
                )


@rule(
    "ART009",
    "Every built artifact names a registered builder plugin (or a module:Class).",
    example=Example(edits={"train_data.builder": "prompt_parqet"}),
    reads_plan=False,
)
def builders_registered(check: Check) -> Iterator[Finding]:
    """Otherwise the launch stops at building the artifact (rlaunch.builders.base.load_builder),
    after preflight passed. A `module:Class` builder is imported only where it builds."""
    known = registered_names(BUILDER_GROUP)
    seen: set[tuple[str, str]] = set()
    for path, artifact in check.artifacts:
        if not isinstance(artifact, BuiltArtifact) or ":" in artifact.builder:
            continue
        if artifact.builder in known or (artifact.name, artifact.version) in seen:
            continue
        seen.add((artifact.name, artifact.version))
        yield error(
            "ART009", (f"{path}.builder",),
            f"{path}.builder {artifact.builder!r} of {artifact.name}@{artifact.version} is not a"
            f" registered builder ({', '.join(known)})",
            "Use a registered builder, install the plugin that provides it (entry point group"
            f" {BUILDER_GROUP}), or give a module:Class.",
        )


def _prompt_config_problems(config: PromptConfig) -> list[tuple[str, str]]:
    """What prompt_parquet refuses at build time that its config alone decides."""
    if config.env_class not in GROUND_TRUTH_COLUMN:
        columns = "; ".join(f"{env} reads {column}"
                            for env, column in sorted(GROUND_TRUTH_COLUMN.items()))
        return [("config.env_class",
                 f"{config.env_class!r} is not an env whose rows prompt_parquet writes: each "
                 f"skyrl-gym 0.4.0 env reads the ground truth from its own column of the row "
                 f"({columns}: GSM8kEnv.__init__ and AIMEEnv.__init__ assert it); set "
                 f"config.env_class to one of {', '.join(sorted(GROUND_TRUTH_COLUMN))}, and "
                 f"algorithm.environment to the same")]
    if config.ground_truth is None:
        return [("config.ground_truth", no_ground_truth(config.env_class))]
    if config.task not in GROUND_TRUTH:
        return [("config.task", f"{config.task!r} is not a task of rlaunch.tasks (it has "
                                f"{', '.join(sorted(GROUND_TRUTH))})")]
    named = GROUND_TRUTH[config.task]
    extract = config.ground_truth.extract
    if extract != VERBATIM and extract not in named:
        return [("config.ground_truth.extract",
                 f"{extract!r} is not an extractor of task {config.task!r} (it has "
                 f"{', '.join([VERBATIM, *sorted(named)])})")]
    return []


@rule(
    "ART010",
    "A built artifact's config has the keys, types and values its builder reads.",
    example=Example(edits={"train_data.config.ground_truth.column": ["answer"]}),
    reads_plan=False,
)
def builder_configs_valid(check: Check) -> Iterator[Finding]:
    """rlaunch's own builders read `config` into the typed models of
    rlaunch.spec.builder_configs; without this rule a typo'd key or a wrong type passed check
    and stopped the launch at building the artifact (or, for a value in range but wrong, built
    something else). Third-party `module:Class` builders check their own config when they run."""
    seen: set[tuple[str, str]] = set()
    for path, artifact in check.artifacts:
        if not isinstance(artifact, BuiltArtifact) or (artifact.name, artifact.version) in seen:
            continue
        model = BUILDER_CONFIGS.get(artifact.builder)
        if model is None:
            continue
        seen.add((artifact.name, artifact.version))
        try:
            config = model.model_validate(artifact.config)
        except ValidationError as err:
            problems = config_problems(model, err)
        else:
            problems = _prompt_config_problems(config) if isinstance(config, PromptConfig) else []
        for field, problem in problems:
            yield error(
                "ART010", (f"{path}.{field}",),
                f"{path}.{field} of {artifact.name}@{artifact.version} (builder "
                f"{artifact.builder}): {problem}",
                f"Write {path}.config as builder {artifact.builder} reads it; its fields are "
                f"{', '.join(model.model_fields)} (docs/artifacts.md).",
            )
