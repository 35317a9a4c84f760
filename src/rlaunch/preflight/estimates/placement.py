"""Where Ray puts a plan's GPUs: SkyRL 0.3.0's placement groups in the order it creates them,
packed onto the allocation's nodes.

SkyRL creates, in this order: under colocate_all one placement group of 1-GPU bundles for
everything (entrypoints/main_base.py get_colocate_pg); otherwise the rollout engines' 1-GPU
bundles (inference_servers/setup.py create_inference_servers), then in trainer.build_models the
policy (with the reference when colocate_policy_ref: one bundle of policy.num_gpus_per_node per
policy node), the reference and the critic. A trainer role with more than 1 GPU per node gets a
group of num_nodes bundles of num_gpus_per_node GPUs (workers/worker.py
PPORayActorGroup._initiate_actors); with 1 GPU per node its actors take 1 GPU each, anywhere.
All groups use strategy PACK, which Ray serves by preferring the nodes already most used: each
bundle goes to the fullest node it still fits on. Ray never moves a placed group, so a bundle
that fits no node's free GPUs leaves its group pending until SkyRL's
get_ray_pg_ready_with_timeout gives up.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from rlaunch.memo import Memo
from rlaunch.preflight.engine.check import Check
from rlaunch.spec.roleplan import AuxRole, PolicyRole


@dataclass(frozen=True)
class Group:
    """One placement group (or a set of free 1-GPU actors) that SkyRL asks Ray for."""

    role: str
    bundle: int
    """GPUs per bundle; a bundle lives on one node."""
    count: int
    why: str


_GROUPS: Memo[tuple[Any, ...], Group] = Memo(1024)
"""A group's inputs (role name, nodes, GPUs per node, shared; or the engines' GPUs) -> the
group: frozen, so plans with the same sizes share it."""


def _trainer_group(name: str, role: AuxRole | PolicyRole, shared: bool = False) -> Group:
    key = (name, role.num_nodes, role.num_gpus_per_node, shared)
    group = _GROUPS.get(key)
    if group is None:
        group = _GROUPS.put(key, _new_trainer_group(*key))
    return group


def _new_trainer_group(name: str, nodes: int, gpus_per_node: int, shared: bool) -> Group:
    owner = "policy and reference" if shared else name
    if gpus_per_node > 1 or shared:
        why = f"{owner}: {nodes} bundle(s) of {name}.num_gpus_per_node {gpus_per_node}"
        return Group(name, gpus_per_node, nodes, why)
    return Group(name, 1, nodes, f"{name}: {nodes} actor(s) of 1 GPU")


def placement_groups(check: Check) -> list[Group]:
    """The plan's placement groups in SkyRL's creation order (computed once per check)."""
    return check.derived(_placement_groups)


def _placement_groups(check: Check) -> list[Group]:
    plan = check.plan
    rollout = plan.rollout
    total = rollout.total_gpus
    engines = _GROUPS.get(("rollout", total))
    if engines is None:
        engines = _GROUPS.put(("rollout", total), Group(
            "rollout", 1, total, f"rollout: {total} bundle(s) of 1 GPU"))
    if plan.placement.colocate_all:
        return [engines]
    groups = [engines]
    shared = plan.placement.colocate_policy_ref and check.use_kl
    groups.append(_trainer_group("policy", plan.policy, shared=shared))
    if check.use_kl and plan.reference is not None and not plan.reference.colocated_with_policy:
        groups.append(_trainer_group("reference", plan.reference))
    if plan.critic is not None and not plan.critic.colocated_with_policy:
        groups.append(_trainer_group("critic", plan.critic))
    return groups


_BUNDLE = attrgetter("bundle")
_SHAPE = attrgetter("bundle", "count")
"""A group's bundle, and its bundle and count: read in C (`map`), where a generator expression
costs a frame per plan."""


def bundles_fit_nodes(check: Check) -> bool:
    """Whether every bundle fits in a node of the allocation (there is always a group)."""
    return max(map(_BUNDLE, placement_groups(check))) <= (
        check.spec.execution.allocation.gpus_per_node)


@dataclass(frozen=True)
class Unplaced:
    """The first group Ray cannot place, with what the groups before it left free."""

    group: Group
    before: list[Group]
    free: list[tuple[int, int]]
    """`(free GPUs, nodes with that many)`, most free first."""

    def free_text(self) -> str:
        """The nodes' free GPUs as a sum: `8 + 4 + 4`, or for more than MANY_NODES nodes
        `8 on each of 999,999,998 nodes + 4 on each of 2 nodes`."""
        if sum(nodes for _, nodes in self.free) <= MANY_NODES:
            return " + ".join(str(gpus) for gpus, nodes in self.free for _ in range(nodes))
        return " + ".join(f"{gpus} on each of {nodes:,} nodes" if nodes > 1 else f"{gpus}"
                          for gpus, nodes in self.free)


MANY_NODES = 64
"""Above this many nodes, a message counts nodes of equal free GPUs instead of listing each."""


def first_unplaced(groups: list[Group], nodes: int, width: int) -> Unplaced | None:
    """Place the groups' bundles (each at least 1 GPU) in order, each on the fullest node it
    still fits on (the first of equals), as PACK does; the first group with a bundle that fits
    no node, or None. A node stays the fullest that fits until it no longer fits a bundle, so a
    group fills the nodes in order of their free GPUs, fewest first, as many bundles each as
    fit."""
    key = (tuple(map(_SHAPE, groups)), nodes, width)
    stuck = _STUCK.get(key)
    if stuck is None:
        stuck = _STUCK.put(key, _first_stuck(groups, nodes, width))
    index, free = stuck
    return None if index is None else Unplaced(groups[index], groups[:index], list(free))


_STUCK: Memo[tuple[Any, ...], tuple[int | None, tuple[tuple[int, int], ...]]] = Memo(1024)
"""The groups' bundles and counts and the nodes' shape -> `_first_stuck`'s answer."""


def _first_stuck(groups: list[Group], nodes: int, width: int
                 ) -> tuple[int | None, tuple[tuple[int, int], ...]]:
    """The index of first_unplaced's group and the nodes' free GPUs (`Unplaced.free`),
    `(None, ())` when all fit. Nodes of equal free GPUs are counted, not listed, so that the
    work does not grow with the number of nodes or bundles (a typo of a billion nodes must not
    take a billion steps): a group visits its nodes fewest free first, so each count of nodes
    of equal free GPUs takes as many bundles each as fit, the last of them the rest."""
    free = {width: nodes}
    """Free GPUs -> how many nodes have that many."""
    for index, group in enumerate(groups):
        bundle, left = group.bundle, group.count
        for have in sorted(free):
            per = have // bundle
            if left == 0:
                break
            if per == 0:
                continue
            count = free.pop(have)
            full = min(count, left // per)
            left -= full * per
            rest = count - full
            _add(free, have - per * bundle, full)
            if rest and left:  # one node takes the rest, fewer than it could
                _add(free, have - left * bundle, 1)
                rest, left = rest - 1, 0
            _add(free, have, rest)
        if left:
            return index, tuple(sorted(free.items(), reverse=True))
    return None, ()


def _add(free: dict[int, int], gpus: int, nodes: int) -> None:
    if nodes:
        free[gpus] = free.get(gpus, 0) + nodes
