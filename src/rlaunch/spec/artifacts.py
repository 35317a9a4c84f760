"""Artifacts: pinned Hugging Face repos, adopted URIs, and artifacts built by a builder.

Every artifact has an identity `name@version`. Field *syntax* (40-hex revisions, calendar
versions, sha256 digests, safe names) is checked by preflight rules with stable codes, not
here, so that all problems of a spec are reported at once with their fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import Field, model_validator

from rlaunch.spec.base import SpecModel, fingerprint_of

if TYPE_CHECKING:
    from rlaunch.spec.run import RunSpec

ArtifactKind = Literal["model", "tokenizer", "dataset", "report"]
"""`report`: what an eval stage writes (metrics and per-sample results); no run slot takes one."""


class ModelFacts(SpecModel):
    """Facts about a model that geometry checks need, declared beside its pin.

    The materializing builder verifies them against the model's `config.json`.
    """

    num_attention_heads: int
    """`num_attention_heads` in config.json; tensor parallel sizes must divide it."""
    num_key_value_heads: int
    """`num_key_value_heads` in config.json (GQA); equal to the heads for plain MHA."""
    max_position_embeddings: int
    """Context window in tokens: prompt + generation must fit in it."""
    num_experts: int | None
    """Routed experts for an MoE model; null for a dense model."""
    num_hidden_layers: int
    """`num_hidden_layers` in config.json: transformer layers (KV cache and activations scale with
    it)."""
    hidden_size: int
    """`hidden_size` in config.json: the residual width (activations scale with it)."""
    intermediate_size: int
    """`intermediate_size` in config.json: the dense MLP width (an MoE model's shared or dense
    width as its config names it)."""
    vocab_size: int
    """`vocab_size` in config.json: embedding rows (the logits of a micro batch scale with it)."""
    head_dim: int | None
    """`head_dim` in config.json where the config has it (Qwen3 sets it apart from hidden size /
    heads); null: hidden_size / num_attention_heads."""
    torch_dtype: Literal["bfloat16", "float16", "float32"]
    """`torch_dtype` in config.json: the dtype the weights are stored and served in."""
    num_parameters: int
    """Parameters of the whole model (every expert of an MoE), as its safetensors headers count
    them; `rlaunch pin` reads it, the snapshot builder verifies it."""

    def counts(self) -> list[tuple[str, int]]:
        """Every count among the facts (the nullable ones when set): each must be at least 1."""
        names = ("num_attention_heads", "num_key_value_heads", "max_position_embeddings",
                 "num_experts", "num_hidden_layers", "hidden_size", "intermediate_size",
                 "vocab_size", "head_dim", "num_parameters")
        return [(name, getattr(self, name)) for name in names if getattr(self, name) is not None]

    @property
    def attention_head_dim(self) -> int:
        """Dimension of one attention head: `head_dim`, else hidden_size / num_attention_heads."""
        if self.head_dim is not None:
            return self.head_dim
        return self.hidden_size // self.num_attention_heads if self.num_attention_heads else 0


class HFModel(SpecModel):
    """A Hugging Face model repo pinned at a commit, with its tokenizer pin."""

    type: Literal["hf_model"]
    """The variant's tag: `hf_model`."""
    name: str
    """With `version`, the artifact's identity `name@version` (a BUILD target's name)."""
    version: str
    """`YYYY.MM.DD[.N]` (a real date; immutable once launched) or `dev` / `<label>-dev`."""
    repo_id: str
    """The Hugging Face repository, `owner/name`, e.g. `Qwen/Qwen2.5-1.5B-Instruct`."""
    revision: str
    """40-hex commit sha. Branches and tags (`main`, `v1`) move and are rejected."""
    tokenizer_repo_id: str
    """The repository of the tokenizer (the model's `repo_id` when it ships its tokenizer)."""
    tokenizer_revision: str
    """The 40-hex commit of the tokenizer repository."""
    facts: ModelFacts
    """Facts about the model that preflight needs, as its `config.json` names them."""

    @property
    def kind(self) -> ArtifactKind:
        return "model"


class HFDataset(SpecModel):
    """A Hugging Face dataset repo pinned at a commit, one configuration and split."""

    type: Literal["hf_dataset"]
    """The variant's tag: `hf_dataset`."""
    name: str
    """With `version`, the artifact's identity `name@version` (a BUILD target's name)."""
    version: str
    """`YYYY.MM.DD[.N]` (a real date; immutable once launched) or `dev` / `<label>-dev`."""
    repo_id: str
    """The Hugging Face repository, `owner/name`, e.g. `openai/gsm8k`."""
    revision: str
    """40-hex commit sha. Branches and tags (`main`, `v1`) move and are rejected."""
    config: str | None
    """Dataset configuration (subset) name as `datasets.load_dataset(repo, config)` takes it,
    e.g. `main` for openai/gsm8k; null for a dataset with a single default configuration."""
    split: str
    """The split this artifact stands for, e.g. `train` or `test`."""
    rows: Annotated[int, Field(ge=1)] | None
    """Number of rows in the split when known (lets preflight check batch coverage)."""

    @property
    def kind(self) -> ArtifactKind:
        return "dataset"


class AdoptedArtifact(SpecModel):
    """An existing object (a URI in an object store) registered by content checksum."""

    type: Literal["adopted"]
    """The variant's tag: `adopted`."""
    name: str
    """With `version`, the artifact's identity `name@version` (a BUILD target's name)."""
    version: str
    """`YYYY.MM.DD[.N]` (a real date; immutable once launched) or `dev` / `<label>-dev`."""
    kind: ArtifactKind
    """`model`, `tokenizer`, `dataset` or `report`."""
    uri: str
    """Where the object lives, in an object store (`gs://bucket/path`, `s3://bucket/path`)."""
    sha256: str
    """The sha256 of the object's content (64 hex characters)."""
    facts: ModelFacts | None
    """Required when kind is `model`."""
    rows: Annotated[int, Field(ge=1)] | None
    """Rows of a dataset when known; null for models and tokenizers."""


class BuiltArtifact(SpecModel):
    """An artifact produced by a registered builder from a config and dependencies."""

    type: Literal["built"]
    """The variant's tag: `built`."""
    name: str
    """With `version`, the artifact's identity `name@version` (a BUILD target's name)."""
    version: str
    """`YYYY.MM.DD[.N]` (a real date; immutable once launched) or `dev` / `<label>-dev`."""
    kind: ArtifactKind
    """`model`, `tokenizer`, `dataset` or `report`."""
    builder: str
    """Builder plugin name (entry point group `rlaunch.builders`)."""
    config: dict[str, Any]
    """The builder's configuration, a dict of JSON values; part of the fingerprint."""
    deps: dict[str, "Artifact"]
    """The artifacts the builder consumes, by slot."""
    facts: ModelFacts | None
    """Required when kind is `model`."""
    rows: Annotated[int, Field(ge=1)] | None
    """Rows of a dataset when known; null for models and tokenizers."""


class RunExport(SpecModel):
    """The export of another run (its final HF-style model, `{store}/{run}/{version}/export/`):
    a model whose identity is the run's and whose fingerprint derives from the run's."""

    type: Literal["run_export"]
    name: str
    """The upstream run's name."""
    version: str
    """The upstream run's version."""
    run: "RunSpec"
    """The upstream run's whole spec: what the export comes from, and what a pipeline launches
    first when it has not finished."""

    @model_validator(mode="after")
    def _names_its_run(self) -> "RunExport":
        if (self.name, self.version) != (self.run.name, self.run.version):
            raise ValueError(
                f"a run export is named after its run: {self.name}@{self.version} names the "
                f"export of {self.run.name}@{self.run.version}; write name {self.run.name!r} "
                f"and version {self.run.version!r}"
            )
        return self

    @property
    def kind(self) -> ArtifactKind:
        return "model"

    @property
    def facts(self) -> ModelFacts | None:
        """The upstream's initial model's facts: training changes weights, not the shape."""
        return self.run.model.facts


Artifact = Annotated[
    Union[HFModel, HFDataset, AdoptedArtifact, BuiltArtifact, RunExport],
    Field(discriminator="type"),
]
AnyArtifact = HFModel | HFDataset | AdoptedArtifact | BuiltArtifact | RunExport
# Completed in rlaunch.spec.run, once the RunSpec a run export nests exists.
BuiltArtifact.model_rebuild(raise_errors=False)

RUN_EXPORT_SLOTS = ("model", "reference_model", "critic_model")
"""The run slots that may name another run (its export); a built artifact's deps may too."""

# Fields that name an artifact rather than describe its content.
_IDENTITY_FIELDS = ("name", "version")


def identity(artifact: AnyArtifact) -> str:
    """`name@version`, the artifact's identity."""
    return f"{artifact.name}@{artifact.version}"


def fingerprint(artifact: AnyArtifact) -> str:
    """Hash of the artifact's canonical config and its dependencies' identities and
    fingerprints. The name and version are identity, not content, so they are excluded;
    where the artifact is stored is not part of the spec at all. A run's export hashes the
    run's fingerprint (what the run is, not where it ran)."""
    if isinstance(artifact, RunExport):
        return fingerprint_of(run_export_content(artifact))
    content = artifact.model_dump(mode="json", exclude={"deps", *_IDENTITY_FIELDS})
    if isinstance(artifact, BuiltArtifact):
        content["deps"] = {
            slot: {"identity": identity(dep), "fingerprint": fingerprint(dep)}
            for slot, dep in sorted(artifact.deps.items())
        }
    return fingerprint_of(content)


def run_export_content(artifact: RunExport) -> dict[str, str]:
    """What a run export's fingerprint hashes (and its store record keeps as its config)."""
    return {"type": "run_export", "kind": "model", "run": artifact.run.fingerprint}


def walk(artifact: AnyArtifact, path: str):
    """Yield `(field_path, artifact)` for the artifact and, depth first, its dependencies."""
    yield path, artifact
    if isinstance(artifact, BuiltArtifact):
        for slot, dep in sorted(artifact.deps.items()):
            yield from walk(dep, f"{path}.deps.{slot}")
