"""The MEM figure of SkyRL's GSM8K recipe against torch's own accounting on CPU.

tests/fixtures/memory_terms_cpu.json is what benchmarks/memory_terms.py printed (its
`measured_by` says how): transformers' Qwen2ForCausalLM at Qwen2.5-1.5B's widths with few
layers, measured on CPU by dtype and by torch.profiler's allocation events. Here those
coefficients are scaled to the recipe (28 layers, FSDP over 4 H100, micro batch 64 of 512 +
1024 tokens) and compared with the policy-training estimate MEM002 checks, term by term. The
all-gathered root unit and layer (FSDP2's unsharded bf16 parameters and gradients) need a
process group and a GPU: that one term is the formula's on both sides."""

from __future__ import annotations

import json
from pathlib import Path

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.rules.memory import memory_estimates
from rlaunch.spec import parse_spec
from tests.preflight.recipes import gsm8k_1_5b

MEASURED = json.loads((Path(__file__).parents[1] / "fixtures" / "memory_terms_cpu.json")
                      .read_text())
GIB = 2**30


def measured_terms(facts: dict, gpus: int, tokens: int) -> dict[str, float]:
    """The CPU coefficients applied to the plan, bytes per GPU. The backward's peak above the
    kept activations is the larger of the logits' second copy and the recomputed layer: the LM
    head's backward frees the copy before the last layer is recomputed."""
    hidden, vocab = facts["hidden_size"], facts["vocab_size"]
    kept = tokens * hidden * (
        facts["num_hidden_layers"] * MEASURED["kept_per_layer_per_token_hidden"]
        + MEASURED["kept_outside_layers_per_token_hidden"])
    backward = max(tokens * vocab * MEASURED["backward_peak_per_token_vocab"],
                   tokens * hidden * MEASURED["recomputed_layer_per_token_hidden"])
    return {
        "weights + grads + Adam": facts["num_parameters"] * sum(MEASURED["state"].values())
        / gpus,
        "activations and logits": kept + backward
        + tokens * vocab * MEASURED["logits_per_token_vocab"],
    }


def test_the_gsm8k_recipes_mem_figure_is_within_15_percent_of_the_cpu_measurement() -> None:
    data = gsm8k_1_5b()
    [policy] = [e for e in memory_estimates(Check(parse_spec(data, "gsm8k")))
                if e.phase == "policy training"]
    formula = {term.name: term.bytes for term in policy.terms}
    tokens = 64 * (512 + 1024)
    measured = measured_terms(data["model"]["facts"], 4, tokens)
    unsharded = formula["unsharded root + one layer"]
    table = {
        "weights + grads + Adam": (formula["weights + grads + Adam"],
                                   measured["weights + grads + Adam"]),
        "activations and logits": (
            formula["activations (gradient checkpointing)"]
            + formula["logits (bf16 + the divide's gradient)"],
            measured["activations and logits"]),
    }
    assert {name: (round(a / GIB, 1), round(b / GIB, 1)) for name, (a, b) in table.items()} == {
        "weights + grads + Adam": (5.8, 5.8),
        "activations and logits": (68.3, 64.2),
    }
    total_measured = unsharded + sum(b for _, b in table.values())
    assert round(policy.total / GIB, 1) == 75.1
    assert round(total_measured / GIB, 1) == 71.0
    margin = policy.total / total_measured - 1
    assert 0 <= margin < 0.15  # the figure is above the measurement, by 5.8%
    assert round(100 * margin, 1) == 5.8


def test_the_measurement_shows_what_the_logits_cost() -> None:
    """bf16 logits, 2 B; the temperature divide's backward adds a second bf16 copy (2.02 B
    above the logits at the backward's peak, 0.82 B without the divide); each checkpointed
    layer keeps its bf16 input (2 B per token x hidden); fp32 weights, grads and AdamW 16 B."""
    assert MEASURED["logits_per_token_vocab"] == 2.0
    assert round(MEASURED["backward_peak_per_token_vocab"], 2) == 2.02
    assert round(MEASURED["backward_peak_undivided_per_token_vocab"], 2) == 0.82
    assert round(MEASURED["kept_per_layer_per_token_hidden"], 2) == 2.01
    assert MEASURED["state"] == {"parameters": 4.0, "gradients": 4.0, "adam": 8.0}
