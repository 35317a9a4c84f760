"""Allocation rules (rlaunch/preflight/rules/allocation.py)."""

from __future__ import annotations

import random
from collections import Counter

from preflight.helpers import example, findings, messages
from rlaunch.preflight.estimates.placement import Group, Unplaced, first_unplaced
from rlaunch.preflight.rules.allocation import accelerator_limit, unpackable_plan


def test_alloc001_idle_gpus_are_a_warning_with_their_count() -> None:
    # SkyRL places what the roles ask for and leaves the rest of the cluster alone: idle GPUs
    # cost money, they do not fail (docs/rules.md says why this is a warning, not a field).
    [finding] = findings(example("disaggregated-8x8-tp1"), "ALLOC001")
    assert (finding.severity, finding.message) == (
        "warning",
        "roles use 32 + 4 = 36 GPUs (policy 32, rollout 4) of the allocation's 8 nodes x 8 = 64"
        " GPUs: 28 GPUs stay idle and are paid for",
    )
    assert finding.fix == (
        "Give the idle 28 GPUs to a role, or allocate execution.allocation.num_nodes 5 (40 GPUs,"
        " 4 still idle)."
    )
    assert finding.paths == (
        "execution.allocation.num_nodes", "execution.allocation.gpus_per_node",
        "role_plan.policy", "role_plan.rollout",
    )


def test_alloc001_ten_gpus_on_three_nodes_of_four_have_a_way_out() -> None:
    # Issue 12, defect 2: 10 GPUs on 4-GPU nodes. No allocation was accepted before (3 x 4
    # leaves 2 idle, 10 is not whole nodes); SkyRL runs it, so it is a warning.
    data = example(edits={
        "role_plan.placement.colocate_all": False, "role_plan.placement.colocate_policy_ref": True,
        "role_plan.policy.num_nodes": 2, "role_plan.policy.num_gpus_per_node": 4,
        "role_plan.reference.num_nodes": 2, "role_plan.reference.num_gpus_per_node": 4,
        "role_plan.rollout.num_engines": 2,
        "execution.allocation.num_nodes": 3, "execution.allocation.gpus_per_node": 4,
    })
    [finding] = findings(data, "ALLOC001")
    assert (finding.severity, finding.message) == (
        "warning",
        "roles use 8 + 2 = 10 GPUs (policy 8, rollout 2) of the allocation's 3 nodes x 4 = 12"
        " GPUs: 2 GPUs stay idle and are paid for",
    )
    assert [f.code for f in findings(data, "ALLOC002") + findings(data, "ALLOC003")] == []


def test_alloc001_more_gpus_than_allocated_is_an_error() -> None:
    # Reference on its own 4 nodes: 32 + 32 + 32 = 96 of 64.
    data = example("disaggregated-8x8-tp8", {
        "role_plan.placement.colocate_policy_ref": False,
        "role_plan.reference.colocated_with_policy": False,
    })
    [finding] = findings(data, "ALLOC001")
    assert (finding.severity, finding.message) == (
        "error",
        "roles use 32 + 32 + 32 = 96 GPUs (policy 32, reference 32, rollout 32) but the"
        " allocation has 8 nodes x 8 = 64 GPUs; the placement groups of the rest never become"
        " ready",
    )
    assert finding.fix == (
        "Resize the roles to at most 64 GPUs, or allocate the 96 they use"
        " (execution.allocation.num_nodes 12)."
    )


def test_alloc001_passes_on_colocated_disaggregated_and_megatron_examples() -> None:
    for name in ("colocated-1x8", "disaggregated-8x8-tp8", "megatron-moe-5x8"):
        assert messages(example(name), "ALLOC001") == [], name


def test_alloc002_roles_that_ray_packs_onto_whole_nodes_pass() -> None:
    # Issue 12, defect 2: "not whole nodes of N" was false where the total is whole nodes and
    # Ray packs the roles onto them. 4 rollout GPUs + a reference of 1 x 4 on one node of 8:
    # PPORayActorGroup asks for one 4-GPU bundle, which fits beside the engines' 1-GPU bundles.
    data = example("disaggregated-8x8-tp1", {
        "role_plan.placement.colocate_policy_ref": False,
        "role_plan.reference": {
            "colocated_with_policy": False, "num_nodes": 1, "num_gpus_per_node": 4,
            "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "context_parallel_size": 1,
            "expert_parallel_size": 1, "expert_tensor_parallel_size": 1,
            "sequence_parallel_size": 1,
        },
        "execution.allocation.num_nodes": 5,
    })
    assert [(f.severity, f.code) for f in findings(data, "ALLOC001")] == []
    assert messages(data, "ALLOC002") == []
    assert messages(example("megatron-moe-5x8"), "ALLOC002") == []


def test_alloc002_a_bundle_no_node_can_hold_is_an_error() -> None:
    # Same 16 GPUs on 2 nodes of 8, but a 6-GPU reference bundle after the engines' 4 1-GPU
    # bundles (node A: 4 free) and the policy's 6-GPU bundle (node B: 2 free) fits nowhere:
    # get_ray_pg_ready_with_timeout gives up at start-up.
    [finding] = findings(example("disaggregated-8x8-tp1", unpackable_plan), "ALLOC002")
    assert finding.message == (
        "the 2 nodes of 8 GPUs cannot hold reference: 1 bundle(s) of reference.num_gpus_per_node"
        " 6: after SkyRL's earlier placement groups (rollout: 4 bundle(s) of 1 GPU; policy: 1"
        " bundle(s) of policy.num_gpus_per_node 6) the nodes have 4 + 2 GPUs free and no node"
        " has 6, so its placement group never becomes ready"
    )


def test_alloc003_a_bundle_wider_than_a_node_is_an_error() -> None:
    data = example(edits={
        "role_plan.placement.colocate_all": False,
        "role_plan.policy.num_gpus_per_node": 16, "role_plan.reference.num_gpus_per_node": 16,
        "execution.allocation.num_nodes": 3,
    })
    assert messages(data, "ALLOC003") == [
        "policy asks for bundles of 16 GPUs on one node (policy and reference: 1 bundle(s) of"
        " policy.num_gpus_per_node 16), but a node has execution.allocation.gpus_per_node 8: its"
        " placement group can never be ready"
    ]
    # Under colocate_all every GPU is a 1-GPU bundle of one group (main_base.get_colocate_pg):
    # a policy of 2 x 4 on a node of 8 is placed.
    half_nodes = example(edits={
        "role_plan.policy.num_nodes": 2, "role_plan.policy.num_gpus_per_node": 4,
        "role_plan.reference.num_nodes": 2, "role_plan.reference.num_gpus_per_node": 4,
    })
    assert messages(half_nodes, "ALLOC003") == []
    assert messages(example(), "ALLOC003") == []


def test_alloc004_gpus_per_node_within_the_accelerator() -> None:
    data = example(edits={"execution.allocation.gpus_per_node": 16})
    assert messages(data, "ALLOC004") == [
        "execution.allocation.gpus_per_node 16 exceeds the 8 GPUs of one H100 node"
    ]
    unknown = example(edits={"execution.allocation.accelerator": "TPU-v5e"})
    [finding] = findings(unknown, "ALLOC004")
    assert (finding.severity, finding.message) == (
        "warning",
        "execution.allocation.accelerator 'TPU-v5e' is not in the accelerator table (H100, H200,"
        " B200, A100, A10G, L4, L40S, V100, sim); its GPUs per node cannot be checked",
    )
    assert messages(example(), "ALLOC004") == []
    assert messages(example(edits={"execution.allocation.accelerator": "A100-80GB"}),
                    "ALLOC004") == []


def test_accelerator_names_are_matched_by_chip() -> None:
    assert [accelerator_limit(name) for name in ("H100", "a100-80gb", "sim", "TPU")] == [
        8, 8, 64, None,
    ]


def one_bundle_at_a_time(groups: list[Group], nodes: int, width: int) -> Unplaced | None:
    """PACK as Ray serves it, bundle by bundle: each on the fullest node it fits (the first of
    equals); the reference first_unplaced must agree with."""
    free = [width] * nodes
    for index, group in enumerate(groups):
        for _ in range(group.count):
            fits = [node for node in range(nodes) if free[node] >= group.bundle]
            if not fits:
                return Unplaced(group, groups[:index], sorted(Counter(free).items(),
                                                             reverse=True))
            free[min(fits, key=lambda node: free[node])] -= group.bundle
    return None


def test_first_unplaced_packs_as_ray_does_bundle_by_bundle() -> None:
    rng = random.Random(27)
    for _ in range(3000):
        width, nodes = rng.choice((1, 2, 4, 8)), rng.randint(1, 6)
        groups = [Group(f"g{index}", rng.randint(1, width + 1), rng.randint(1, 12), "why")
                  for index in range(rng.randint(1, 4))]
        assert first_unplaced(groups, nodes, width) == one_bundle_at_a_time(groups, nodes, width)


def test_a_billion_nodes_are_counted_not_listed() -> None:
    """A typo of a billion nodes takes no more work than eight: the nodes of equal free GPUs are
    counted (it took a list of a billion free counts, and 20 GB, before)."""
    billion = 10**9
    stuck = first_unplaced([Group("rollout", 1, 3, "rollout: 3 bundle(s) of 1 GPU"),
                            Group("policy", 8, billion, "policy: ...")], billion, 8)
    assert stuck is not None and stuck.group.role == "policy"
    assert stuck.free == [(5, 1), (0, billion - 1)]
    assert stuck.free_text() == "5 + 0 on each of 999,999,999 nodes"
    assert Unplaced(stuck.group, [], [(8, 2), (3, 1)]).free_text() == "8 + 8 + 3"
    data = example(edits={"execution.allocation.num_nodes": billion,
                          "role_plan.placement.colocate_all": False})
    assert messages(data, "ALLOC001") == [
        "roles use 8 + 8 = 16 GPUs (policy 8, rollout 8) of the allocation's 1000000000 nodes x"
        " 8 = 8000000000 GPUs: 7999999984 GPUs stay idle and are paid for"]
    assert messages(data, "ALLOC002") == messages(data, "PRE000") == []
