"""Artifacts: pinned Hugging Face repos, adopted URIs, and artifacts built by a builder.

Every artifact has an identity `name@version`. Field *syntax* (40-hex revisions, calendar
versions, sha256 digests, safe names) is checked by preflight rules with stable codes, not
here, so that all problems of a spec are reported at once with their fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import Field, model_validator

from rlaunch.spec.base import SpecModel, Syntax, fingerprint_of

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


Version = Annotated[str, Syntax("version")]
"""A calendar version `YYYY.MM.DD` or `YYYY.MM.DD.N` (a real date; immutable once launched: a
changed artifact gets a new version) or `dev` / `<label>-dev` (mutable, always rebuilt); a
calendar version may not depend on a dev one (VER001)."""
Commit = Annotated[str, Syntax("commit")]
Rows = Annotated[int, Field(ge=1)]


class HFModel(SpecModel):
    """A Hugging Face model repo pinned at a commit, with its tokenizer pin."""

    type: Literal["hf_model"]
    """The variant's tag: `hf_model`."""
    name: str
    """With `version`, the artifact's identity `name@version` (a BUILD target's name)."""
    version: Version
    """The artifact's version; with its name the identity `name@version` and the store path
    `{prefix}/{name}/{version}/`. A calendar version `YYYY.MM.DD` or `YYYY.MM.DD.N` (a real
    date) is immutable: once launched, its fingerprint is recorded and a changed artifact must
    get a new version. `dev` and `<label>-dev` (e.g. `sft-dev`) are mutable and always rebuilt;
    a calendar version may not depend on a dev one."""
    repo_id: str = Field(examples=["Qwen/Qwen2.5-1.5B-Instruct"])
    """The Hugging Face repository, `owner/name`, e.g. `Qwen/Qwen2.5-1.5B-Instruct`."""
    revision: Commit
    """The 40-character hex commit sha the repository is pinned at. Branches and tags (`main`,
    `v1.0`) move, so they are refused. Note beside the pin where it comes from."""
    tokenizer_repo_id: str
    """The repository of the tokenizer; in a BUILD file, unset: the model's `repo_id` (the
    tokenizer shipped with the model)."""
    tokenizer_revision: Commit
    """The 40-hex commit of the tokenizer repository; in a BUILD file, unset: the model's
    `revision`. Set it with `tokenizer_repo_id`."""
    facts: ModelFacts
    """Facts about the model that preflight needs, as its `config.json` names them (tensor
    parallel sizes must divide the heads, lengths must fit the context); the builder verifies
    them; `rlaunch pin <repo_id>` prints them."""

    @property
    def kind(self) -> ArtifactKind:
        return "model"


class HFDataset(SpecModel):
    """A Hugging Face dataset repo pinned at a commit, one configuration and split."""

    type: Literal["hf_dataset"]
    """The variant's tag: `hf_dataset`."""
    name: str
    """With `version`, the artifact's identity `name@version` (a BUILD target's name)."""
    version: Version
    """The dataset's version; with its name the identity `name@version`. `YYYY.MM.DD[.N]` (a
    real date; immutable once launched) or `dev` / `<label>-dev` (mutable)."""
    repo_id: str = Field(examples=["openai/gsm8k"])
    """The Hugging Face repository, `owner/name`, e.g. `openai/gsm8k`."""
    revision: Commit
    """The 40-character hex commit sha the repository is pinned at. Branches and tags move, so
    they are refused."""
    config: str | None = None
    """The dataset configuration (subset) as `datasets.load_dataset(repo_id, config)` takes it,
    e.g. `main` or `socratic` for `openai/gsm8k`; null for a dataset with a single default
    configuration. The download is the whole repo at the commit either way; the runtime loads
    this configuration from it, and the build refuses a name the repo's README.md card does not
    list among its `configs`."""
    split: str
    """The split this artifact stands for, e.g. `train` or `test`."""
    rows: Rows | None = None
    """Rows of the split, when known: lets `check` prove the data covers at least one train
    batch (BATCH010)."""

    @property
    def kind(self) -> ArtifactKind:
        return "dataset"


class AdoptedArtifact(SpecModel):
    """An existing object (a URI in an object store) registered by content checksum."""

    type: Literal["adopted"]
    """The variant's tag: `adopted`."""
    name: str
    """With `version`, the artifact's identity `name@version` (a BUILD target's name)."""
    version: Version = Field(examples=["2026.10.14"])
    """The artifact's version; with its name the identity `name@version`. `YYYY.MM.DD[.N]` (a
    real date; immutable once launched) or `dev` / `<label>-dev` (mutable)."""
    kind: ArtifactKind = Field(examples=["model"])
    """What the artifact is: `model`, `tokenizer`, `dataset` or `report`. A run's slot takes
    only its kind (`model=` a model, `train_data=` a dataset); a model needs its `facts`. A
    `report` is what an eval stage writes; no run slot takes it."""
    uri: str = Field(examples=["gs://rl-posttraining-store/adopted/qwen2.5-1.5b-sft"])
    """Where the existing object lives, in an object store (`gs://bucket/path`,
    `s3://bucket/path`). Ambient paths (`/home/...`, `~`, `$VAR`) are refused by `check`."""
    sha256: Annotated[str, Syntax("sha256")] = Field(
        examples=["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"])
    """The sha256 of the object's content (64 hex characters): adopting verifies it, so the
    name stands for exactly these bytes."""
    facts: ModelFacts | None = None
    """Facts about a model that preflight needs, as its `config.json` names them; required when
    kind is `model`, null otherwise."""
    rows: Rows | None = Field(default=None, examples=[7473])
    """Rows of a dataset, when known (BATCH010); null for models and tokenizers."""


class BuiltArtifact(SpecModel):
    """An artifact produced by a registered builder from a config and dependencies."""

    type: Literal["built"]
    """The variant's tag: `built`."""
    name: str
    """With `version`, the artifact's identity `name@version` (a BUILD target's name)."""
    version: Version
    """The artifact's version; with its name the identity `name@version`. `YYYY.MM.DD[.N]` (a
    real date; immutable once launched) or `dev` / `<label>-dev` (mutable, always rebuilt)."""
    kind: ArtifactKind
    """What the artifact is: `model`, `tokenizer`, `dataset` or `report`. A run's slot takes
    only its kind; a model needs its `facts`; a `report` is what an eval stage writes."""
    builder: str
    """The builder plugin that makes the artifact (Python entry point group `rlaunch.builders`,
    or `module:Class`), e.g. `countdown_data`, `char_tokenizer`, `sft_model` (ART009)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The builder's configuration, a dict of JSON values; part of the artifact's fingerprint
    (ART010 checks it against the builder's own fields)."""
    deps: dict[str, "Artifact"] = Field(default_factory=dict)
    """The artifacts the builder consumes, by slot. Their identities and fingerprints are part
    of this artifact's fingerprint."""
    facts: ModelFacts | None = Field(
        default=None, examples=[{"num_attention_heads": 4, "num_key_value_heads": 4,
                                 "max_position_embeddings": 64, "num_experts": None,
                                 "num_hidden_layers": 2, "hidden_size": 64,
                                 "intermediate_size": 256, "vocab_size": 50, "head_dim": None,
                                 "torch_dtype": "float32", "num_parameters": 101888}])
    """Facts about a model that preflight needs, as its `config.json` names them; required when
    kind is `model` (the builder verifies them), null otherwise."""
    rows: Rows | None = None
    """Rows of a dataset, when known (BATCH010); null for models and tokenizers."""


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
