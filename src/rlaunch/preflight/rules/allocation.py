"""Allocation: the roles use exactly the allocated GPUs, in whole nodes, on real hardware."""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter
from types import MappingProxyType
from typing import Any, Mapping

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.memo import Memo
from rlaunch.preflight.estimates.placement import (
    bundles_fit_nodes,
    first_unplaced,
    placement_groups,
)

# GPUs in one node of each accelerator type as sold by the clouds (HGX/DGX boards); `sim` is the
# local executor's simulated GPUs, bounded only by what a CPU host can run.
ACCELERATOR_GPUS_PER_NODE: Mapping[str, int] = MappingProxyType(
    {
        "H100": 8, "H200": 8, "B200": 8, "A100": 8, "A10G": 8, "L4": 8, "L40S": 8, "V100": 8,
        "SIM": 64,
    }
)


def accelerator_limit(accelerator: str) -> int | None:
    """GPUs per node for `H100`, `a100-80gb` (the part before `-` names the chip), ..."""
    name = accelerator.strip().upper()
    return ACCELERATOR_GPUS_PER_NODE.get(name, ACCELERATOR_GPUS_PER_NODE.get(name.split("-")[0]))


def role_gpus(check: Check) -> list[tuple[str, str, int]]:
    """`(name, path, GPUs)` of every role with GPUs of its own."""
    return list(check.derived(_role_gpus))


def _role_gpus(check: Check) -> tuple[tuple[str, str, int], ...]:
    """role_gpus, once per check (ALLOC001 and ALLOC002 read it)."""
    plan = check.plan
    roles = [("policy", "role_plan.policy", plan.policy.world_size)]
    for name, role in (("reference", plan.reference), ("critic", plan.critic)):
        if role is not None and not role.colocated_with_policy:
            roles.append((name, f"role_plan.{name}", role.world_size))
    if not plan.placement.colocate_all:
        roles.append(("rollout", "role_plan.rollout", plan.rollout.total_gpus))
    return tuple(roles)


_GPUS = itemgetter(2)
"""A role's GPUs in `role_gpus`' tuples (summed in C)."""


def _roles_sum(roles: tuple[tuple[str, str, int], ...]) -> str:
    terms = " + ".join(str(gpus) for _, _, gpus in roles)
    named = ", ".join(f"{name} {gpus}" for name, _, gpus in roles)
    return f"{terms} = {sum(gpus for _, _, gpus in roles)} GPUs ({named})"


def unpackable_plan(data: dict[str, Any]) -> None:
    """2 nodes of 8: 4 rollout GPUs, a policy of 1 x 6 and a reference of its own of 1 x 6"""
    plan = data["role_plan"]
    plan["rollout"]["num_engines"] = 4
    plan["rollout"]["tensor_parallel_size"] = 1
    plan["policy"].update(num_nodes=1, num_gpus_per_node=6)
    plan["reference"].update(colocated_with_policy=False, num_nodes=1, num_gpus_per_node=6)
    plan["placement"]["colocate_policy_ref"] = False
    data["execution"]["allocation"]["num_nodes"] = 2


@rule(
    "ALLOC001",
    "The roles fit in the allocated nodes x GPUs per node (error); GPUs they leave idle are"
    " reported with their count (warning).",
    example=Example(edits={"execution.allocation.num_nodes": 2}),
)
def roles_use_allocation(check: Check) -> list[Finding]:
    """Error when the roles need more GPUs than allocated: Ray never makes the remaining placement
    groups ready and SkyRL's `get_ray_pg_ready_with_timeout` raises at start-up. Warning when GPUs
    stay idle: SkyRL places what the roles ask for and leaves the rest alone, so idle GPUs cost
    money but do not fail. Decision: a warning with the idle count, not an `idle_gpus` field on the
    allocation. The field would repeat a number the plan already determines (every resize of a role
    would need a second edit) and, since a role plan has no silent defaults, every execution would
    have to write it even when 0; the warning carries the same equation and the cheapest allocation
    that fits, and nothing can run with idle GPUs unseen because every check prints it."""
    findings: list[Finding] = []
    if not check.roles_ok:
        return findings
    allocation = check.spec.execution.allocation
    roles = check.derived(_role_gpus)
    key = (roles, allocation.num_nodes, allocation.gpus_per_node)
    found = _USE.get(key)
    if found is None:
        found = _USE.put(key, tuple(_use_of(*key)))
    findings.extend(found)
    return findings


_USE: Memo[tuple[Any, ...], tuple[Finding, ...]] = Memo(1024)
"""ALLOC001's findings by all they read: the roles' GPUs and the allocation's shape."""


def _use_of(roles: tuple[tuple[str, str, int], ...], num_nodes: int, gpus_per_node: int
            ) -> Iterator[Finding]:
    used = sum(map(_GPUS, roles))
    total = num_nodes * gpus_per_node
    if used == total:
        return
    paths = ("execution.allocation.num_nodes", "execution.allocation.gpus_per_node",
             *(path for _, path, _ in roles))
    shape = f"{num_nodes} nodes x {gpus_per_node} = {total} GPUs"
    nodes = -(-used // gpus_per_node)
    if used > total:
        # Ray never makes the missing GPUs' placement groups ready: SkyRL's
        # get_ray_pg_ready_with_timeout raises after SKYRL_RAY_PG_TIMEOUT_IN_S.
        yield error(
            "ALLOC001", paths,
            f"roles use {_roles_sum(roles)} but the allocation has {shape}; the placement"
            " groups of the rest never become ready",
            f"Resize the roles to at most {total} GPUs, or allocate the {used} they use"
            f" (execution.allocation.num_nodes {nodes}).",
        )
        return
    idle = total - used
    spare = nodes * gpus_per_node - used
    yield warning(
        "ALLOC001", paths,
        f"roles use {_roles_sum(roles)} of the allocation's {shape}: {idle} GPUs stay idle"
        " and are paid for",
        f"Give the idle {idle} GPUs to a role, or allocate execution.allocation.num_nodes"
        f" {nodes} ({nodes * gpus_per_node} GPUs"
        + (f", {spare} still idle)." if spare else ")."),
    )


@rule(
    "ALLOC002",
    "The roles' placement-group bundles pack onto the nodes the way Ray places them.",
    example=Example(base="disaggregated-8x8-tp1", edits=unpackable_plan),
)
def bundles_pack(check: Check) -> list[Finding]:
    """Error. Models the packing Ray does (rlaunch/preflight/estimates/placement.py): SkyRL's
    placement groups in the order it creates them (engines' 1-GPU bundles; then the policy,
    reference and critic, each num_nodes bundles of num_gpus_per_node GPUs from
    skyrl/backends/skyrl_train/workers/worker.py `PPORayActorGroup._initiate_actors`, or one
    shared group under colocate_policy_ref from skyrl/train/trainer.py `build_models`), each
    bundle on the fullest node it fits (PACK). A bundle that fits no node leaves its group
    pending until `get_ray_pg_ready_with_timeout` raises. Roles need not use whole nodes: a
    total that is whole nodes is placed when the bundles pack."""
    findings: list[Finding] = []
    if not check.roles_ok or not bundles_fit_nodes(check):
        return findings
    allocation = check.spec.execution.allocation
    if sum(map(_GPUS, check.derived(_role_gpus))) > allocation.total_gpus:
        return findings  # ALLOC001 reports it
    stuck = first_unplaced(placement_groups(check), allocation.num_nodes, allocation.gpus_per_node)
    if stuck is None:
        return findings
    role = stuck.group.role
    before = "; ".join(group.why for group in stuck.before)
    free = stuck.free_text()
    findings.append(error(
        "ALLOC002",
        (f"role_plan.{role}.num_gpus_per_node", "execution.allocation.gpus_per_node",
         "execution.allocation.num_nodes"),
        f"the {allocation.num_nodes} nodes of {allocation.gpus_per_node} GPUs cannot hold"
        f" {stuck.group.why}: after SkyRL's earlier placement groups ({before}) the nodes have"
        f" {free} GPUs free and no node has {stuck.group.bundle}, so its placement group never"
        " becomes ready",
        f"Make role_plan.{role}.num_gpus_per_node and the other roles' GPUs per node divisors of"
        f" execution.allocation.gpus_per_node {allocation.gpus_per_node}, or allocate another"
        " node.",
    ))
    return findings


@rule(
    "ALLOC003",
    "A role that takes whole-node bundles asks for at most the GPUs of one node.",
    example=Example(
        edits={
            "role_plan.placement.colocate_all": False,
            "role_plan.policy.num_gpus_per_node": 16,
            "role_plan.reference.num_gpus_per_node": 16,
            "execution.allocation.num_nodes": 3,
        }
    ),
)
def bundles_fit_node(check: Check) -> list[Finding]:
    """Error. A bundle lives on one node: a role that asks Ray for bundles of more GPUs than a node
    has can never be placed (`get_ray_pg_ready_with_timeout` raises at start-up). Under
    colocate_all every bundle is 1 GPU, so any per-node width is placed."""
    findings: list[Finding] = []
    if not check.roles_ok:
        return findings
    width = check.spec.execution.allocation.gpus_per_node
    for group in placement_groups(check):
        if group.bundle > width:
            findings.append(error(
                "ALLOC003",
                (f"role_plan.{group.role}.num_gpus_per_node", "execution.allocation.gpus_per_node"),
                f"{group.role} asks for bundles of {group.bundle} GPUs on one node"
                f" ({group.why}), but a node has execution.allocation.gpus_per_node {width}:"
                " its placement group can never be ready",
                f"Set role_plan.{group.role}.num_gpus_per_node to at most {width} and use more"
                " nodes.",
            ))
    return findings


@rule(
    "ALLOC004",
    "The GPUs per node are within what the accelerator has (unknown accelerator: warning).",
    example=Example(edits={"execution.allocation.gpus_per_node": 16}),
    reads_plan=False,
)
def accelerator_has_gpus(check: Check) -> Iterator[Finding]:
    """Error when a node would have more GPUs than the accelerator's boards carry (no such machine
    exists); warning for an accelerator preflight does not know. Beyond SkyRL."""
    allocation = check.spec.execution.allocation
    limit = accelerator_limit(allocation.accelerator)
    paths = ("execution.allocation.gpus_per_node", "execution.allocation.accelerator")
    if limit is None:
        known = ", ".join(name if name != "SIM" else "sim" for name in ACCELERATOR_GPUS_PER_NODE)
        yield warning(
            "ALLOC004", paths,
            f"execution.allocation.accelerator {allocation.accelerator!r} is not in the"
            f" accelerator table ({known}); its GPUs per node cannot be checked",
            "Use a known accelerator name, or add it to the table in"
            " rlaunch/preflight/rules/allocation.py.",
        )
    elif allocation.gpus_per_node > limit:
        yield error(
            "ALLOC004", paths,
            f"execution.allocation.gpus_per_node {allocation.gpus_per_node} exceeds the {limit}"
            f" GPUs of one {allocation.accelerator} node",
            f"Set execution.allocation.gpus_per_node to at most {limit} and use more nodes.",
        )
