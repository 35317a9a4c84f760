"""Allocation rules (rlaunch/preflight/allocation.py)."""

from __future__ import annotations

from preflight.helpers import example, findings, messages
from rlaunch.preflight.allocation import accelerator_limit


def test_alloc001_disaggregated_tp1_shows_the_whole_sum() -> None:
    [finding] = findings(example("disaggregated-8x8-tp1"), "ALLOC001")
    assert finding.message == (
        "roles use 32 + 4 = 36 GPUs (policy 32, rollout 4) but the allocation has 8 nodes x 8"
        " = 64 GPUs"
    )
    assert finding.fix == "Resize the roles to use exactly 64 GPUs, or allocate the 36 they use."
    assert finding.paths == (
        "execution.allocation.num_nodes", "execution.allocation.gpus_per_node",
        "role_plan.policy", "role_plan.rollout",
    )


def test_alloc001_counts_only_roles_with_gpus_of_their_own() -> None:
    # Reference on its own 4 nodes: 32 + 32 + 32 = 96 of 64.
    data = example("disaggregated-8x8-tp8", {
        "role_plan.placement.colocate_policy_ref": False,
        "role_plan.reference.colocated_with_policy": False,
    })
    [finding] = findings(data, "ALLOC001")
    assert finding.message == (
        "roles use 32 + 32 + 32 = 96 GPUs (policy 32, reference 32, rollout 32) but the"
        " allocation has 8 nodes x 8 = 64 GPUs"
    )
    assert finding.fix == (
        "Resize the roles to use exactly 64 GPUs, or allocate the 96 they use"
        " (execution.allocation.num_nodes 12)."
    )


def test_alloc001_passes_on_colocated_disaggregated_and_megatron_examples() -> None:
    for name in ("colocated-1x8", "disaggregated-8x8-tp8", "megatron-moe-5x8"):
        assert messages(example(name), "ALLOC001") == [], name


def test_alloc002_every_role_uses_whole_nodes() -> None:
    assert messages(example("disaggregated-8x8-tp1"), "ALLOC002") == [
        "rollout uses rollout.num_engines 4 x TP 1 x PP 1 x DP 1 = 4 GPUs, not whole nodes of"
        " execution.allocation.gpus_per_node 8"
    ]
    half_node_reference = example("disaggregated-8x8-tp8", {
        "role_plan.placement.colocate_policy_ref": False,
        "role_plan.reference": {"colocated_with_policy": False, "num_nodes": 1,
                                "num_gpus_per_node": 4},
    })
    assert messages(half_node_reference, "ALLOC002") == [
        "reference uses reference.num_nodes 1 x reference.num_gpus_per_node 4 = 4 GPUs, not"
        " whole nodes of execution.allocation.gpus_per_node 8"
    ]
    assert messages(example("megatron-moe-5x8"), "ALLOC002") == []


def test_alloc003_policy_uses_whole_nodes() -> None:
    data = example(edits={
        "role_plan.policy.num_nodes": 2, "role_plan.policy.num_gpus_per_node": 4,
        "role_plan.reference.num_nodes": 2, "role_plan.reference.num_gpus_per_node": 4,
    })
    assert messages(data, "ALLOC003") == [
        "role_plan.policy.num_gpus_per_node 4 differs from execution.allocation.gpus_per_node 8;"
        " the policy uses whole nodes"
    ]
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
