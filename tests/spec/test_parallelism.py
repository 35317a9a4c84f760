"""A trainer role's parallelism: one owner of world, replica, DP and their equations, used by the
policy, the reference and the critic alike."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import pytest

from rlaunch.spec import PolicyRole, ReferenceRole, parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.spec.parallelism import (
    Dimension,
    Parallelism,
    ParallelSizes,
    Strategy,
    dimensions,
)


def layout(strategy: Strategy = "megatron", *, nodes: int = 4, gpus: int = 8, tp: int = 4,
           pp: int = 1, cp: int = 1, ep: int = 8, etp: int = 1, sp: int = 1,
           role: str = "policy") -> Parallelism:
    return Parallelism(role, strategy, nodes=nodes, gpus_per_node=gpus, tensor=tp, pipeline=pp,
                       context=cp, expert=ep, expert_tensor=etp, sequence=sp)


def test_megatron_sizes_and_their_equations():
    policy = layout()
    assert (policy.world, policy.model_parallel, policy.replica, policy.expert_group,
            policy.data_parallel) == (32, 4, 4, 8, 8)
    assert policy.world_equation() == (
        "policy world 32 = policy.num_nodes 4 x policy.num_gpus_per_node 8")
    assert policy.footprint_equation() == "policy.num_nodes 4 x policy.num_gpus_per_node 8 = 32"
    assert policy.replica_equation() == "TP 4 x PP 1 x CP 1 = 4"
    assert policy.expert_equation() == "ETP 1 x EP 8 x PP 1 = 8"
    assert policy.dp_equation() == "policy DP 8 = world 32 / (TP 4 x PP 1 x CP 1)"


def test_derived_sizes_take_no_part_in_equality_and_hash():
    policy = layout()
    again = dataclasses.replace(policy)
    assert (again == policy, hash(again) == hash(policy), again.data_parallel) == (True, True, 8)
    assert layout(tp=8) != policy
    assert repr(policy) == (
        "Parallelism(role='policy', strategy='megatron', nodes=4, gpus_per_node=8, tensor=4,"
        " pipeline=1, context=1, expert=8, expert_tensor=1, sequence=1)")


def test_equal_sections_of_two_plans_give_the_very_same_parallelism():
    first = parse_spec(worked_example("megatron-moe-5x8"))
    second = parse_spec(worked_example("megatron-moe-5x8"))
    assert second.role_plan.policy is first.role_plan.policy
    assert second.role_plan.parallelism("policy") is first.role_plan.parallelism("policy")


def test_fsdp_replicas_are_the_sequence_parallel_groups():
    reference = layout("fsdp", nodes=1, gpus=8, tp=1, ep=1, sp=2, role="reference")
    assert (reference.replica, reference.data_parallel) == (2, 4)
    assert reference.replica_equation() == "SP 2"
    assert reference.dp_equation() == "reference DP 4 = world 8 / SP 2"


@pytest.mark.parametrize(("policy", "why"), [
    (layout(nodes=3, gpus=4, tp=8), "world 12 / (TP 8 x PP 1 x CP 1)"),  # 12 % 8
    (layout(nodes=1, gpus=2, tp=4), "world 2 / (TP 4 x PP 1 x CP 1)"),  # below one replica
    (layout("fsdp", nodes=1, gpus=8, tp=1, ep=1, sp=3), "world 8 / SP 3"),
])
def test_dp_is_undefined_when_the_world_does_not_divide(policy, why):
    assert policy.data_parallel is None
    assert policy.dp_equation() == f"policy DP undefined: {why} is not whole"


@pytest.mark.parametrize("policy", [layout(nodes=0), layout(tp=0), layout("fsdp", sp=-2)])
def test_dp_is_undefined_for_a_count_below_one(policy):
    assert policy.data_parallel is None


def test_the_policy_and_the_reference_declare_their_sizes_once():
    assert issubclass(PolicyRole, ParallelSizes) and issubclass(ReferenceRole, ParallelSizes)
    sizes = list(ParallelSizes.model_fields)
    # The footprint, then the shared sizes; a role may add fields of its own after them.
    policy, reference = list(PolicyRole.model_fields), list(ReferenceRole.model_fields)
    assert policy[: 2 + len(sizes)] == ["num_nodes", "num_gpus_per_node", *sizes]
    assert reference[: 3 + len(sizes)] == [
        "colocated_with_policy", "num_nodes", "num_gpus_per_node", *sizes]
    assert [(name, size.short, size.megatron_only) for name, size in dimensions()] == [
        ("tensor_parallel_size", "TP", True), ("pipeline_parallel_size", "PP", True),
        ("context_parallel_size", "CP", True), ("expert_parallel_size", "EP", True),
        ("expert_tensor_parallel_size", "ETP", True), ("sequence_parallel_size", "SP", False),
    ]


def test_a_size_marked_once_is_a_dimension_and_other_integers_are_not():
    class Wider(ParallelSizes):
        virtual_pipeline_size: Annotated[int, Dimension("VPP", megatron_only=True)]
        lora_rank: int

    assert dimensions(Wider)[-1] == ("virtual_pipeline_size", Dimension("VPP", True))
    assert "lora_rank" not in dict(dimensions(Wider))


def test_the_plan_gives_each_trainer_role_its_layout():
    plan = parse_spec(worked_example("megatron-moe-5x8")).role_plan
    assert plan.parallelism("policy") == plan.policy_parallelism == layout()
    reference = plan.parallelism("reference")
    assert reference is not None and reference.role == "reference"
    assert reference.data_parallel == 8
    assert plan.parallelism("critic") is None


def test_the_critic_runs_the_policys_sizes_on_its_own_gpus():
    data = worked_example("colocated-1x8")
    data["role_plan"]["policy"]["sequence_parallel_size"] = 2
    data["role_plan"]["critic"] = {"colocated_with_policy": True, "num_nodes": 2,
                                   "num_gpus_per_node": 4}
    critic = parse_spec(data).role_plan.parallelism("critic")
    assert critic == layout("fsdp", nodes=2, gpus=4, tp=1, ep=1, sp=2, role="critic")
    assert critic.dp_equation() == "critic DP 4 = world 8 / SP 2"
