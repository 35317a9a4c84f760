"""Fields of the artifact targets: hf_model, hf_dataset, adopted_artifact, built_artifact.

One field per key of the artifact variant each target declares, made from the library's schema
(schema.json: the model's type, syntax, bounds, default and docstring); the target's name is the
artifact's name. Written here: what only a BUILD file has, the tokenizer pin that defaults to
the model's own, and a built artifact's deps, which are addresses.
"""

from __future__ import annotations

from typing import ClassVar

from pants.engine.target import Dependencies, DictStringToStringField, Field
from pants.util.strutil import help_text

from rlaunch_pants.schema_fields import camel, key_field, section_fields


def _artifact_fields(
    tag: str, prefix: str, *, skip: tuple[str, ...] = ()
) -> dict[str, type[Field]]:
    return section_fields(f"artifacts.{tag}", skip=("type", "name", *skip), prefix=prefix)


# A model that ships its tokenizer needs no tokenizer pin in BUILD: unset, the model's own.
HF_TOKENIZER_FIELD = {
    key: key_field(
        f"artifacts.hf_model.{key}", optional=True, class_name=f"HFModel{camel(key)}Field"
    )
    for key in ("tokenizer_repo_id", "tokenizer_revision")
}
HFModelTokenizerRepoIdField = HF_TOKENIZER_FIELD["tokenizer_repo_id"]
HFModelTokenizerRevisionField = HF_TOKENIZER_FIELD["tokenizer_revision"]
HF_MODEL_FIELD = {
    **_artifact_fields("hf_model", "HFModel", skip=tuple(HF_TOKENIZER_FIELD)),
    **HF_TOKENIZER_FIELD,
}
HF_DATASET_FIELD = _artifact_fields("hf_dataset", "HFDataset")
ADOPTED_FIELD = _artifact_fields("adopted", "AdoptedArtifact")
BUILT_FIELD = _artifact_fields("built", "BuiltArtifact", skip=("deps",))
BuiltArtifactBuilderField = BUILT_FIELD["builder"]


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
