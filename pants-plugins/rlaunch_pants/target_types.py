"""Target types: artifacts (models, datasets, adopted and built ones), the RL runtime, the role
plan, where a run executes, and the run itself.

The fields live beside: artifact_fields.py, plan_fields.py (role_plan, rl_execution) and
run_fields.py (rl_run); the runtime's fields are made here from the schema (schema_fields.py).
"""

from __future__ import annotations

from pants.engine.target import COMMON_TARGET_FIELDS, InvalidFieldException, Target
from pants.util.strutil import help_text

from rlaunch_pants import artifact_fields as af
from rlaunch_pants import plan_fields as pf
from rlaunch_pants import run_fields as rf
from rlaunch_pants import schema
from rlaunch_pants.schema_fields import SpecFieldSet, camel, section_fields, spec_field_set
from rlaunch_pants.settings_fields import SkyrlSettingsTarget
from rlaunch_pants.sweep import RlSweepTarget
from rlaunch_pants.validation import keyed_problems


class HFModelTarget(Target):
    alias = "hf_model"
    core_fields = (*COMMON_TARGET_FIELDS, *af.HF_MODEL_FIELD.values())
    help = help_text(
        """
        A Hugging Face model pinned at a commit, with the facts about it that preflight needs.
        Its identity is `<target name>@<version>`.

            hf_model(
                name="qwen2.5-1.5b-instruct",
                repo_id="Qwen/Qwen2.5-1.5B-Instruct",
                # pinned by <where this sha was found>
                revision="989aa7980e4cf806f80c7fef2b1adb7bc71aa306",
                facts=dict(num_attention_heads=12, num_key_value_heads=2,
                           max_position_embeddings=32768, num_experts=None,
                           num_hidden_layers=28, hidden_size=1536, intermediate_size=8960,
                           vocab_size=151936, head_dim=None, torch_dtype="bfloat16",
                           num_parameters=1543714304),
                version="2026.11.01",
            )
        """
    )

    def validate(self) -> None:
        repo = self[af.HF_MODEL_FIELD["repo_id"]].value
        tokenizer_repo = self[af.HFModelTokenizerRepoIdField].value
        if (
            tokenizer_repo is not None
            and tokenizer_repo != repo
            and self[af.HFModelTokenizerRevisionField].value is None
        ):
            raise InvalidFieldException(
                f"The hf_model target {self.address} takes its tokenizer from "
                f"{tokenizer_repo!r} but sets no `tokenizer_revision`: pin that repository "
                f"at a 40-hex commit too."
            )


class HFDatasetTarget(Target):
    alias = "hf_dataset"
    core_fields = (*COMMON_TARGET_FIELDS, *af.HF_DATASET_FIELD.values())
    help = help_text(
        """
        One configuration (subset) and split of a Hugging Face dataset pinned at a commit.

            hf_dataset(
                name="gsm8k-train",
                repo_id="openai/gsm8k",
                revision="e53f048856ff4f594e959d75785d2c2d37b678ee",
                config="main",
                split="train",
                rows=7473,
                version="2026.11.01",
            )
        """
    )


class AdoptedArtifactTarget(Target):
    alias = "adopted_artifact"
    core_fields = (*COMMON_TARGET_FIELDS, *af.ADOPTED_FIELD.values())
    help = help_text(
        """
        An object that already exists in a store, registered by its content checksum.

            adopted_artifact(
                name="sft-checkpoint",
                uri="gs://my-bucket/checkpoints/sft-7b/step-1200",
                sha256="<64 hex characters>",
                kind="model",
                facts=dict(num_attention_heads=32, num_key_value_heads=8,
                           max_position_embeddings=32768, num_experts=None,
                           num_hidden_layers=32, hidden_size=4096, intermediate_size=11008,
                           vocab_size=32000, head_dim=None, torch_dtype="bfloat16",
                           num_parameters=6738415616),
                version="2026.10.14",
            )
        """
    )


class BuiltArtifactTarget(Target):
    alias = "built_artifact"
    core_fields = (
        *COMMON_TARGET_FIELDS,
        *af.BUILT_FIELD.values(),
        af.BuiltArtifactDepsField,
        af.BuiltArtifactDependenciesField,
    )
    help = help_text(
        """
        An artifact made by a builder plugin from a config and other artifacts. It is built
        once per identity and reused: `./pants run <this target>` builds it, or reports it up
        to date with its fingerprint.

            built_artifact(
                name="sft_model",
                builder="sft_model",
                kind="model",
                config={"steps": 300, "d_model": 64},
                deps={"data": ":countdown_data", "tokenizer": ":char_tokenizer"},
                facts=dict(num_attention_heads=4, num_key_value_heads=4,
                           max_position_embeddings=64, num_experts=None,
                           num_hidden_layers=2, hidden_size=64, intermediate_size=256,
                           vocab_size=50, head_dim=None, torch_dtype="float32",
                           num_parameters=101888),
                version="dev",
            )
        """
    )


    def validate(self) -> None:
        builder = self[af.BuiltArtifactBuilderField].value
        known = schema.SCHEMA["builder_configs"].get(builder)
        if known is None:
            return  # a third-party builder reads its own config (preflight ART009 names it)
        problems = keyed_problems(known["keys"], self[af.BUILT_FIELD["config"]].value or {},
                                  "config")
        if problems:
            raise InvalidFieldException(
                f"The 'config' field in target {self.address} does not fit builder "
                f"{builder!r}: {'; '.join(problems)}."
            )


# ---------------------------------------------------------------------------------------------
# rl_runtime


# One field per key of the RunSpec's runtime pin; its `name` is the target's. That exactly one of
# `package` or `git` is set, and the commit's syntax, are RT001's, when the run is checked.
RUNTIME_FIELD = section_fields("runtime", skip=("name",), prefix="Runtime")


class RlRuntimeTarget(Target):
    alias = "rl_runtime"
    core_fields = (*COMMON_TARGET_FIELDS, *RUNTIME_FIELD.values())
    help = help_text(
        """
        The RL runtime that consumes the launch YAML, pinned by package version or git commit.

            rl_runtime(
                name="skyrl-0.3.0",
                profile="skyrl",
                package="skyrl==0.3.0",
                entrypoint="skyrl.train.entrypoints.main_base",
            )
        """
    )


# ---------------------------------------------------------------------------------------------
# role_plan, rl_execution, rl_run (fields in run_fields.py)


class RolePlanTarget(Target):
    alias = "role_plan"
    core_fields = (*COMMON_TARGET_FIELDS, *pf.ROLE_PLAN_FIELDS)
    help = pf.ROLE_PLAN_HELP


class RlExecutionTarget(Target):
    alias = "rl_execution"
    core_fields = (*COMMON_TARGET_FIELDS, *pf.EXECUTION_FIELDS)
    help = pf.EXECUTION_HELP


class RlRunTarget(Target):
    alias = "rl_run"
    core_fields = (*COMMON_TARGET_FIELDS, *rf.RUN_FIELDS)
    help = rf.RUN_HELP


ARTIFACT_TARGET_TYPES: tuple[type[Target], ...] = (
    HFModelTarget,
    HFDatasetTarget,
    AdoptedArtifactTarget,
    BuiltArtifactTarget,
)

ALL_TARGET_TYPES: tuple[type[Target], ...] = (
    *ARTIFACT_TARGET_TYPES,
    RlRuntimeTarget,
    RolePlanTarget,
    RlExecutionTarget,
    RlRunTarget,
    RlSweepTarget,
    SkyrlSettingsTarget,
)


# Each target type's spec field set: what it holds of the RunSpec (schema.json `targets`), from
# its fields. The run's own references are resolved by specs.py and handed to its field set.
SPEC_FIELD_SETS: dict[str, type[SpecFieldSet]] = {
    alias: spec_field_set(f"{camel(alias)}SpecFieldSet", schema.TARGETS[alias], fields)
    for alias, fields in (
        (HFModelTarget.alias, af.HF_MODEL_FIELD),
        (HFDatasetTarget.alias, af.HF_DATASET_FIELD),
        (AdoptedArtifactTarget.alias, af.ADOPTED_FIELD),
        (BuiltArtifactTarget.alias, af.BUILT_FIELD),
        (RlRuntimeTarget.alias, RUNTIME_FIELD),
        (RolePlanTarget.alias, pf.ROLE_PLAN_FIELD),
        (RlExecutionTarget.alias, pf.EXECUTION_FIELD),
        (RlRunTarget.alias, {"version": rf.RlRunVersionField, **rf.RUN_KEY_FIELD}),
    )
}


def target_types() -> list[type[Target]]:
    return list(ALL_TARGET_TYPES)
