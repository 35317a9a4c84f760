"""Geometry rules (rlaunch/preflight/rules/geometry.py, heads_and_experts.py,
geometry_roles.py): one passing and one failing recipe each."""

from __future__ import annotations

from typing import Any

import pytest

from preflight.helpers import example, findings, messages
from rlaunch.preflight import run_preflight
from rlaunch.spec import parse_spec
from rlaunch.preflight.rules.geometry import divisors
from rlaunch.spec.examples import QWEN25_1_5B

MEGATRON = "megatron-moe-5x8"
DISAGG = "disaggregated-8x8-tp8"


def test_geo001_every_nonpositive_count_is_reported_and_dependent_rules_skip() -> None:
    data = example(edits={
        "role_plan.policy.num_nodes": 0,
        "role_plan.rollout.tensor_parallel_size": -2,
        "execution.allocation.gpus_per_node": 0,
    })
    found = findings(data, "GEO001")
    assert [(f.paths, f.message) for f in found] == [
        (("role_plan.policy.num_nodes",), "role_plan.policy.num_nodes is 0; every count in the"
         " role plan and the allocation must be at least 1"),
        (("role_plan.rollout.tensor_parallel_size",), "role_plan.rollout.tensor_parallel_size is"
         " -2; every count in the role plan and the allocation must be at least 1"),
        (("execution.allocation.gpus_per_node",), "execution.allocation.gpus_per_node is 0;"
         " every count in the role plan and the allocation must be at least 1"),
    ]
    assert found[0].fix == (
        "Set role_plan.policy.num_nodes to a positive integer (1 when that dimension is unused)."
    )
    for dependent in ("GEO005", "GEO007", "ALLOC001", "BATCH004", "GEO016"):
        assert messages(data, dependent) == []


def test_geo001_passes_on_the_worked_examples() -> None:
    assert messages(example(), "GEO001") == []


def test_geo002_fsdp_rejects_megatron_sizes() -> None:
    data = example(edits={"role_plan.policy.tensor_parallel_size": 2,
                          "role_plan.policy.expert_parallel_size": 4,
                          "role_plan.reference.pipeline_parallel_size": 2})
    assert messages(data, "GEO002") == [
        "strategy fsdp has no Megatron TP, but role_plan.policy.tensor_parallel_size is 2",
        "strategy fsdp has no Megatron EP, but role_plan.policy.expert_parallel_size is 4",
        "strategy fsdp has no Megatron PP, but role_plan.reference.pipeline_parallel_size is 2",
    ]
    assert messages(example(), "GEO002") == []
    assert messages(example(MEGATRON), "GEO002") == []


def test_geo003_megatron_world_divisible_by_tp_pp_cp() -> None:
    data = example(MEGATRON, {"role_plan.policy.num_nodes": 3,
                              "role_plan.policy.num_gpus_per_node": 4,
                              "role_plan.policy.tensor_parallel_size": 8})
    [finding] = findings(data, "GEO003")
    assert finding.message == (
        "policy world 12 = policy.num_nodes 3 x policy.num_gpus_per_node 4 is not divisible by"
        " TP 8 x PP 1 x CP 1 = 8"
    )
    assert finding.fix == (
        "Make TP x PP x CP a divisor of 12 (1, 2, 3, 4, 6, 12), or give the policy a multiple"
        " of 8 GPUs."
    )
    assert finding.paths[0] == "role_plan.policy.num_nodes"
    passing = example(MEGATRON, {"role_plan.policy.num_nodes": 3,
                                 "role_plan.policy.num_gpus_per_node": 4})
    assert messages(passing, "GEO003") == []


def test_geo004_megatron_world_divisible_by_etp_ep_pp() -> None:
    data = example(MEGATRON, {"role_plan.policy.num_nodes": 3,
                              "role_plan.policy.expert_parallel_size": 16})
    assert messages(data, "GEO004") == [
        "policy world 24 = policy.num_nodes 3 x policy.num_gpus_per_node 8 is not divisible by"
        " ETP 1 x EP 16 x PP 1 = 16"
    ]
    assert messages(example(MEGATRON), "GEO004") == []


def test_geo005_fsdp_world_divisible_by_sp() -> None:
    data = example(edits={"role_plan.policy.sequence_parallel_size": 3})
    assert messages(data, "GEO005") == [
        "policy world 8 = policy.num_nodes 1 x policy.num_gpus_per_node 8 is not divisible by"
        " SP 3"
    ]
    assert messages(example(edits={"role_plan.policy.sequence_parallel_size": 4}),
                    "GEO005") == []


def test_geo006_inference_ep_needs_dp_times_tp() -> None:
    data = example(MEGATRON, {"role_plan.rollout.data_parallel_size": 4})
    assert messages(data, "GEO006") == [
        "rollout EP 8 needs rollout DP x TP == EP, but DP 4 x TP 1 = 4"
    ]
    assert messages(example(MEGATRON), "GEO006") == []
    # EP 1 does not constrain DP x TP.
    assert messages(example(edits={"role_plan.rollout.data_parallel_size": 2}), "GEO006") == []


def test_geo007_colocate_all_needs_equal_gpus() -> None:
    data = example(edits={"role_plan.rollout.num_engines": 4})
    assert messages(data, "GEO007") == [
        "placement.colocate_all shares GPUs, but the policy world 8 = policy.num_nodes 1 x"
        " policy.num_gpus_per_node 8 differs from the rollout's rollout.num_engines 4 x TP 1"
        " x PP 1 x DP 1 = 4 GPUs"
    ]
    assert messages(example(), "GEO007") == []
    # Disaggregated plans are not concerned.
    assert messages(example("disaggregated-8x8-tp1"), "GEO007") == []


def test_geo008_engine_tp_across_nodes_is_a_warning() -> None:
    data = example(edits={"role_plan.rollout.tensor_parallel_size": 16,
                          "role_plan.rollout.num_engines": 1, "role_plan.policy.num_nodes": 2,
                          "role_plan.reference.num_nodes": 2, "execution.allocation.num_nodes": 2})
    [finding] = findings(data, "GEO008")
    assert (finding.severity, finding.message) == (
        "warning",
        "rollout TP 16 is wider than a node of execution.allocation.gpus_per_node 8: such an"
        " engine all-reduces over the network in every layer. SkyRL runs it (vLLM's ray executor"
        " spans nodes), but generation is slow",
    )
    odd = example(edits={"role_plan.rollout.tensor_parallel_size": 3,
                         "role_plan.rollout.num_engines": 1,
                         "role_plan.policy.num_gpus_per_node": 3,
                         "role_plan.reference.num_gpus_per_node": 3})
    assert messages(odd, "GEO008") == [
        "rollout TP 3 does not divide execution.allocation.gpus_per_node 8 (8 % 3 = 2), so"
        " engines packed node by node put some TP groups across two nodes: such an engine"
        " all-reduces over the network in every layer. SkyRL runs it (vLLM's ray executor spans"
        " nodes), but generation is slow"
    ]
    # Pipeline stages and engine DP ranks across nodes are no finding (MEGATRON: 1 engine DP 8).
    wide_pp = example(DISAGG, {"role_plan.rollout.pipeline_parallel_size": 2})
    assert messages(wide_pp, "GEO008") == []
    assert messages(example(), "GEO008") == []


def test_geo010_reference_exactly_when_kl() -> None:
    missing = example(edits={"role_plan.reference": None})
    assert messages(missing, "GEO010") == [
        "KL is used (algorithm.kl.use_kl_loss true, use_kl_in_reward false) but"
        " role_plan.reference is null"
    ]
    unused = example(edits={"algorithm.kl.use_kl_loss": False})
    found = findings(unused, "GEO010")
    assert [(f.severity, f.message) for f in found] == [
        ("warning", "role_plan.reference is set but KL is off (algorithm.kl.use_kl_loss false,"
         " use_kl_in_reward false), so it is never used"),
    ]
    no_kl = example(edits={"algorithm.kl.use_kl_loss": False, "role_plan.reference": None})
    assert messages(no_kl, "GEO010") == []
    assert messages(example(), "GEO010") == []


def test_geo011_reference_placement_agrees() -> None:
    data = example(DISAGG, {"role_plan.placement.colocate_policy_ref": False})
    assert messages(data, "GEO011") == [
        "role_plan.reference.colocated_with_policy is true but placement.colocate_all false and"
        " colocate_policy_ref false place the reference on its own GPUs"
    ]
    own_gpus = example(DISAGG, {
        "role_plan.placement.colocate_policy_ref": False,
        "role_plan.reference.colocated_with_policy": False,
    })
    assert messages(own_gpus, "GEO011") == []


def _critic(data: dict[str, Any], colocated: bool) -> None:
    data["algorithm"]["advantage_estimator"] = "gae"
    data["critic_model"] = dict(QWEN25_1_5B, name="qwen2.5-1.5b-critic")
    data["role_plan"]["critic"] = {"colocated_with_policy": colocated, "num_nodes": 1,
                                   "num_gpus_per_node": 8}
    data["role_plan"]["batch"]["critic_mini_batch_size"] = 64


def test_geo012_critic_role_exactly_with_gae() -> None:
    assert messages(example(edits={"algorithm.advantage_estimator": "gae"}), "GEO012") == [
        "algorithm.advantage_estimator gae trains a value model, but role_plan.critic is null"
    ]
    extra = example(edits={"role_plan.critic": {"colocated_with_policy": True, "num_nodes": 1,
                                                "num_gpus_per_node": 8}})
    assert messages(extra, "GEO012") == [
        "role_plan.critic is set but algorithm.advantage_estimator grpo uses no critic"
    ]
    assert messages(example(edits=lambda d: _critic(d, True)), "GEO012") == []


def test_geo013_critic_colocated_iff_colocate_all() -> None:
    data = example(edits=lambda d: _critic(d, False))
    assert messages(data, "GEO013") == [
        "role_plan.critic.colocated_with_policy is false but placement.colocate_all is true; the"
        " critic shares the policy's GPUs exactly when everything is colocated"
    ]
    colocated = example(edits=lambda d: _critic(d, True))
    assert messages(colocated, "GEO013") == []
    # A fully colocated GAE plan is clean as a whole.
    every = run_preflight(parse_spec(colocated, "gae"))
    assert [f.code for f in every if f.is_error] == []


def test_geo014_colocated_roles_have_the_policy_footprint() -> None:
    data = example(edits={"role_plan.reference.num_nodes": 2})
    [finding] = findings(data, "GEO014")
    assert finding.message == (
        "role_plan.reference shares the policy's GPUs under placement.colocate_all but uses"
        " reference.num_nodes 2 x reference.num_gpus_per_node 8 = 16 GPUs, the policy"
        " policy.num_nodes 1 x policy.num_gpus_per_node 8 = 8; SkyRL's trainer.build_models"
        " asserts they are equal at start-up"
    )
    assert finding.fix == (
        "Give role_plan.reference 8 GPUs (num_nodes x num_gpus_per_node), or set"
        " placement.colocate_all to false."
    )
    shape = example(DISAGG, {"role_plan.reference.num_nodes": 8,
                             "role_plan.reference.num_gpus_per_node": 4})
    assert messages(shape, "GEO014") == [
        "role_plan.reference shares the policy's GPUs under placement.colocate_policy_ref but"
        " uses reference.num_nodes 8 x reference.num_gpus_per_node 4 = 32, the policy"
        " policy.num_nodes 4 x policy.num_gpus_per_node 8 = 32; SkyRL's validate_cfg needs the"
        " same nodes and GPUs per node"
    ]
    assert messages(example(), "GEO014") == []


def test_geo019_reference_world_divides_into_its_own_replicas() -> None:
    data = example(MEGATRON, {"role_plan.placement.colocate_policy_ref": False,
                              "role_plan.reference.colocated_with_policy": False,
                              "role_plan.reference.num_nodes": 1,
                              "role_plan.reference.num_gpus_per_node": 2})
    [finding] = findings(data, "GEO019")
    assert finding.message == (
        "reference world reference.num_nodes 1 x reference.num_gpus_per_node 2 = 2 is not"
        " divisible by its TP 4 x PP 1 x CP 1 = 4 (reference DP 0)"
    )
    assert finding.fix == (
        "Make the reference's TP x PP x CP (now 4) a divisor of 2 (1, 2), or give the reference"
        " a multiple of 4 GPUs."
    )
    fsdp = example(edits={"role_plan.reference.sequence_parallel_size": 3})
    assert messages(fsdp, "GEO019") == [
        "reference world reference.num_nodes 1 x reference.num_gpus_per_node 8 = 8 is not"
        " divisible by its SP 3 (8 % 3 = 2)"
    ]
    # Without KL nothing builds the reference (trainer.build_models: use_ref_model).
    no_kl = example(edits={"role_plan.reference.sequence_parallel_size": 3,
                           "algorithm.kl.use_kl_loss": False})
    assert messages(no_kl, "GEO019") == []
    assert messages(example(MEGATRON), "GEO019") == []


def test_geo015_megatron_tp_divides_heads() -> None:
    data = example(MEGATRON, {"model.facts.num_attention_heads": 30,
                              "model.facts.num_key_value_heads": 6})
    assert messages(data, "GEO015") == [
        "policy TP 4 does not divide model.facts.num_attention_heads 30 (30 % 4 = 2)"
    ]
    assert messages(example(MEGATRON), "GEO015") == []


def test_geo016_rollout_tp_divides_heads_tp8_on_42_heads_is_rejected() -> None:
    [finding] = findings(example("tp8-on-42-heads"), "GEO016")
    assert finding.message == (
        "rollout TP 8 does not divide model.facts.num_attention_heads 42 (42 % 8 = 2)"
    )
    assert finding.paths == ("role_plan.rollout.tensor_parallel_size",
                             "model.facts.num_attention_heads")
    assert messages(example(DISAGG), "GEO016") == []  # 40 heads, TP 8


@pytest.mark.parametrize(
    ("tp", "kv", "expected"),
    [
        (8, 5, "rollout TP 8 and model.facts.num_key_value_heads 5: TP 8 > 5 KV heads, and 5 KV"
               " heads cannot be replicated evenly over TP 8 (8 % 5 = 3)"),
        (4, 6, "rollout TP 4 and model.facts.num_key_value_heads 6: 6 KV heads do not split over"
               " TP 4 (6 % 4 = 2)"),
        (8, 8, None), (8, 2, None), (2, 8, None),
    ],
)
def test_geo017_rollout_tp_and_kv_heads(tp: int, kv: int, expected: str | None) -> None:
    data = example(DISAGG, {"role_plan.rollout.tensor_parallel_size": tp,
                            "model.facts.num_attention_heads": 120,
                            "model.facts.num_key_value_heads": kv})
    assert messages(data, "GEO017") == ([expected] if expected else [])


def test_geo018_expert_parallel_needs_moe_and_divides_experts() -> None:
    dense = example(MEGATRON, {"model.facts.num_experts": None})
    assert messages(dense, "GEO018") == [
        "policy EP 8 needs an MoE model, but model.facts.num_experts is null (a dense model)",
        "rollout EP 8 needs an MoE model, but model.facts.num_experts is null (a dense model)",
    ]
    uneven = example(MEGATRON, {"model.facts.num_experts": 60})
    assert messages(uneven, "GEO018") == [
        "policy EP 8 does not divide model.facts.num_experts 60 (60 % 8 = 4)",
        "rollout EP 8 does not divide model.facts.num_experts 60 (60 % 8 = 4)",
    ]
    assert messages(example(MEGATRON), "GEO018") == []


def test_divisors_are_listed_whole_and_a_typos_without_the_middle() -> None:
    for number in range(1, 3000):
        assert divisors(number) == ", ".join(
            str(d) for d in range(1, number + 1) if number % d == 0), number
    # Above 10**12 only those up to 10**6 and their cofactors: a world of 2**41 GPUs is a typo,
    # and listing it used to take 2**41 steps.
    assert divisors(2**41) == (", ".join(str(2**k) for k in range(20)) + ", ..., "
                               + ", ".join(str(2**k) for k in range(22, 42)))
