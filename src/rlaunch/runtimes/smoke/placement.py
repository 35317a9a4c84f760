"""Role plan -> Ray placement groups, one worker actor per simulated GPU.

A simulated GPU is Ray's ordinary `GPU` resource (the local executor starts its head with
`--num-gpus`; a test may call `ray.init(num_gpus=N)`); no CUDA is touched. Every bundle is
`{GPU: 1, CPU: CPU_PER_SIM_GPU}`, and the actor on it asks for exactly that bundle, so two
cores can host a plan of many simulated GPUs.

- Each role gets one STRICT_PACK group per node it spans (`<role>-node<k>`, as many bundles
  as the role has GPUs per node), like a whole-node placement on a real cluster.
- `colocate_all`: policy, reference and rollout ranks share the policy's groups (the actor on
  GPU i hosts policy rank i, reference rank i and rollout rank i; SkyRL's roles take turns on
  the same GPUs the same way).
- `colocate_policy_ref` (without colocate_all): the reference shares the policy's groups.
- Rollout engines that are not colocated get one STRICT_PACK group per engine
  (`rollout-engine<e>`, TP x PP x DP bundles: an engine never spans nodes).

A plan Ray cannot place fails after the placement timeout (SkyRL's knob
`SKYRL_RAY_PG_TIMEOUT_IN_S`, default 180 s) with an error naming the plan and the resources.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import ray
from ray.util.placement_group import placement_group, remove_placement_group

from rlaunch.runtimes.smoke.config import Geometry, SmokeConfigError

CPU_PER_SIM_GPU = 0.1
TIMEOUT_ENV = "SKYRL_RAY_PG_TIMEOUT_IN_S"
DEFAULT_TIMEOUT_S = 180.0


class PlacementError(RuntimeError):
    """The cluster cannot host the role plan."""


@dataclass(frozen=True)
class Group:
    name: str
    bundles: int
    strategy: str = "STRICT_PACK"


@dataclass
class Worker:
    """One simulated GPU and the role ranks it hosts."""

    index: int
    group: int
    bundle: int
    policy_rank: int | None = None
    ref_rank: int | None = None
    rollout_rank: int | None = None

    def roles(self) -> list[str]:
        named = [("policy", self.policy_rank), ("ref", self.ref_rank),
                 ("rollout", self.rollout_rank)]
        return [f"{role}:{rank}" for role, rank in named if rank is not None]


@dataclass
class Layout:
    groups: list[Group] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)

    def _add_group(self, name: str, bundles: int) -> list[Worker]:
        group_index = len(self.groups)
        self.groups.append(Group(name, bundles))
        added = [Worker(len(self.workers) + b, group_index, b) for b in range(bundles)]
        self.workers.extend(added)
        return added

    @property
    def total_gpus(self) -> int:
        return sum(group.bundles for group in self.groups)

    def describe(self) -> str:
        lines = []
        for index, group in enumerate(self.groups):
            members = [w for w in self.workers if w.group == index]
            roles = "; ".join(f"gpu{w.index}=" + ",".join(w.roles()) for w in members)
            lines.append(f"{group.name} ({group.bundles} x GPU, {group.strategy}): {roles}")
        return "\n".join(lines)


def build_layout(geometry: Geometry) -> Layout:
    """Where every role rank runs. Pure: no Ray needed (the tests read it directly)."""
    layout = Layout()
    prefix = "colocated" if geometry.colocate_all else "policy"
    policy_workers: list[Worker] = []
    for node in range(geometry.policy.nodes):
        policy_workers += layout._add_group(f"{prefix}-node{node}", geometry.policy.gpus_per_node)
    for rank, worker in enumerate(policy_workers):
        worker.policy_rank = rank
    if geometry.use_reference:
        if geometry.colocate_all or geometry.colocate_policy_ref:
            if geometry.ref_world != geometry.policy.world:
                raise SmokeConfigError(
                    f"the reference is colocated with the policy but uses {geometry.ref_nodes} x "
                    f"{geometry.ref_gpus_per_node} GPUs against the policy's "
                    f"{geometry.policy.nodes} x {geometry.policy.gpus_per_node}; colocated roles "
                    "must have the same footprint"
                )
            for worker in policy_workers:
                worker.ref_rank = worker.policy_rank
        else:
            ref_workers: list[Worker] = []
            for node in range(geometry.ref_nodes):
                ref_workers += layout._add_group(f"ref-node{node}", geometry.ref_gpus_per_node)
            for rank, worker in enumerate(ref_workers):
                worker.ref_rank = rank
    if geometry.colocate_all:
        if geometry.rollout_world != geometry.policy.world:
            raise SmokeConfigError(
                f"colocate_all needs rollout GPUs == policy GPUs: {geometry.num_engines} engines x "
                f"(TP {geometry.engine_tp} x PP {geometry.engine_pp} x DP {geometry.engine_dp}) = "
                f"{geometry.rollout_world} != policy {geometry.policy.nodes} x "
                f"{geometry.policy.gpus_per_node} = {geometry.policy.world}"
            )
        for worker in policy_workers:
            worker.rollout_rank = worker.policy_rank
    else:
        rank = 0
        for engine in range(geometry.num_engines):
            for worker in layout._add_group(f"rollout-engine{engine}", geometry.gpus_per_engine):
                worker.rollout_rank = rank
                rank += 1
    return layout


def placement_timeout_s() -> float:
    raw = os.environ.get(TIMEOUT_ENV)
    if raw is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        raise SmokeConfigError(f"${TIMEOUT_ENV} must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise SmokeConfigError(f"${TIMEOUT_ENV} must be > 0 seconds, got {raw!r}")
    return value


def _resources(values: dict) -> str:
    shown = {key: values[key] for key in ("GPU", "CPU") if key in values}
    return ", ".join(f"{key} {value:g}" for key, value in shown.items()) or "none"


def reserve(layout: Layout, *, run_id: str, timeout_s: float) -> list:
    """Create the placement groups and wait until all are ready, or raise PlacementError."""
    groups = [
        placement_group(
            [{"GPU": 1, "CPU": CPU_PER_SIM_GPU}] * group.bundles,
            strategy=group.strategy,
            name=f"{run_id}:{group.name}",
        )
        for group in layout.groups
    ]
    readiness = [g.ready() for g in groups]
    ready, _ = ray.wait(readiness, num_returns=len(groups), timeout=timeout_s)
    if len(ready) == len(groups):
        return groups
    done = set(ready)
    waiting = [
        f"{spec.name} ({spec.bundles} x {{GPU: 1, CPU: {CPU_PER_SIM_GPU:g}}}, {spec.strategy})"
        for spec, ref in zip(layout.groups, readiness, strict=True)
        if ref not in done
    ]
    total = _resources(ray.cluster_resources())
    free = _resources(ray.available_resources())
    for pg in groups:
        remove_placement_group(pg)
    raise PlacementError(
        f"cannot place the role plan of {run_id}: placement group(s) not ready after "
        f"{timeout_s:g} s: {'; '.join(waiting)}. The plan needs {layout.total_gpus} simulated "
        f"GPU(s) in {len(layout.groups)} group(s) (each group on one node):\n{layout.describe()}\n"
        f"The cluster has {total} in total, {free} free. Give the cluster enough GPUs per node "
        f"(the local executor sizes its head from execution.allocation), or raise "
        f"${TIMEOUT_ENV} if the cluster is still scaling up."
    )
