"""Batch rules (rlaunch/preflight/rules/batch.py), as SkyRL 0.3.0 validates and shards batches."""

from __future__ import annotations

from typing import Any

from preflight.helpers import example, findings, messages
from rlaunch.spec.examples import QWEN25_1_5B

B = "role_plan.batch"


def gae(data: dict[str, Any], critic_mini: int | None = 64) -> None:
    """Colocated GAE: a critic colocated with the policy (DP 8)."""
    data["algorithm"]["advantage_estimator"] = "gae"
    data["critic_model"] = dict(QWEN25_1_5B, name="qwen2.5-1.5b-critic")
    data["role_plan"]["critic"] = {"colocated_with_policy": True, "num_nodes": 1,
                                   "num_gpus_per_node": 8}
    data["role_plan"]["batch"]["critic_mini_batch_size"] = critic_mini


def test_worked_examples_pass_every_batch_rule_but_the_dataset_tail_warning() -> None:
    for name in ("colocated-1x8", "disaggregated-8x8-tp8", "megatron-moe-5x8"):
        for code in (f"BATCH{n:03d}" for n in range(1, 13)):
            if code != "BATCH010":
                assert messages(example(name), code) == [], (name, code)


def test_batch001_positive_sizes_and_dependent_rules_skip() -> None:
    data = example(edits={f"{B}.train_batch_size": 0, f"{B}.n_samples_per_prompt": -1})
    assert messages(data, "BATCH001") == [
        "role_plan.batch.train_batch_size is 0; batch sizes and samples per prompt must be at"
        " least 1",
        "role_plan.batch.n_samples_per_prompt is -1; batch sizes and samples per prompt must be"
        " at least 1",
    ]
    for code in ("BATCH002", "BATCH003", "BATCH004", "BATCH008", "BATCH009", "BATCH010"):
        assert messages(data, code) == [], code


def test_batch002_train_at_least_mini_for_policy_and_critic() -> None:
    assert messages(example(edits={f"{B}.train_batch_size": 32}), "BATCH002") == [
        "train_batch_size 32 is smaller than policy_mini_batch_size 64"
    ]
    critic = example(edits=lambda d: gae(d, critic_mini=512))
    assert messages(critic, "BATCH002") == [
        "train_batch_size 256 is smaller than critic_mini_batch_size 512"
    ]
    assert messages(example(edits=gae), "BATCH002") == []


def test_batch003_train_multiple_of_mini() -> None:
    assert messages(example(edits={f"{B}.policy_mini_batch_size": 96}), "BATCH003") == [
        "train_batch_size 256 is not divisible by policy_mini_batch_size 96 (256 % 96 = 64)"
    ]
    critic = example(edits=lambda d: gae(d, critic_mini=96))
    assert messages(critic, "BATCH003") == [
        "train_batch_size 256 is not divisible by critic_mini_batch_size 96 (256 % 96 = 64)"
    ]
    assert messages(example(edits={f"{B}.policy_mini_batch_size": 128}), "BATCH003") == []


def test_batch004_mini_batch_splits_over_dp() -> None:
    below = example(edits={f"{B}.policy_mini_batch_size": 2, f"{B}.n_samples_per_prompt": 3})
    assert messages(below, "BATCH004") == [
        "policy mini batch of policy_mini_batch_size 2 x n_samples_per_prompt 3 = 6 sequences is"
        " fewer than policy DP 8 (policy DP 8 = world 8 / SP 1): SkyRL's validate_batch_sizes"
        " needs at least 1 sequence per GPU"
    ]
    uneven = example("disaggregated-8x8-tp8", {f"{B}.n_samples_per_prompt": 5,
                                               f"{B}.policy_mini_batch_size": 4,
                                               f"{B}.train_batch_size": 256})
    assert messages(uneven, "BATCH004") == [
        "policy mini batch of policy_mini_batch_size 4 x n_samples_per_prompt 5 = 20 sequences is"
        " fewer than policy DP 32 (policy DP 32 = world 32 / SP 1): SkyRL's validate_batch_sizes"
        " needs at least 1 sequence per GPU"
    ]
    # Not whole per GPU: MeshDispatch.stage_chunks (skyrl/backends/skyrl_train/distributed/
    # dispatch.py) pads each mini batch to a multiple of DP with loss-masked dummies: waste.
    not_whole = example(edits={f"{B}.policy_mini_batch_size": 4, f"{B}.n_samples_per_prompt": 3})
    [finding] = findings(not_whole, "BATCH004")
    assert (finding.severity, finding.message) == (
        "warning",
        "policy mini batch of policy_mini_batch_size 4 x n_samples_per_prompt 3 = 12 sequences"
        " does not split evenly over policy DP 8 (12 % 8 = 4; policy DP 8 = world 8 / SP 1):"
        " SkyRL pads every mini batch with 4 dummy sequences (loss mask 0) to 16, computed and"
        " thrown away",
    )
    megatron = example("megatron-moe-5x8", {f"{B}.policy_mini_batch_size": 1,
                                            f"{B}.n_samples_per_prompt": 4})
    assert messages(megatron, "BATCH004") == [
        "policy mini batch of policy_mini_batch_size 1 x n_samples_per_prompt 4 = 4 sequences is"
        " fewer than policy DP 8 (policy DP 8 = world 32 / (TP 4 x PP 1 x CP 1)): SkyRL's"
        " validate_batch_sizes needs at least 1 sequence per GPU"
    ]


def test_batch005_per_gpu_mini_divisible_by_micro() -> None:
    data = example(edits={f"{B}.micro_train_batch_size_per_gpu": 6})
    [finding] = findings(data, "BATCH005")
    assert finding.message == (
        "policy mini batch per GPU 64 = policy_mini_batch_size 64 x n_samples_per_prompt 8 //"
        " policy DP 8 is not divisible by micro_train_batch_size_per_gpu 6 (64 % 6 = 4)"
    )
    assert finding.fix == "Set micro_train_batch_size_per_gpu to a divisor of 64."
    # A micro batch larger than the per-GPU mini batch is the same mistake.
    assert messages(example(edits={f"{B}.micro_train_batch_size_per_gpu": 128}), "BATCH005") == [
        "policy mini batch per GPU 64 = policy_mini_batch_size 64 x n_samples_per_prompt 8 //"
        " policy DP 8 is not divisible by micro_train_batch_size_per_gpu 128 (64 % 128 = 64)"
    ]
    assert messages(example(edits={f"{B}.micro_train_batch_size_per_gpu": 16}), "BATCH005") == []
    # validate_batch_sizes floors mini x n / DP: 12 // 8 = 1, which micro 4 does not divide.
    floored = example(edits={f"{B}.policy_mini_batch_size": 4, f"{B}.n_samples_per_prompt": 3})
    assert messages(floored, "BATCH005") == [
        "policy mini batch per GPU 1 = policy_mini_batch_size 4 x n_samples_per_prompt 3 //"
        " policy DP 8 is not divisible by micro_train_batch_size_per_gpu 4 (1 % 4 = 1)"
    ]


def test_batch006_per_gpu_train_divisible_by_per_gpu_mini() -> None:
    data = example(edits={f"{B}.train_batch_size": 96})
    assert messages(data, "BATCH006") == [
        "policy train batch per GPU 96 = train_batch_size 96 x n_samples_per_prompt 8 // policy"
        " DP 8 is not divisible by the per-GPU mini batch 64"
    ]
    assert messages(example(edits={f"{B}.train_batch_size": 128}), "BATCH006") == []


def test_batch007_critic_mini_exactly_with_a_critic() -> None:
    assert messages(example(edits={f"{B}.critic_mini_batch_size": 64}), "BATCH007") == [
        "role_plan.batch.critic_mini_batch_size is 64 but there is no critic role"
    ]
    assert messages(example(edits=lambda d: gae(d, critic_mini=None)), "BATCH007") == [
        "role_plan.critic is set but role_plan.batch.critic_mini_batch_size is null"
    ]
    assert messages(example(edits=gae), "BATCH007") == []


def test_batch008_train_sequences_at_least_lcm_of_policy_and_reference_dp() -> None:
    # skyrl/train/utils/utils.py validate_batch_sizes counts sequences: train x n >= lcm.
    data = example(edits={f"{B}.train_batch_size": 1, f"{B}.policy_mini_batch_size": 1,
                          f"{B}.n_samples_per_prompt": 4})
    assert messages(data, "BATCH008") == [
        "train_batch_size 1 x n_samples_per_prompt 4 = 4 sequences, fewer than lcm(policy DP 8,"
        " reference DP 8) = 8"
    ]
    no_kl = example(edits={f"{B}.train_batch_size": 1, f"{B}.policy_mini_batch_size": 1,
                           f"{B}.n_samples_per_prompt": 4,
                           "algorithm.kl.use_kl_loss": False, "role_plan.reference": None})
    assert messages(no_kl, "BATCH008") == [
        "train_batch_size 1 x n_samples_per_prompt 4 = 4 sequences, fewer than lcm(policy DP 8)"
        " = 8"
    ]
    # 4 prompts x 8 samples = 32 sequences >= 8: SkyRL accepts it, and so does preflight.
    assert messages(example(edits={f"{B}.train_batch_size": 4, f"{B}.policy_mini_batch_size": 4}),
                    "BATCH008") == []


def test_batch009_a_trimmed_step_is_an_error() -> None:
    data = example(edits={f"{B}.train_batch_size": 12, f"{B}.policy_mini_batch_size": 12,
                          f"{B}.n_samples_per_prompt": 1})
    [finding] = findings(data, "BATCH009")
    assert finding.message == (
        "train_batch_size 12 is not a multiple of 8 prompts = lcm(policy DP 8, reference DP 8)"
        " = 8 / gcd(8, n_samples_per_prompt 1): SkyRL's _remove_tail_data trims each step to 8"
        " prompts, and the step then fails its assert that the prompt count equals"
        " train_batch_size 12"
    )
    # With 8 samples per prompt every prompt count shards evenly: stride 8 / gcd(8, 8) = 1.
    assert messages(example(edits={f"{B}.train_batch_size": 12,
                                   f"{B}.policy_mini_batch_size": 4}), "BATCH009") == []
    assert messages(example(), "BATCH009") == []


def test_batch010_dataset_covers_train_batches() -> None:
    [short] = findings(example(edits={"train_data.rows": 100}), "BATCH010")
    assert (short.severity, short.message) == (
        "error",
        "train_data gsm8k-train-prompts@2026.11.30 has 100 rows, fewer than train_batch_size"
        " 256: not one training step",
    )
    assert messages(example(edits={"train_data.rows": 7424}), "BATCH010") == []
    assert messages(example(edits={"train_data.rows": None}), "BATCH010") == []


def test_batch011_eval_batch_within_eval_data() -> None:
    [finding] = findings(example(edits={f"{B}.eval_batch_size": 2048}), "BATCH011")
    assert (finding.severity, finding.message) == (
        "warning",
        "eval_batch_size 2048 exceeds the 1319 rows of eval_data gsm8k-test-prompts@2026.11.30:"
        " evaluation runs one partial batch",
    )
    assert messages(example(edits={"eval_data": None}), "BATCH011") == []
    assert messages(example(), "BATCH011") == []


def test_batch012_fully_async_needs_one_mini_batch_per_step() -> None:
    assert messages(example(edits={"algorithm.fully_async": True}), "BATCH012") == [
        "algorithm.fully_async needs train_batch_size == policy_mini_batch_size, but"
        " train_batch_size 256 != policy_mini_batch_size 64"
    ]
    passing = example(edits={"algorithm.fully_async": True, f"{B}.policy_mini_batch_size": 256})
    assert messages(passing, "BATCH012") == []
