"""RunSpec: one RL run, everything needed to preflight, render and launch it."""

from __future__ import annotations

from typing import Literal

from rlaunch.spec.artifacts import Artifact, identity, walk
from rlaunch.spec.base import SpecModel, fingerprint_of
from rlaunch.spec.execution import Allocation, Execution
from rlaunch.spec.roleplan import RolePlan
from rlaunch.spec.runtime import RuntimePin, runtime_fingerprint

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
    use_kl_in_reward: bool
    kl_loss_coef: float
    kl_estimator_type: Literal["k1", "k2", "k3", "abs"]


class Algorithm(SpecModel):
    advantage_estimator: AdvantageEstimator
    kl: KLSettings
    learning_rate: float
    epochs: int
    max_training_steps: int | None
    """Stop after this many steps; null: run all epochs."""
    temperature: float
    """Sampling temperature for rollouts."""
    clip_ratio: float
    """PPO clip epsilon (low and high)."""
    fully_async: bool
    environment: str
    """Task environment (SkyRL `env_class`), e.g. `gsm8k`, `countdown`."""


class CheckpointPolicy(SpecModel):
    ckpt_interval: int
    """Steps between checkpoints."""
    max_ckpts_to_keep: int
    """-1 keeps all; 0 is rejected (it would keep none)."""
    hf_save_interval: int
    """Steps between HF exports; -1: only the final export."""
    export_final: bool
    """Write the HF-style export and the terminal manifest when training ends."""


class ResumePolicy(SpecModel):
    mode: Literal["none", "latest", "from_path"]
    path: str | None
    """Checkpoint directory for `from_path`; null otherwise."""
    compatible_runtimes: list[str]
    """Runtime fingerprints whose checkpoints this run may resume (declared compatibility)."""


class SmokeOf(SpecModel):
    """The full run this smoke run stands for, with what the smoke must share with it."""

    name: str
    version: str
    role_plan: RolePlan
    runtime: RuntimePin
    allocation: Allocation
    handoff_kinds: dict[str, str]
    """Slot -> artifact kind of the full run (`model: model`, `train_data: dataset`, ...)."""


class RunSpec(SpecModel):
    schema_version: Literal[1]
    name: str
    version: str
    seed: int
    model: Artifact
    tokenizer: Artifact
    reference_model: Artifact | None
    """A separate reference model; null: the reference (if any) is the initial policy."""
    critic_model: Artifact | None
    train_data: Artifact
    eval_data: Artifact | None
    runtime: RuntimePin
    role_plan: RolePlan
    lengths: Lengths
    algorithm: Algorithm
    logger: Literal["console", "wandb"]
    checkpoint: CheckpointPolicy
    resume: ResumePolicy
    execution: Execution
    smoke_of: SmokeOf | None

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
        }
        return {slot: artifact for slot, artifact in named.items() if artifact is not None}

    def artifacts(self):
        """`(field_path, artifact)` for every artifact in the spec, dependencies included."""
        for slot, artifact in self.slots().items():
            yield from walk(artifact, slot)

    def handoff_kinds(self) -> dict[str, str]:
        return {slot: artifact.kind for slot, artifact in self.slots().items()}

    @property
    def runtime_fingerprint(self) -> str:
        return runtime_fingerprint(self.runtime)

    @property
    def fingerprint(self) -> str:
        """Hash of what the run *is*: everything but where it runs. Of the execution only
        the allocation counts; executor, address, priority, credentials, W&B and store
        prefix may change without a new version."""
        content = self.model_dump(mode="json", exclude={"name", "version", "execution"})
        content["allocation"] = self.execution.allocation.model_dump(mode="json")
        return fingerprint_of(content)

    def input_identities(self) -> dict[str, str]:
        return {slot: identity(artifact) for slot, artifact in self.slots().items()}
