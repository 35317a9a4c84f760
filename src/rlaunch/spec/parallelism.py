"""A trainer role's parallelism, owned once: the sizes a role plan declares and what derives
from them.

`ParallelSizes` declares the six sizes a trainer role sets (TP, PP, CP, EP, ETP, SP): the policy
and the reference both take them from here, so a new size is written once and both roles, the
count check (GEO001) and the Megatron-only check (GEO002) see it.

`Parallelism` is one role's layout, frozen: its footprint and sizes under the plan's strategy.
It owns the derived sizes (world, replica, DP, the expert group) and the equation text messages
print. DP is the number of whole replicas in the world, and undefined (None) when the world
does not divide into them, as SkyRL's `validate_batch_sizes` requires it to; the rule that owns
the problem (GEO003, GEO005, GEO019) reports it, and a rule that needs the DP skips. Preflight,
the renderer and the smoke runtime all ask here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import BaseModel

from rlaunch.spec.base import SpecModel

Strategy = Literal["fsdp", "megatron"]


@dataclass(frozen=True)
class Dimension:
    """Marks a role-plan field as a parallel size."""

    short: str
    """How messages name it: `TP`."""
    megatron_only: bool
    """True when only Megatron has the size (FSDP needs it at 1, GEO002)."""


class ParallelSizes(SpecModel):
    """The parallel sizes of a trainer role (the policy, or the reference, which SkyRL builds
    from `trainer.ref`'s own sizes)."""

    tensor_parallel_size: Annotated[int, Dimension("TP", megatron_only=True)]
    """Megatron TP; 1 for FSDP."""
    pipeline_parallel_size: Annotated[int, Dimension("PP", megatron_only=True)]
    """Megatron PP; 1 for FSDP."""
    context_parallel_size: Annotated[int, Dimension("CP", megatron_only=True)]
    """Megatron CP; 1 for FSDP."""
    expert_parallel_size: Annotated[int, Dimension("EP", megatron_only=True)]
    """Megatron EP (MoE); 1 for dense models and FSDP."""
    expert_tensor_parallel_size: Annotated[int, Dimension("ETP", megatron_only=True)]
    """Megatron ETP (MoE); 1 for dense models and FSDP."""
    sequence_parallel_size: Annotated[int, Dimension("SP", megatron_only=False)]
    """FSDP (Ulysses) sequence parallel size; 1 for Megatron."""


def dimensions(model: type[BaseModel] = ParallelSizes) -> tuple[tuple[str, Dimension], ...]:
    """`(field name, Dimension)` of every parallel size a model declares, in its order."""
    return tuple(
        (name, marks[0])
        for name, info in model.model_fields.items()
        if (marks := [mark for mark in info.metadata if isinstance(mark, Dimension)])
    )


@dataclass(frozen=True)
class Parallelism:
    """How one trainer role lays its model over its GPUs. Its derived sizes are computed once,
    when it is made (rules read them tens of times per plan); they take no part in equality."""

    role: str
    """How messages name the role: `policy`, `reference`, `critic`."""
    strategy: Strategy
    nodes: int
    gpus_per_node: int
    tensor: int
    pipeline: int
    context: int
    expert: int
    expert_tensor: int
    sequence: int
    world: int = field(init=False, repr=False, compare=False)
    """GPUs of the role: nodes x GPUs per node."""
    model_parallel: int = field(init=False, repr=False, compare=False)
    """TP x PP x CP: the GPUs holding one Megatron replica."""
    replica: int = field(init=False, repr=False, compare=False)
    """GPUs holding one replica, which divide the world into DP ranks: TP x PP x CP for
    Megatron, SP for FSDP (SkyRL's utils.validate_batch_sizes)."""
    expert_group: int = field(init=False, repr=False, compare=False)
    """ETP x EP x PP: the ranks of one Megatron-Core expert group."""
    data_parallel: int | None = field(init=False, repr=False, compare=False)
    """DP: whole replicas in the world; None when it is undefined (a count below 1, or a
    world the replica does not divide)."""
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        world = self.nodes * self.gpus_per_node
        model_parallel = self.tensor * self.pipeline * self.context
        replica = model_parallel if self.strategy == "megatron" else self.sequence
        undefined = world < 1 or replica < 1 or world % replica
        derived = {
            "world": world, "model_parallel": model_parallel, "replica": replica,
            "expert_group": self.expert_tensor * self.expert * self.pipeline,
            "data_parallel": None if undefined else world // replica,
            "_hash": hash((self.role, self.strategy, self.nodes, self.gpus_per_node, self.tensor,
                           self.pipeline, self.context, self.expert, self.expert_tensor,
                           self.sequence)),
        }
        for name, value in derived.items():
            object.__setattr__(self, name, value)

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def of(cls, role: str, strategy: Strategy, *, nodes: int, gpus_per_node: int,
           sizes: ParallelSizes) -> Parallelism:
        """A role's parallelism from its footprint and the sizes it runs."""
        return cls(
            role=role, strategy=strategy, nodes=nodes, gpus_per_node=gpus_per_node,
            tensor=sizes.tensor_parallel_size, pipeline=sizes.pipeline_parallel_size,
            context=sizes.context_parallel_size, expert=sizes.expert_parallel_size,
            expert_tensor=sizes.expert_tensor_parallel_size,
            sequence=sizes.sequence_parallel_size,
        )

    @property
    def megatron(self) -> bool:
        return self.strategy == "megatron"

    # -- the equations messages print ------------------------------------------------------------

    def world_equation(self) -> str:
        """`policy world 32 = policy.num_nodes 4 x policy.num_gpus_per_node 8`."""
        return (f"{self.role} world {self.world} = {self.role}.num_nodes {self.nodes}"
                f" x {self.role}.num_gpus_per_node {self.gpus_per_node}")

    def footprint_equation(self) -> str:
        """`reference.num_nodes 1 x reference.num_gpus_per_node 2 = 2`."""
        return (f"{self.role}.num_nodes {self.nodes} x {self.role}.num_gpus_per_node"
                f" {self.gpus_per_node} = {self.world}")

    def replica_factors(self) -> str:
        """`TP 4 x PP 1 x CP 1` (Megatron) or `SP 2` (FSDP)."""
        if self.megatron:
            return f"TP {self.tensor} x PP {self.pipeline} x CP {self.context}"
        return f"SP {self.sequence}"

    def replica_equation(self) -> str:
        """`TP 4 x PP 1 x CP 1 = 4` (Megatron) or `SP 2` (FSDP)."""
        factors = self.replica_factors()
        return f"{factors} = {self.replica}" if self.megatron else factors

    def expert_equation(self) -> str:
        """`ETP 1 x EP 8 x PP 1 = 8`."""
        return (f"ETP {self.expert_tensor} x EP {self.expert} x PP {self.pipeline}"
                f" = {self.expert_group}")

    def dp_equation(self) -> str:
        """`policy DP 8 = world 32 / (TP 4 x PP 1 x CP 1)`, or `... / SP 2`; when DP is
        undefined, why."""
        divisor = f"({self.replica_factors()})" if self.megatron else self.replica_factors()
        if self.data_parallel is None:
            return f"{self.role} DP undefined: world {self.world} / {divisor} is not whole"
        return f"{self.role} DP {self.data_parallel} = world {self.world} / {divisor}"
