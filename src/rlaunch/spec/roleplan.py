"""The role plan: who runs on which GPUs, with which parallelism and batch sizes.

Every field is required: a role plan has no silent defaults. Derived sizes are properties,
so they are never written down twice.
"""

from __future__ import annotations

from typing import Literal

from rlaunch.spec.base import SpecModel

Strategy = Literal["fsdp", "megatron"]


class PolicyRole(SpecModel):
    num_nodes: int
    """Nodes the policy trains on."""
    num_gpus_per_node: int
    """GPUs per node the policy uses."""
    tensor_parallel_size: int
    """Megatron TP; 1 for FSDP."""
    pipeline_parallel_size: int
    """Megatron PP; 1 for FSDP."""
    context_parallel_size: int
    """Megatron CP; 1 for FSDP."""
    expert_parallel_size: int
    """Megatron EP (MoE); 1 for dense models and FSDP."""
    expert_tensor_parallel_size: int
    """Megatron ETP (MoE); 1 for dense models and FSDP."""
    sequence_parallel_size: int
    """FSDP (Ulysses) sequence parallel size; 1 for Megatron."""

    @property
    def world_size(self) -> int:
        return self.num_nodes * self.num_gpus_per_node

    @property
    def model_parallel_size(self) -> int:
        """TP x PP x CP: the GPUs holding one Megatron replica."""
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.context_parallel_size

    def replica_size(self, strategy: Strategy) -> int:
        """GPUs per replica: TP x PP x CP (Megatron) or SP (FSDP)."""
        return role_replica_size(self, strategy)

    def data_parallel_size(self, strategy: Strategy) -> int:
        """Megatron DP = world / (TP x PP x CP); FSDP DP = world / SP (integer part)."""
        return data_parallel_size(self, strategy)


class AuxRole(SpecModel):
    """A critic role: its own GPUs, or colocated with the policy."""

    colocated_with_policy: bool
    """True: shares the policy's GPUs."""
    num_nodes: int
    """Nodes of the role (the policy's when colocated)."""
    num_gpus_per_node: int
    """GPUs per node of the role."""

    @property
    def world_size(self) -> int:
        return self.num_nodes * self.num_gpus_per_node


class ReferenceRole(AuxRole):
    """The KL reference: its own GPUs or the policy's, and always its own parallelism (SkyRL
    builds the reference's workers from `trainer.ref`, not from the policy's sizes)."""

    tensor_parallel_size: int
    """Megatron TP of the reference; 1 for FSDP."""
    pipeline_parallel_size: int
    """Megatron PP of the reference; 1 for FSDP."""
    context_parallel_size: int
    """Megatron CP of the reference; 1 for FSDP."""
    expert_parallel_size: int
    """Megatron EP of the reference (MoE); 1 for dense models and FSDP."""
    expert_tensor_parallel_size: int
    """Megatron ETP of the reference (MoE); 1 for dense models and FSDP."""
    sequence_parallel_size: int
    """FSDP (Ulysses) sequence parallel size of the reference; 1 for Megatron."""

    @property
    def model_parallel_size(self) -> int:
        """TP x PP x CP: the GPUs holding one Megatron replica of the reference."""
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.context_parallel_size

    def replica_size(self, strategy: Strategy) -> int:
        """GPUs per replica: TP x PP x CP (Megatron) or SP (FSDP)."""
        return role_replica_size(self, strategy)

    def data_parallel_size(self, strategy: Strategy) -> int:
        """Megatron DP = world / (TP x PP x CP); FSDP DP = world / SP (integer part)."""
        return data_parallel_size(self, strategy)


def replica_size(
    strategy: Strategy, *, tensor: int, pipeline: int, context: int, sequence: int
) -> int:
    """GPUs holding one replica of a trainer role, which divide its world into DP ranks: TP x PP
    x CP for Megatron, SP for FSDP (SkyRL utils.validate_batch_sizes). The one place this is
    decided: the role plan's properties, preflight and the smoke runtime all ask here."""
    return tensor * pipeline * context if strategy == "megatron" else sequence


def dp_of(world: int, replica: int) -> int:
    """DP ranks of a world of `world` GPUs in replicas of `replica`: the integer part, 0 for a
    non-positive replica size."""
    return world // replica if replica > 0 else 0


def engine_gpus(*, tensor: int, pipeline: int, data: int) -> int:
    """GPUs of one inference engine: TP x PP x DP (EP is not a factor: it spans the DP x TP
    ranks)."""
    return tensor * pipeline * data


def role_replica_size(role: PolicyRole | ReferenceRole, strategy: Strategy) -> int:
    return replica_size(strategy, tensor=role.tensor_parallel_size,
                        pipeline=role.pipeline_parallel_size, context=role.context_parallel_size,
                        sequence=role.sequence_parallel_size)


def data_parallel_size(role: PolicyRole | ReferenceRole, strategy: Strategy) -> int:
    """A trainer role's DP as SkyRL derives it (utils.validate_batch_sizes): world over its
    replica size (`replica_size`); the integer part, 0 for a non-positive divisor."""
    return dp_of(role.world_size, role_replica_size(role, strategy))


class RolloutRole(SpecModel):
    num_engines: int
    """Number of inference engines."""
    tensor_parallel_size: int
    """Tensor parallel size per engine."""
    pipeline_parallel_size: int
    """Pipeline parallel size per engine."""
    data_parallel_size: int
    """Data parallel size per engine."""
    expert_parallel_size: int
    """Inference EP; not a factor of the GPU count (EP spans the engine's DP x TP ranks)."""
    backend: Literal["vllm", "sglang"]
    """`vllm` or `sglang`."""
    weight_sync_backend: Literal["nccl", "gloo"]
    """`nccl` or `gloo`."""

    @property
    def gpus_per_engine(self) -> int:
        return engine_gpus(tensor=self.tensor_parallel_size, pipeline=self.pipeline_parallel_size,
                           data=self.data_parallel_size)

    @property
    def total_gpus(self) -> int:
        return self.num_engines * self.gpus_per_engine


class Placement(SpecModel):
    colocate_all: bool
    """Policy (and ref/critic) and rollout engines share the same GPUs, taking turns."""
    colocate_policy_ref: bool
    """The reference model shares the policy's GPUs."""


class BatchPlan(SpecModel):
    train_batch_size: int
    """Prompts per training step."""
    policy_mini_batch_size: int
    """Prompts per policy optimizer step (train_batch_size / this = optimizer steps)."""
    critic_mini_batch_size: int | None
    """Prompts per critic optimizer step; null when there is no critic."""
    micro_train_batch_size_per_gpu: int
    """Sequences per forward/backward on one GPU (gradient accumulation unit)."""
    micro_forward_batch_size_per_gpu: int
    """Sequences per forward-only pass (log-probs of ref/old policy) on one GPU."""
    n_samples_per_prompt: int
    """Completions sampled per prompt (the GRPO group size)."""
    eval_batch_size: int
    """Prompts per evaluation batch."""


class RolePlan(SpecModel):
    strategy: Strategy
    """The policy's training strategy, `fsdp` or `megatron`. Megatron DP = world / (TP x PP x CP);
    FSDP DP = world / SP, where world = num_nodes x num_gpus_per_node."""
    policy: PolicyRole
    """Where and how the policy trains."""
    reference: ReferenceRole | None
    """Null when no KL is used (no reference model needed)."""
    critic: AuxRole | None
    """Null unless the advantage estimator needs a value model (GAE)."""
    rollout: RolloutRole
    """The inference engines that generate rollouts. Rollout GPUs = num_engines x TP x PP x DP (EP
    is not a factor)."""
    placement: Placement
    """Which roles share GPUs."""
    batch: BatchPlan
    """Batch sizes."""

    @property
    def policy_data_parallel_size(self) -> int:
        return self.policy.data_parallel_size(self.strategy)

    def geometry(self) -> dict:
        """Everything about where roles run, without batch sizes: what a smoke must share."""
        return self.model_dump(mode="json", exclude={"batch"})
