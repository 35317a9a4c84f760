"""RunSpec: one RL run, everything needed to preflight, render and launch it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, PrivateAttr, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from rlaunch.spec.artifacts import (
    Artifact,
    BuiltArtifact,
    RunExport,
    fingerprint,
    identity,
    walk,
)
from rlaunch.spec.base import SpecModel, fingerprint_of
from rlaunch.spec.catalog import (
    SKYRL_0_3_0_SETTINGS,
    is_eval_entrypoint,
    resolve,
    settings_catalog,
)
from rlaunch.spec.execution import Allocation, Execution
from rlaunch.spec.roleplan import RolePlan
from rlaunch.spec.runtime import RuntimePin, runtime_fingerprint
from rlaunch.spec.settings import SettingsCatalog
from rlaunch.spec.skyrl_mapping import SKYRL_RELEASE
from rlaunch.spec.sources import BuildSources

SCHEMA_VERSION = 1

AdvantageEstimator = Literal["grpo", "gae", "rloo", "reinforce++"]


class Lengths(SpecModel):
    max_prompt_length: int
    """Prompt tokens (after the chat template)."""
    max_generate_length: int
    """Generated tokens per completion."""
    max_input_length: int
    """Generator input budget; equals max_prompt_length for single-turn."""
    max_turns: int
    """1 for single-turn tasks."""


class KLSettings(SpecModel):
    use_kl_loss: bool
    """KL penalty in the loss."""
    use_kl_in_reward: bool
    """KL penalty in the reward (exclusive with the loss)."""
    kl_loss_coef: Annotated[float, Field(ge=0)]
    """KL coefficient, >= 0."""
    kl_estimator_type: Literal["k1", "k2", "k3", "abs"]
    """`k1`, `k2`, `k3` or `abs`."""


class Algorithm(SpecModel):
    advantage_estimator: AdvantageEstimator
    """`grpo`, `gae` (needs a critic), `rloo` or `reinforce++`."""
    kl: KLSettings
    """KL settings."""
    learning_rate: float
    """Policy learning rate; finite and positive (ALGO007)."""
    epochs: int
    """Passes over the training data."""
    max_training_steps: int | None
    """Stop after this many steps; null: run all epochs."""
    temperature: Annotated[float, Field(ge=0)]
    """Sampling temperature for rollouts, >= 0 (0 samples greedily)."""
    clip_ratio: Annotated[float, Field(gt=0, lt=1)]
    """PPO clip epsilon (low and high), in (0, 1)."""
    fully_async: bool
    """Fully asynchronous training (needs train batch == policy mini batch)."""
    environment: str
    """Task environment (SkyRL `env_class`), e.g. `gsm8k`, `countdown`."""


class CheckpointPolicy(SpecModel):
    ckpt_interval: int
    """Steps between checkpoints."""
    max_ckpts_to_keep: int
    """-1 keeps all; 0 is rejected (it would keep none)."""
    hf_save_interval: int
    """Steps between HF exports; -1: none in the loop (the final one per `export_final`)."""
    export_final: bool
    """Export the last step; SkyRL does whenever it exports at all (EXEC007)."""


class ResumePolicy(SpecModel):
    mode: Literal["none", "latest", "from_path"]
    """`none`, `latest` (the newest checkpoint under the run's own root; refused if another runtime
    wrote it, unless declared compatible) or `from_path` (with `path`)."""
    path: str | None
    """Checkpoint directory for `from_path`; null otherwise."""
    compatible_runtimes: list[str]
    """Runtime fingerprints whose checkpoints this run may resume (declared compatibility)."""


class SmokeOf(SpecModel):
    """The full run this smoke run stands for, with what the smoke must share with it."""

    name: str
    """The full run's name."""
    version: str
    """The full run's version."""
    role_plan: RolePlan
    """The full run's role plan."""
    runtime: RuntimePin
    """The full run's runtime pin."""
    allocation: Allocation
    """The full run's allocation."""
    handoff_kinds: dict[str, str]
    """Slot -> artifact kind of the full run (`model: model`, `train_data: dataset`, ...)."""
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    """The full run's extra SkyRL settings (absent: none)."""


def _by_pin(lookup: Callable[..., Any], runtime: RuntimePin) -> Any:
    """`lookup` (the catalog's `settings_catalog` or `resolve`) for a runtime pin."""
    return lookup(runtime.profile, package=runtime.package, commit=runtime.commit)


def _catalog_of(runtime: RuntimePin) -> SettingsCatalog | str:
    return _by_pin(settings_catalog, runtime)


def _release_of(runtime: RuntimePin) -> str:
    release = _by_pin(resolve, runtime) if runtime.profile == "skyrl" else None
    return SKYRL_RELEASE if release is None else release.version


def _no_defaults(runtime: RuntimePin) -> dict[str, Any]:
    return {}


class CatalogLookup:
    """What a spec has looked up about its runtime pin (its settings catalog, its SkyRL release,
    the setting defaults read), each kept with the pin it was for: preflight asks for them on
    every plan. Not the spec's content: every lookup equals every other, so a spec that has
    asked still equals one that has not. Copies of a spec (parse_spec reuses one per part beside
    the plan) share it; the pin's identity says whether a value applies. Each value is written
    with its pin as one pair, so threads asking for copies with other pins never read one pin's
    value as another's."""

    __slots__ = ("catalog", "release", "defaults")

    def __init__(self) -> None:
        self.catalog: tuple[RuntimePin, SettingsCatalog | str] | None = None
        self.release: tuple[RuntimePin, str] | None = None
        self.defaults: tuple[RuntimePin, dict[str, Any]] | None = None
        """The defaults `skyrl_setting` has read for the pin, by name."""

    def kept(self, slot: str, pin: RuntimePin, compute: Callable[[RuntimePin], Any]) -> Any:
        """The value in `slot` for `pin`, computed by `compute(pin)` when the slot holds none or
        another pin's."""
        known = getattr(self, slot)
        if known is None or known[0] is not pin:
            known = (pin, compute(pin))
            setattr(self, slot, known)
        return known[1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CatalogLookup)

    __hash__ = None  # type: ignore[assignment]


class RunSpec(SpecModel):
    schema_version: Literal[1]
    """The RunSpec format version; 1."""
    name: str
    """The run's name; with `version` its identity `name@version`."""
    version: str
    """`YYYY.MM.DD[.N]` (a real date; immutable once launched) or `dev` / `<label>-dev`
    (mutable)."""
    seed: Annotated[int, Field(ge=0, lt=2**32)]
    """The run's random seed, 0 <= seed < 2**32 (the range NumPy seeds with)."""
    model: Artifact
    """The policy's initial model (an artifact of kind model)."""
    tokenizer: Artifact
    """The tokenizer: the model itself for a Hugging Face model that ships one, or a tokenizer
    artifact."""
    reference_model: Artifact | None
    """A separate reference model; null: the reference (if any) is the initial policy."""
    critic_model: Artifact | None
    """The critic's initial model (GAE); null: no critic."""
    train_data: Artifact
    """The training dataset."""
    eval_data: Artifact | None
    """The evaluation dataset; null: no evaluation."""
    environment_data: Artifact | None = None
    """Data the task environment reads (a folder of SQL databases, a search index), an artifact
    of kind dataset pinned, built or adopted like any input and staged onto every node; the
    launcher sets `environment_data_setting` to its staged folder. Null (absent): none."""
    environment_data_setting: str | None = None
    """The SkyRL setting the staged folder of `environment_data` is given to, a string field of
    the pinned release, e.g. `environment.skyrl_gym.text2sql.db_path`; set exactly when
    `environment_data` is, and not also in `settings`."""
    runtime: RuntimePin
    """The runtime the run is launched on."""
    role_plan: RolePlan
    """Who runs on which GPUs, with which parallelism and batch sizes."""
    lengths: Lengths
    """Prompt and generation lengths in tokens (they must fit in the model's context)."""
    algorithm: Algorithm
    """The RL algorithm."""
    settings: dict[str, JsonValue] = Field(default_factory=dict)
    """Extra runtime settings by SkyRL's dotted config names, e.g.
    `{"generator.inference_engine.gpu_memory_utilization": 0.85}`; each name must be a field of
    the pinned release's catalog, each value of its type, and none decided by the plan. Absent
    or empty: SkyRL's own defaults."""
    logger: Literal["console", "wandb"]
    """Where metrics go: `console` or `wandb` (needs `execution.wandb`)."""
    checkpoint: CheckpointPolicy
    """Checkpoint and export policy; checkpoints go under the run's derived root."""
    resume: ResumePolicy
    """What the run resumes from."""
    execution: Execution
    """Where the run executes."""
    smoke_of: SmokeOf | None
    """The full run this run is the smoke test of; null for a full run."""

    _build_sources: BuildSources | None = PrivateAttr(default=None)
    _catalog: CatalogLookup = PrivateAttr(default_factory=CatalogLookup)
    """What the spec has looked up about its runtime pin (`CatalogLookup`)."""

    def _pinned(self, slot: str, compute: Callable[[RuntimePin], Any]) -> Any:
        """`CatalogLookup.kept` for this spec's runtime pin. The private attributes' dict is
        read directly: `self._catalog` goes through pydantic's __getattr__, which costs more
        than the rest of a setting's lookup."""
        return self.__pydantic_private__["_catalog"].kept(slot, self.runtime, compute)

    def settings_catalog(self) -> SettingsCatalog | str:
        """The settings the pinned runtime release reads, or why the catalog has none."""
        return self._pinned("catalog", _catalog_of)

    @property
    def skyrl_release(self) -> str:
        """The SkyRL release whose config names the launch YAML's `skyrl` subtree is written in:
        the pinned release of a SkyRL run, else SkyRL 0.3.0 (the names the smoke runtime reads,
        and the release a SkyRL pin the catalog does not know is rendered for)."""
        return self._pinned("release", _release_of)

    @model_validator(mode="after")
    def _settings_exist(self) -> RunSpec:
        """Every setting is a field of the pinned release, of its type, not the plan's."""
        if not self.settings:
            return self
        catalog = self.settings_catalog()
        if isinstance(catalog, str):
            problems = [(("settings",), catalog, dict(self.settings))]
        else:
            problems = [
                (("settings", name), problem, value)
                for name, value in self.settings.items()
                if (problem := catalog.problem(name, value)) is not None
            ]
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, [
                InitErrorDetails(type=PydanticCustomError("setting", "{problem}",
                                                          {"problem": problem}),
                                 loc=loc, input=value)
                for loc, problem, value in problems
            ])
        return self

    @model_validator(mode="after")
    def _environment_data_names_a_setting(self) -> RunSpec:
        """`environment_data` and `environment_data_setting` come together; the setting is a
        string field of the pinned release that `settings` does not also set."""
        setting, data = self.environment_data_setting, self.environment_data
        if setting is None and data is None:
            return self
        problem = None
        if setting is None:
            problem = ("environment_data is set but environment_data_setting is not: name the "
                       "SkyRL setting that reads its folder, e.g. "
                       "environment.skyrl_gym.text2sql.db_path")
        elif data is None:
            problem = (f"environment_data_setting {setting!r} is set but environment_data is "
                       "not: name the artifact whose staged folder it receives")
        elif setting in self.settings:
            problem = (f"{setting!r} is both environment_data_setting and a key of settings: "
                       "remove it from settings (the launcher sets it to the staged folder of "
                       "environment_data)")
        else:
            catalog = self.settings_catalog()
            if not isinstance(catalog, str):
                problem = catalog.problem(setting, "/staged/folder")
        if problem is None:
            return self
        raise ValidationError.from_exception_data(type(self).__name__, [InitErrorDetails(
            type=PydanticCustomError("environment_data", "{problem}", {"problem": problem}),
            loc=("environment_data_setting",), input=setting)])

    def skyrl_setting(self, name: str, default: Any = None) -> Any:
        """The value of SkyRL setting `name`: as the run sets it in `settings`, else `default`
        when given, else the pinned release's own default (its catalog), else SkyRL 0.3.0's
        (the names are SkyRL's; a runtime that does not read one runs as SkyRL's default
        would). KeyError for a name SkyRL 0.3.0 does not have."""
        settings = self.settings
        if name in settings:
            return settings[name]
        if default is not None:
            return default
        defaults = self._pinned("defaults", _no_defaults)
        if name in defaults:
            return defaults[name]
        catalog = self.settings_catalog()
        if not isinstance(catalog, str) and name in catalog.fields:
            value = catalog.default(name)
        else:
            value = SKYRL_0_3_0_SETTINGS.default(name)
        defaults[name] = value
        return value

    @property
    def build_sources(self) -> BuildSources | None:
        """The BUILD targets the spec was written from (spec files the Pants plugin writes);
        not part of the spec's content."""
        return self._build_sources

    @property
    def identity(self) -> str:
        return f"{self.name}@{self.version}"

    def slots(self) -> dict[str, Artifact]:
        """The artifact slots that are set, by field name."""
        named = {
            "model": self.model,
            "tokenizer": self.tokenizer,
            "reference_model": self.reference_model,
            "critic_model": self.critic_model,
            "train_data": self.train_data,
            "eval_data": self.eval_data,
            "environment_data": self.environment_data,
        }
        return {slot: artifact for slot, artifact in named.items() if artifact is not None}

    def artifacts(self):
        """`(field_path, artifact)` for every artifact in the spec, dependencies included."""
        for slot, artifact in self.slots().items():
            yield from walk(artifact, slot)

    def handoff_kinds(self) -> dict[str, str]:
        return {slot: artifact.kind for slot, artifact in self.slots().items()}

    @property
    def evaluates_only(self) -> bool:
        """Whether the runtime's entrypoint only evaluates (SkyRL's `main_generate`): the run
        scores `model` on `eval_data` and trains nothing; its export is a report."""
        return is_eval_entrypoint(self.runtime.profile, self.runtime.entrypoint)

    @property
    def runtime_fingerprint(self) -> str:
        return runtime_fingerprint(self.runtime)

    @property
    def fingerprint(self) -> str:
        """Hash of what the run *is*: everything but where it runs. Of the execution only
        the allocation counts; executor, address, priority, credentials, W&B and store
        prefix may change without a new version."""
        return fingerprint_of(self._content())

    @property
    def fingerprint_beside_runtime(self) -> str:
        """The fingerprint of everything but the runtime pin and the checkpoint compatibility
        it states (`resume.compatible_runtimes`): equal for a run and its upgrade to another
        runtime release when nothing else changed (VER006 lets such an upgrade keep its
        calendar version when the spec states compatibility with the runtime launched before)."""
        content = self._content()
        del content["runtime"]
        del content["resume"]["compatible_runtimes"]
        if content["smoke_of"] is not None:
            del content["smoke_of"]["runtime"]
        return fingerprint_of(content)

    def _content(self) -> dict[str, Any]:
        content = self.model_dump(mode="json", exclude={"name", "version", "execution"})
        # Runs without settings keep the fingerprints they had before settings existed.
        if not content["settings"]:
            del content["settings"]
        # And runs without environment data the fingerprints they had before it existed.
        if content["environment_data"] is None:
            del content["environment_data"], content["environment_data_setting"]
        if content["smoke_of"] is not None and not content["smoke_of"]["settings"]:
            del content["smoke_of"]["settings"]
        content["allocation"] = self.execution.allocation.model_dump(mode="json")
        # Another run's export counts by identity and the run's fingerprint, so where the
        # upstream runs (its execution) does not change this run's fingerprint either.
        for path, export in self.run_exports():
            *parents, last = path.split(".")
            node = content
            for part in parents:
                node = node[part]
            node[last] = {"identity": identity(export), "fingerprint": fingerprint(export)}
        return content

    def input_identities(self) -> dict[str, str]:
        return {slot: identity(artifact) for slot, artifact in self.slots().items()}

    def run_exports(self) -> list[tuple[str, RunExport]]:
        """`(field_path, export)` of every other run's export this run reads (directly, or
        through a built artifact's deps), in field order."""
        return [(path, artifact) for path, artifact in self.artifacts()
                if isinstance(artifact, RunExport)]


# A run's export nests the upstream's RunSpec: resolve the forward references now that it exists.
RunExport.model_rebuild(_types_namespace={"RunSpec": RunSpec})
BuiltArtifact.model_rebuild(force=True, _types_namespace={"RunSpec": RunSpec})
RunSpec.model_rebuild(force=True)
