"""SkyRL 0.3.0's published recipes (tests/preflight/recipes.py) pass preflight with no error;
where their worst case does not fit, the memory rules warn with the length at which it fails."""

from __future__ import annotations

import pytest

from rlaunch.preflight import run_preflight
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.rules.memory import memory_estimates
from rlaunch.spec import parse_spec
from tests.preflight.recipes import RECIPES


def preflight(name: str) -> list[tuple[str, str, str]]:
    spec = parse_spec(RECIPES[name](), name)
    return [(f.code, f.severity, f.message) for f in run_preflight(spec, scope="spec")]


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_published_recipe_passes_preflight_without_an_error(name: str) -> None:
    assert [f for f in preflight(name) if f[1] == "error" or f[0] == "PRE000"] == []


def mem(name: str) -> list[tuple[str, str, str]]:
    return [f for f in preflight(name) if f[0].startswith("MEM")]


def test_dapo_math_7b_warns_about_its_worst_case_naming_the_length_that_fails() -> None:
    [(code, severity, message)] = mem("dapo-math-7b")
    assert (code, severity) == ("MEM002", "warning")
    assert message.startswith(
        "The policy's training step fails with out-of-memory once a micro batch's 16 sequences "
        "average more than 4389 tokens (70235 tokens on this GPU; SkyRL removes a micro "
        "batch's padding, trainer.remove_microbatch_padding): the worst case, every sequence "
        "at 10240 tokens, is ")
    assert message.endswith("= 161.1 GiB (201% of one H100, 80.0 GiB); shorter sequences fit "
                            "(19.1 GiB fixed + 930816 B per token)")


def test_skyrl_sql_forward_micro_batch_is_checked_though_its_training_micro_batch_fits() -> None:
    [(code, severity, message)] = mem("skyrl-sql-7b")
    assert (code, severity) == ("MEM003", "warning")
    assert message.startswith(
        "The policy's forward pass (old log-probs) fails with out-of-memory once a micro "
        "batch's 8 sequences average more than 23312 tokens (186498 tokens on this GPU; ")


def phases(name: str) -> dict[str, str]:
    check = Check(parse_spec(RECIPES[name](), name))
    return {e.phase: e.sum_text() for e in memory_estimates(check)}


GSM8K_POLICY = (
    "weights + grads + Adam 1.54e9 params x 16 B / 4 shards = 5.8 GiB + unsharded root + one "
    "layer (0.23e9 + 0.05e9 params) x 4 B = 1.0 GiB + activations (gradient checkpointing) (28 "
    "layers x 2 B + one layer 34 B) x micro 64 x 1536 tokens x hidden 1536 = 12.7 GiB + logits "
    "(bf16 + the divide's gradient) 4 B x micro 64 x 1536 tokens x vocab 151936 = 55.6 GiB = "
    "75.1 GiB")


def test_gsm8k_1_5b_on_4_h100_at_full_length_leaves_less_than_10_percent_free() -> None:
    assert phases("gsm8k-1.5b")["policy training"] == GSM8K_POLICY
    assert mem("gsm8k-1.5b") == [(
        "MEM002", "warning",
        "The policy's training step leaves less than 10% of the GPU free (CUDA contexts, NCCL "
        f"buffers and fragmentation are not in the sum): {GSM8K_POLICY} (94% of one H100, "
        "80.0 GiB)")]


def test_a_megatron_lora_plan_is_costed_as_lora() -> None:
    assert mem("megatron-lora-qwen3-30b-a3b") == []
    assert phases("megatron-lora-qwen3-30b-a3b")["policy training"].startswith(
        "frozen weights (0.38e9 + 3.63e9 params on this GPU) x 2 B = 7.5 GiB + LoRA rank 64 "
        "weights + grads + Adam ")


def test_a_token_cap_bounds_the_micro_batch_and_names_the_tokens_that_fail() -> None:
    """`trainer.max_tokens_per_microbatch`: SkyRL packs micro batches by tokens, a longer
    sequence alone; DAPO at a cap of 32768 fits, at 100000 warns at the tokens that fail."""
    data = RECIPES["dapo-math-7b"]()
    data["settings"]["trainer.max_tokens_per_microbatch"] = 32768
    spec = parse_spec(data, "capped")
    assert [f for f in run_preflight(spec, scope="spec") if f.code.startswith("MEM")] == []
    [policy] = [e for e in memory_estimates(Check(spec)) if e.phase == "policy training"]
    assert "x micro batch max(max_tokens_per_microbatch 32768, 10240) tokens x vocab 152064 = " \
           "18.6 GiB = 47.5 GiB" in policy.sum_text()
    data["settings"]["trainer.max_tokens_per_microbatch"] = 100000
    [message] = [f.message for f in run_preflight(parse_spec(data, "loose"), scope="spec")
                 if f.code == "MEM002"]
    assert message.startswith(
        "The policy's training step fails with out-of-memory once a micro batch packs more "
        "than 70235 tokens (trainer.max_tokens_per_microbatch 100000; a longer sequence is a "
        "micro batch of its own)")


def test_a_forward_micro_batch_larger_than_a_gpus_share_is_that_share() -> None:
    """SkyRL chunks what a DP rank has: with the SkyRL-SQL recipe's mini batch of 256 prompts
    x 5 samples over 8 GPUs, a forward micro batch of 1024 is 160 sequences."""
    data = RECIPES["skyrl-sql-7b"]()
    data["role_plan"]["batch"]["micro_forward_batch_size_per_gpu"] = 1024
    [forward] = [e for e in memory_estimates(Check(parse_spec(data, "wide")))
                 if e.phase == "policy forward"]
    assert "micro 160 x 32000 tokens" in forward.sum_text()
