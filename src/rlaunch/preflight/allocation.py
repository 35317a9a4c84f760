"""Allocation: the roles use exactly the allocated GPUs, in whole nodes, on real hardware."""

from __future__ import annotations

from collections.abc import Iterator
from types import MappingProxyType
from typing import Mapping

from rlaunch.preflight.check import Check
from rlaunch.preflight.finding import Finding, error, warning
from rlaunch.preflight.registry import Example, rule

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
    plan = check.spec.role_plan
    roles = [("policy", "role_plan.policy", plan.policy.world_size)]
    for name, role in (("reference", plan.reference), ("critic", plan.critic)):
        if role is not None and not role.colocated_with_policy:
            roles.append((name, f"role_plan.{name}", role.world_size))
    if not plan.placement.colocate_all:
        roles.append(("rollout", "role_plan.rollout", plan.rollout.total_gpus))
    return roles


@rule(
    "ALLOC001",
    "The roles use exactly the allocated nodes x GPUs per node.",
    example=Example(base="disaggregated-8x8-tp1"),
)
def roles_use_allocation(check: Check) -> Iterator[Finding]:
    if not check.roles_ok:
        return
    allocation = check.spec.execution.allocation
    roles = role_gpus(check)
    used = sum(gpus for _, _, gpus in roles)
    if used == allocation.total_gpus:
        return
    terms = " + ".join(str(gpus) for _, _, gpus in roles)
    named = ", ".join(f"{name} {gpus}" for name, _, gpus in roles)
    nodes = ""
    if used % allocation.gpus_per_node == 0:
        nodes = f" (execution.allocation.num_nodes {used // allocation.gpus_per_node})"
    yield error(
        "ALLOC001",
        ("execution.allocation.num_nodes", "execution.allocation.gpus_per_node",
         *(path for _, path, _ in roles)),
        f"roles use {terms} = {used} GPUs ({named}) but the allocation has"
        f" {allocation.num_nodes} nodes"
        f" x {allocation.gpus_per_node} = {allocation.total_gpus} GPUs",
        f"Resize the roles to use exactly {allocation.total_gpus} GPUs, or allocate the"
        f" {used} they use{nodes}.",
    )


@rule(
    "ALLOC002",
    "Every role with GPUs of its own uses whole nodes.",
    example=Example(base="disaggregated-8x8-tp1"),
)
def whole_nodes_per_role(check: Check) -> Iterator[Finding]:
    if not check.roles_ok:
        return
    plan = check.spec.role_plan
    width = check.spec.execution.allocation.gpus_per_node
    for name, path, gpus in role_gpus(check)[1:]:
        role = getattr(plan, name)
        if name == "rollout":
            shape = (
                f"rollout.num_engines {role.num_engines} x TP {role.tensor_parallel_size}"
                f" x PP {role.pipeline_parallel_size} x DP {role.data_parallel_size}"
            )
        else:
            shape = f"{name}.num_nodes {role.num_nodes} x {name}.num_gpus_per_node" \
                    f" {role.num_gpus_per_node}"
        if gpus % width or (name != "rollout" and role.num_gpus_per_node > width):
            yield error(
                "ALLOC002", (path, "execution.allocation.gpus_per_node"),
                f"{name} uses {shape} = {gpus} GPUs, not whole nodes of"
                f" execution.allocation.gpus_per_node {width}",
                f"Give {name} a multiple of {width} GPUs, at most {width} per node.",
            )


@rule(
    "ALLOC003",
    "The policy's GPUs per node equal the allocation's GPUs per node.",
    example=Example(
        edits={
            "role_plan.policy.num_nodes": 2, "role_plan.policy.num_gpus_per_node": 4,
            "role_plan.reference.num_nodes": 2, "role_plan.reference.num_gpus_per_node": 4,
        }
    ),
)
def policy_fills_nodes(check: Check) -> Iterator[Finding]:
    if not check.roles_ok:
        return
    policy_width = check.spec.role_plan.policy.num_gpus_per_node
    width = check.spec.execution.allocation.gpus_per_node
    if policy_width != width:
        yield error(
            "ALLOC003",
            ("role_plan.policy.num_gpus_per_node", "execution.allocation.gpus_per_node"),
            f"role_plan.policy.num_gpus_per_node {policy_width} differs from"
            f" execution.allocation.gpus_per_node {width}; the policy uses whole nodes",
            f"Set role_plan.policy.num_gpus_per_node to {width} (and adjust num_nodes).",
        )


@rule(
    "ALLOC004",
    "The GPUs per node are within what the accelerator has (unknown accelerator: warning).",
    example=Example(edits={"execution.allocation.gpus_per_node": 16}),
)
def accelerator_has_gpus(check: Check) -> Iterator[Finding]:
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
            " rlaunch/preflight/allocation.py.",
        )
    elif allocation.gpus_per_node > limit:
        yield error(
            "ALLOC004", paths,
            f"execution.allocation.gpus_per_node {allocation.gpus_per_node} exceeds the {limit}"
            f" GPUs of one {allocation.accelerator} node",
            f"Set execution.allocation.gpus_per_node to at most {limit} and use more nodes.",
        )
