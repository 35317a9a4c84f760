"""Fields of the artifact targets: hf_model, hf_dataset, adopted_artifact, built_artifact."""

from __future__ import annotations

from typing import ClassVar

from pants.engine.target import Dependencies, DictStringToStringField
from pants.util.strutil import help_text

from rlaunch_pants.fields import (
    CheckedStringField,
    ChoiceField,
    CommitField,
    JsonDictField,
    PositiveIntField,
    SchemaDictField,
    Sha256Field,
    VersionField,
    dict_help,
    schema_keys,
)
from rlaunch_pants.schema import ARTIFACT_KINDS

# ---------------------------------------------------------------------------------------------
# Fields shared by the artifact targets.


class ArtifactVersionField(VersionField):
    alias = "version"
    required = True
    help = help_text(
        """
        The artifact's version; with the target's name it is the artifact's identity
        `name@version`, and its store path `{prefix}/{name}/{version}/`.

        A calendar version `YYYY.MM.DD` or `YYYY.MM.DD.N` (a real date) is immutable: once
        launched, its fingerprint is recorded and a changed artifact must get a new version.
        `dev` and `<label>-dev` (e.g. `sft-dev`) are mutable and always rebuilt; a calendar
        version may not depend on a dev one.

            version="2026.11.01"
        """
    )


class HFRepoIdField(CheckedStringField):
    alias = "repo_id"
    required = True
    help = help_text(
        """
        The Hugging Face repository, `owner/name`, e.g. `Qwen/Qwen2.5-1.5B-Instruct` or
        `openai/gsm8k`.

            repo_id="Qwen/Qwen2.5-1.5B-Instruct"
        """
    )


class HFRevisionField(CommitField):
    alias = "revision"
    required = True
    help = help_text(
        """
        The 40-character hex commit sha the repository is pinned at. Branches and tags
        (`main`, `v1.0`) move, so they are refused. Note beside the pin where it comes from.

            # the commit public code pins (say where)
            revision="989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
        """
    )


FACTS_KEYS = schema_keys("model_facts")


class ModelFactsField(SchemaDictField):
    alias = "facts"
    none_is_valid_value = True
    schema = FACTS_KEYS
    help = dict_help(
        """
        Facts about a model that preflight needs, as the model's `config.json` names them
        (tensor parallel sizes must divide the heads, lengths must fit the context); the
        builder verifies them; `rlaunch pin <repo_id>` prints them for a Hugging Face model.
        Unset for an artifact that is not a model. Keys (all required):
        """,
        FACTS_KEYS,
        """
            facts=dict(num_attention_heads=12, num_key_value_heads=2,
                       max_position_embeddings=32768, num_experts=None,
                       num_hidden_layers=28, hidden_size=1536, intermediate_size=8960,
                       vocab_size=151936, head_dim=None, torch_dtype="bfloat16",
                       num_parameters=1543714304)
        """,
    )


class HFModelFactsField(ModelFactsField):
    required = True
    none_is_valid_value = False


class ArtifactRowsField(PositiveIntField):
    alias = "rows"
    help = help_text(
        """
        Rows of a dataset, when known: lets `check` prove the data covers at least one train
        batch. Leave unset for models and tokenizers.

            rows=7473
        """
    )


class ArtifactKindField(ChoiceField):
    alias = "kind"
    required = True
    choices = ARTIFACT_KINDS
    help = help_text(
        f"""
        What the artifact is: one of {", ".join(repr(kind) for kind in ARTIFACT_KINDS)}. A run's
        slot takes only its kind (`model=` a model, `train_data=` a dataset); a model needs
        its `facts`. A `report` is what an eval stage writes (`rl_eval`); no run slot takes it.

            kind="model"
        """
    )


# ---------------------------------------------------------------------------------------------
# hf_model, hf_dataset


class HFModelTokenizerRepoIdField(CheckedStringField):
    alias = "tokenizer_repo_id"
    help = help_text(
        """
        The repository of the tokenizer; unset: the model's `repo_id` (the tokenizer shipped
        with the model).

            tokenizer_repo_id="Qwen/Qwen2.5-1.5B-Instruct"
        """
    )


class HFModelTokenizerRevisionField(CommitField):
    alias = "tokenizer_revision"
    help = help_text(
        """
        The 40-hex commit of the tokenizer repository; unset: the model's `revision`.
        Set it with `tokenizer_repo_id`.

            tokenizer_revision="989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
        """
    )


class HFDatasetConfigField(CheckedStringField):
    # Not the built_artifact's `config` (a builder's dict): another field class, another target.
    alias = "config"
    help = help_text(
        """
        The dataset configuration (subset) as `datasets.load_dataset(repo_id, config)` takes
        it, e.g. `main` or `socratic` for `openai/gsm8k`. Leave unset for a dataset with a
        single default configuration. The download is the whole repo at the commit either way;
        the runtime loads this configuration from it, and the build refuses a name the repo's
        README.md card does not list among its `configs`.

            config="main"
        """
    )


class HFDatasetSplitField(CheckedStringField):
    alias = "split"
    required = True
    help = help_text(
        """
        The split of the dataset this target stands for, e.g. `train` or `test`.

            split="train"
        """
    )


# ---------------------------------------------------------------------------------------------
# adopted_artifact, built_artifact


class AdoptedArtifactUriField(CheckedStringField):
    alias = "uri"
    required = True
    help = help_text(
        """
        Where the existing object lives, in an object store (`gs://bucket/path`,
        `s3://bucket/path`). Ambient paths (`/home/...`, `~`, `$VAR`) are refused by `check`.

            uri="gs://rl-posttraining-store/adopted/qwen2.5-1.5b-sft"
        """
    )


class AdoptedArtifactSha256Field(Sha256Field):
    alias = "sha256"
    required = True
    help = help_text(
        """
        The sha256 of the object's content (64 hex characters): adopting verifies it, so the
        name stands for exactly these bytes.

            sha256="9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
        """
    )




class BuiltArtifactBuilderField(CheckedStringField):
    alias = "builder"
    required = True
    help = help_text(
        """
        The builder plugin that makes the artifact (Python entry point group
        `rlaunch.builders`), e.g. `countdown_data`, `char_tokenizer`, `sft_model`.

            builder="countdown_data"
        """
    )


class BuiltArtifactConfigField(JsonDictField):
    alias = "config"
    help = help_text(
        """
        The builder's configuration, a dict of JSON values; part of the artifact's fingerprint.
        Default: `{}`.

            config={"seed": 7, "train_rows": 4000, "eval_rows": 256}
        """
    )


class BuiltArtifactDepsField(DictStringToStringField):
    alias = "deps"
    help = help_text(
        """
        The artifacts the builder consumes, by slot: `dict(data=":countdown_data",
        tokenizer=":char_tokenizer")`. Each value is the address of an artifact target, or of an
        `rl_run` (its export), and is a dependency of this target. Their identities and
        fingerprints are part of this artifact's fingerprint.

            deps={"data": ":countdown_data", "tokenizer": ":char_tokenizer"}
        """
    )
    expected_types: ClassVar[tuple[str, ...]] = (
        "hf_model",
        "hf_dataset",
        "adopted_artifact",
        "built_artifact",
        "rl_run",
    )


class BuiltArtifactDependenciesField(Dependencies):
    help = help_text(
        """
        Extra dependencies. The targets named in `deps` are dependencies already; there is
        usually nothing to add here.

            dependencies=[":notes"]  # e.g. a files() target with the notes
        """
    )
