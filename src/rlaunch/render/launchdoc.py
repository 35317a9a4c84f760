"""The launch document, typed: how executors, adapters and runtimes read a launch YAML.

`LaunchDocument.parse(data, source)` checks a parsed launch YAML once and gives attributes
(`launch.execution.allocation.num_nodes`) instead of nested dicts. A bad field is reported by
its path in the YAML, its value and the fix. Sections rlaunch writes are closed (an unknown key
is refused); the `skyrl` subtree is SkyRL's own configuration, so only the keys rlaunch reads
are typed there and every other key is kept as written (the SkyRL adapter passes the whole
subtree on as overrides).

Where the renderer leaves a SkyRL setting to SkyRL, the model carries SkyRL 0.3.0's own default
(`skyrl/train/config/config.py`: `OptimizerConfig` and `AlgorithmConfig`), so that a runtime
reading the document sees what SkyRL would use.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from rlaunch.render.document import LAUNCH_SCHEMA_VERSION
from rlaunch.spec.execution import Allocation


class LaunchError(ValueError):
    """A launch YAML that cannot be read, or is not one this rlaunch understands."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class _SkyRL(BaseModel):
    """A part of SkyRL's configuration: the keys rlaunch reads are typed, the rest kept."""

    model_config = ConfigDict(extra="allow", frozen=True, strict=True)


Positive = Field(ge=1)


class RunSection(_Section):
    id: str
    name: str
    version: str
    seed: int
    fingerprint: str


class GitSection(_Section):
    repo: str
    commit: str


class RuntimeSection(_Section):
    name: str
    profile: str
    package: str | None
    git: GitSection | None
    entrypoint: str = Field(min_length=1)
    required_fixes: list[str]
    fingerprint: str
    launcher_commit: str | None


class WandbSection(_Section):
    entity: str
    project: str


class ExecutionSection(_Section):
    executor: str
    address: str | None
    cluster: str | None
    priority: str
    max_retries: int
    timeout_minutes: int
    allocation: Allocation
    """The spec's own model: the allocation is written as the spec declares it."""
    env: list[str]
    """Names of the credentials the executor forwards (never their values)."""
    wandb: WandbSection | None


class ArtifactsSection(_Section):
    store_prefix: str
    run_root: str
    checkpoint_root: str
    export_root: str
    attempts_root: str
    terminal_manifest: str


class InputEntry(_Section):
    identity: str
    kind: str
    type: str
    fingerprint: str
    uri: str
    source: dict[str, Any]


class ResumeSection(_Section):
    mode: str
    path: str | None
    compatible_runtimes: list[str]


class MegatronConfig(_SkyRL):
    tensor_model_parallel_size: int = Positive
    pipeline_model_parallel_size: int = Positive
    context_parallel_size: int = Positive
    expert_model_parallel_size: int = Positive
    expert_tensor_parallel_size: int = Positive


class OptimizerConfig(_SkyRL):
    lr: float
    adam_betas: list[float] = Field(default_factory=lambda: [0.9, 0.999], min_length=2,
                                    max_length=2)
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0


class ModelRef(_SkyRL):
    path: str | None


class PolicyConfig(_SkyRL):
    optimizer_config: OptimizerConfig
    sequence_parallel_size: int = Positive
    megatron_config: MegatronConfig


class CriticConfig(_SkyRL):
    model: ModelRef


class PlacementConfig(_SkyRL):
    colocate_all: bool
    colocate_policy_ref: bool
    policy_num_nodes: int = Positive
    policy_num_gpus_per_node: int = Positive
    ref_num_nodes: int = Positive
    ref_num_gpus_per_node: int = Positive


class AlgorithmConfig(_SkyRL):
    advantage_estimator: str
    use_kl_loss: bool
    use_kl_in_reward: bool
    kl_loss_coef: float
    kl_estimator_type: str
    eps_clip_low: float
    eps_clip_high: float
    grpo_norm_by_std: bool = True


class TrainerConfig(_SkyRL):
    placement: PlacementConfig
    strategy: Literal["fsdp", "megatron"]
    policy: PolicyConfig
    critic: CriticConfig
    algorithm: AlgorithmConfig
    seed: int
    resume_mode: str
    resume_path: str | None
    max_ckpts_to_keep: int
    ckpt_interval: int
    hf_save_interval: int
    epochs: int = Positive
    max_training_steps: int | None
    train_batch_size: int = Positive
    policy_mini_batch_size: int = Positive
    micro_train_batch_size_per_gpu: int = Positive
    micro_forward_batch_size_per_gpu: int = Positive
    eval_batch_size: int = Positive
    max_prompt_length: int = Positive
    project_name: str
    logger: str


class InferenceEngineConfig(_SkyRL):
    num_engines: int = Positive
    tensor_parallel_size: int = Positive
    pipeline_parallel_size: int = Positive
    data_parallel_size: int = Positive


class SamplingParams(_SkyRL):
    max_generate_length: int = Positive
    temperature: float


class GeneratorConfig(_SkyRL):
    inference_engine: InferenceEngineConfig
    n_samples_per_prompt: int = Positive
    max_turns: int
    sampling_params: SamplingParams


class EnvironmentConfig(_SkyRL):
    env_class: str


class SkyRLConfig(_SkyRL):
    trainer: TrainerConfig
    generator: GeneratorConfig
    environment: EnvironmentConfig


class LaunchDocument(_Section):
    schema_version: Literal[1]
    run: RunSection
    runtime: RuntimeSection
    execution: ExecutionSection
    artifacts: ArtifactsSection
    inputs: dict[str, InputEntry]
    """Input slots in the YAML's order (`model`, `tokenizer`, ...; unset slots are absent)."""
    resume: ResumeSection
    skyrl: SkyRLConfig
    source: str = Field(default="<launch yaml>", exclude=True)
    """Where the document was read from (for messages)."""
    _data: dict[str, Any] = PrivateAttr(default_factory=dict)

    @classmethod
    def parse(cls, data: Mapping[str, Any], source: str = "<launch yaml>") -> LaunchDocument:
        """Check a parsed launch YAML; a LaunchError names every bad field by its path."""
        try:
            document = cls.model_validate({**data, "source": source})
        except ValidationError as err:
            raise LaunchError(_describe(err, source)) from None
        document._data = copy.deepcopy(dict(data))
        return document

    def to_dict(self) -> dict[str, Any]:
        """The document as it was read (plain data, keys in the file's order)."""
        return copy.deepcopy(self._data)

    def skyrl_tree(self) -> dict[str, Any]:
        """The `skyrl` subtree exactly as written, in its order (what SkyRL is handed as
        overrides)."""
        return copy.deepcopy(self._data["skyrl"])

    def submission_name(self, attempt_id: str) -> str:
        """`rlaunch-<name>-<version>-<attempt id>`: the job's name on every executor."""
        return f"rlaunch-{self.run.name}-{self.run.version}-{attempt_id}"


def _describe(err: ValidationError, source: str) -> str:
    problems = []
    for error in err.errors():
        path = ".".join(str(part) for part in error["loc"])
        shown = "" if error["type"] == "missing" else f" (got {error.get('input')!r})"
        problems.append(f"{path}: {error['msg']}{shown}")
    return (
        f"{source}: not a launch YAML (schema_version {LAUNCH_SCHEMA_VERSION}) this rlaunch "
        f"reads: {'; '.join(problems)}; render it again with `rlaunch render SPEC -o FILE` "
        f"(docs/launch-yaml.md lists every field)"
    )
