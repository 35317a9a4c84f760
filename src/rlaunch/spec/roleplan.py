"""The role plan: who runs on which GPUs, with which parallelism and batch sizes.

Every field is required: a role plan has no silent defaults. A trainer role's derived sizes
(world, replica, DP) belong to its `Parallelism` (rlaunch.spec.parallelism), which the plan
gives by role name, so they are never written down twice.
"""

from __future__ import annotations

from typing import Any, Literal

from rlaunch.memo import Memo
from rlaunch.spec.base import SpecModel
from rlaunch.spec.parallelism import Parallelism, ParallelSizes, Strategy

__all__ = ["AuxRole", "BatchPlan", "Parallelism", "Placement", "PolicyRole", "ReferenceRole",
           "RolePlan", "RolloutRole", "Strategy", "engine_gpus"]


class _PolicyFootprint(SpecModel):
    num_nodes: int
    """Nodes the policy trains on."""
    num_gpus_per_node: int
    """GPUs per node the policy uses."""


class PolicyRole(ParallelSizes, _PolicyFootprint):
    """Where the policy trains, and its parallel sizes (`ParallelSizes`)."""

    @property
    def world_size(self) -> int:
        return self.num_nodes * self.num_gpus_per_node


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


class ReferenceRole(ParallelSizes, AuxRole):
    """The KL reference: its own GPUs or the policy's, and always its own parallel sizes (SkyRL
    builds the reference's workers from `trainer.ref`, not from the policy's sizes)."""


_LAYOUTS: Memo[tuple[str, str, int, int], tuple[SpecModel, SpecModel, Parallelism]] = Memo(4096)
"""A role, the strategy and the identities of the role's footprint and sizes -> those two, held
(no other object takes their identities while the entry lives), and the role's parallelism:
parse_spec hands every plan of a search equal sections as the very same objects."""


def role_parallelism(plan: Any, role: str) -> Parallelism | None:
    """`plan`'s `role` (`policy`, `reference`, `critic`) parallelism; None for a role the plan
    leaves out. `plan` is a RolePlan or an object with its fields (preflight's `Check.plan`,
    which reads them once). The reference runs its own sizes; the critic runs the policy's on
    its own footprint (it is FSDP only, and its SP is rendered from the policy's)."""
    footprint = getattr(plan, role)
    if footprint is None:
        return None
    reference = plan.reference
    sizes = reference if role == "reference" and reference is not None else plan.policy
    key = (role, plan.strategy, id(footprint), id(sizes))
    known = _LAYOUTS.get(key)
    if known is not None:
        return known[2]
    found = Parallelism.of(role, plan.strategy, nodes=footprint.num_nodes,
                           gpus_per_node=footprint.num_gpus_per_node, sizes=sizes)
    _LAYOUTS.put(key, (footprint, sizes, found))
    return found


def forget_layouts() -> None:
    """Empty the parallelism memo (parse_spec's cold start: rlaunch.spec.io.forget_parsed)."""
    _LAYOUTS.clear()


def engine_gpus(*, tensor: int, pipeline: int, data: int) -> int:
    """GPUs of one inference engine: TP x PP x DP (EP is not a factor: it spans the DP x TP
    ranks)."""
    return tensor * pipeline * data


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
    FSDP DP = world / SP, where world = num_nodes x num_gpus_per_node (a world that does not
    divide has no DP: preflight refuses it)."""
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

    def parallelism(self, role: str) -> Parallelism | None:
        """A trainer role's parallelism (`role_parallelism`); None for a role the plan leaves
        out."""
        return role_parallelism(self, role)

    @property
    def policy_parallelism(self) -> Parallelism:
        return role_parallelism(self, "policy")

    def geometry(self) -> dict:
        """Everything about where roles run, without batch sizes: what a smoke must share."""
        return self.model_dump(mode="json", exclude={"batch"})
