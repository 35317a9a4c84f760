"""MEM rules: the memory of each phase on one GPU, against the accelerator's, with every term
of the sum shown; and the formulas against published figures."""

from __future__ import annotations

from typing import Any

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.rules.memory import (
    memory_estimates,
    optimizer_offload,
    qwen14b_on_a100_40,
    qwen14b_on_l4,
)
from rlaunch.preflight.estimates.gpu_memory import (
    NO_OFFLOAD,
    Activations,
    EngineShape,
    OptimizerOffload,
    kv_bytes_per_token,
    policy_training,
)
from rlaunch.preflight.rules.geometry_roles import _with_critic
from rlaunch.preflight.rules.settings import MEGATRON_OPTIMIZER_KWARGS
from rlaunch.spec import parse_spec
from rlaunch.spec.artifacts import ModelFacts
from rlaunch.spec.examples import QWEN25_14B
from rlaunch.spec.parallelism import Parallelism
from tests.preflight.helpers import example, findings, messages

CPU_OFFLOAD = "trainer.policy.fsdp_config.cpu_offload"
LORA_RANK = "trainer.policy.model.lora.rank"


def fsdp_over(gpus: int) -> Parallelism:
    """A policy sharded by FSDP over `gpus` GPUs of one node, no other parallelism."""
    return Parallelism("policy", "fsdp", nodes=1, gpus_per_node=gpus, tensor=1, pipeline=1,
                       context=1, expert=1, expert_tensor=1, sequence=1)


def mem_findings(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f.code, f.severity, f.message)
            for code in ("MEM001", "MEM002", "MEM003", "MEM004", "MEM005", "MEM006")
            for f in findings(data, code)]


def estimates(data: dict[str, Any]) -> dict[str, str]:
    return {e.phase: e.sum_text() for e in memory_estimates(Check(parse_spec(data, "test")))}


def with_settings(**settings: Any):
    def edit(data: dict[str, Any]) -> None:
        qwen14b_on_a100_40(data)
        data["settings"] = {name.replace("__", "."): value for name, value in settings.items()}
    return edit


def test_a_plan_that_fits_shows_each_sum_and_has_no_finding() -> None:
    data = example()  # Qwen2.5-1.5B-Instruct colocated on 1 x 8 H100
    assert mem_findings(data) == []
    assert estimates(data) == {
        "policy training": (
            "weights + grads + Adam 1.54e9 params x 16 B / 8 shards = 2.9 GiB + unsharded root "
            "+ one layer (0.23e9 + 0.05e9 params) x 4 B = 1.0 GiB + activations (gradient "
            "checkpointing) (28 layers x 2 B + one layer 34 B) x micro 4 x 1536 tokens x "
            "hidden 1536 = 0.8 GiB + logits (bf16 + the divide's gradient) 4 B x micro 4 x 1536 "
            "tokens x vocab 151936 = 3.5 GiB = 8.2 GiB"),
        "policy forward": (
            "weights 1.54e9 params x 4 B / 8 shards = 0.7 GiB + unsharded root + one layer "
            "(0.23e9 + 0.05e9 params) x 2 B = 0.5 GiB + activations (forward, one layer) 34 B x "
            "micro 8 x 1536 tokens x hidden 1536 = 0.6 GiB + logits (bf16) 2 B x micro 8 x 1536 "
            "tokens x vocab 151936 = 3.5 GiB = 5.3 GiB"),
        "reference forward": (
            "weights 1.54e9 params x 2 B / 8 shards = 0.4 GiB + unsharded root + one layer "
            "(0.23e9 + 0.05e9 params) x 2 B = 0.5 GiB + activations (forward, one layer) 34 B x "
            "micro 8 x 1536 tokens x hidden 1536 = 0.6 GiB + logits (bf16) 2 B x micro 8 x 1536 "
            "tokens x vocab 151936 = 3.5 GiB = 5.0 GiB"),
        "vLLM engine": (
            "engine weights 1.54e9 params / TP 1 x 2 B = 2.9 GiB + KV cache (what is left; 2 x "
            "28 layers x 2 KV heads x head dim 128 x 2 B = 28672 B/token) = 61.1 GiB = 64.0 GiB"),
    }


def test_weights_grads_and_adam_that_overflow_alone_are_an_error_certain_for_any_input() -> None:
    assert mem_findings(example(edits=qwen14b_on_l4)) == [(
        "MEM002", "error",
        "The policy's training step does not fit on one GPU even at the shortest micro batch "
        "the spec allows (2 sequences of 2 tokens): weights + grads + Adam 14.77e9 params x 16 "
        "B / 8 shards = 27.5 GiB + unsharded root + one layer (1.56e9 + 0.28e9 params) x 4 B = "
        "6.8 GiB = 34.3 GiB before any activation, and 34.3 GiB with them; at full length "
        "weights + grads + Adam 14.77e9 params x 16 B / 8 shards = 27.5 GiB + unsharded root + "
        "one layer (1.56e9 + 0.28e9 params) x 4 B = 6.8 GiB + activations (gradient "
        "checkpointing) (48 layers x 2 B + one layer 34 B) x micro 2 x 3072 tokens x hidden "
        "5120 = 3.8 GiB + logits (bf16 + the divide's gradient) 4 B x micro 2 x 3072 tokens x "
        "vocab 152064 = 3.5 GiB = 41.6 GiB (173% of one L4, 24.0 GiB)",
    )]
    fix = findings(example(edits=qwen14b_on_l4), "MEM002")[0].fix
    assert fix.startswith(f"Offload the policy (settings.{CPU_OFFLOAD}: true), train LoRA")


def test_a_full_length_micro_batch_that_overflows_warns_with_the_length_that_fails() -> None:
    """Qwen2.5-14B on 8 x A100-40GB: 34.3 GiB are fixed; 2 sequences of 3072 tokens do not
    fit, 2 of 2386 on average do (SkyRL removes the padding): a warning, not an error."""
    [(code, severity, message)] = mem_findings(example(edits=qwen14b_on_a100_40))
    assert (code, severity) == ("MEM002", "warning")
    assert message.startswith(
        "The policy's training step fails with out-of-memory once a micro batch's 2 sequences "
        "average more than 2386 tokens (4772 tokens on this GPU; SkyRL removes a micro batch's "
        "padding, trainer.remove_microbatch_padding): the worst case, every sequence at 3072 "
        "tokens, is weights + grads + Adam")
    assert message.endswith(
        "= 41.6 GiB (104% of one A100-40GB, 40.0 GiB); shorter sequences fit (34.3 GiB fixed "
        "+ 1273856 B per token)")
    padded = example(edits=qwen14b_on_a100_40)
    padded["settings"] = {"trainer.remove_microbatch_padding": False}
    assert messages(padded, "MEM002")[0].startswith(
        "The policy's training step fails with out-of-memory once a micro batch's longest "
        "sequence exceeds 2386 tokens (SkyRL pads a micro batch to its longest sequence, "
        "trainer.remove_microbatch_padding: false): the worst case")


def test_the_same_plan_fits_with_the_policy_offloaded_or_with_lora() -> None:
    offloaded = example(edits=with_settings(**{"trainer__policy__fsdp_config__cpu_offload": True}))
    assert mem_findings(offloaded) == []
    assert estimates(offloaded)["policy training"] == (
        "unsharded root + one layer (1.56e9 + 0.28e9 params) x 4 B = 6.8 GiB + activations "
        "(gradient checkpointing) (48 layers x 2 B + one layer 34 B) x micro 2 x 3072 tokens x "
        "hidden 5120 = 3.8 GiB + logits (bf16 + the divide's gradient) 4 B x micro 2 x 3072 "
        "tokens x vocab 152064 = 3.5 GiB = 14.1 GiB")
    lora = example(edits=with_settings(**{"trainer__policy__model__lora__rank": 32}))
    assert mem_findings(lora) == []
    assert estimates(lora)["policy training"] == (
        "frozen weights 14.77e9 params x 4 B / 8 shards = 6.9 GiB + LoRA rank 32 weights + "
        "grads + Adam 0.14e9 params x 16 B / 8 shards = 0.3 GiB + unsharded root + one layer "
        "(1.56e9 + 0.28e9 params) x 2 B = 3.4 GiB + activations (gradient checkpointing) (48 "
        "layers x 2 B + one layer 34 B) x micro 2 x 3072 tokens x hidden 5120 = 3.8 GiB + "
        "logits (bf16 + the divide's gradient) 4 B x micro 2 x 3072 tokens x vocab 152064 = "
        "3.5 GiB = 17.8 GiB")


def test_a_thin_kv_cache_is_a_warning_with_its_sum() -> None:
    def tp1_long(data: dict[str, Any]) -> None:
        with_settings(**{"trainer__policy__fsdp_config__cpu_offload": True})(data)
        data["role_plan"]["rollout"].update(num_engines=8, tensor_parallel_size=1)
        data["lengths"]["max_generate_length"] = 4096
    assert messages(example(edits=tp1_long), "MEM005") == [
        "The KV cache of a vLLM engine rank holds 4.8 sequences of 5120 tokens, fewer than the 8 "
        "samples of one prompt: generator.inference_engine.gpu_memory_utilization 0.8 x 40.0 GiB "
        "= 32.0 GiB - engine weights 14.77e9 params / TP 1 x 2 B = 27.5 GiB = 4.5 GiB of KV "
        "cache at 2 x 48 layers x 8 KV heads x head dim 128 x 2 B = 196608 B/token"
    ]
    assert findings(example(edits=tp1_long), "MEM005")[0].severity == "warning"


def test_an_unknown_accelerator_names_the_table_and_simulated_gpus_are_exempt() -> None:
    [message] = messages(example(edits={"execution.allocation.accelerator": "A100"}), "MEM001")
    assert message.startswith("execution.allocation.accelerator 'A100' is not in the "
                              "accelerator memory table (GiB per GPU: H100 80, ")
    assert "A100-40GB 40, A100-80GB 80" in message
    assert mem_findings(example(edits={"execution.allocation.accelerator": "sim"})) == []


def test_the_worked_megatron_and_disaggregated_plans_fit() -> None:
    assert mem_findings(example("megatron-moe-5x8")) == []
    assert mem_findings(example("disaggregated-8x8-tp8")) == []


def megatron_on_v100_32(**kwargs: Any) -> dict[str, Any]:
    """The worked Megatron plan (Qwen3-30B-A3B, TP 4 EP 8 over 4 x 8) on V100-32GB, its
    `optimizer_config_kwargs` as given (none: SkyRL's defaults)."""
    data = example("megatron-moe-5x8")
    data["execution"]["allocation"]["accelerator"] = "V100-32GB"
    data["settings"] = {MEGATRON_OPTIMIZER_KWARGS: kwargs} if kwargs else {}
    return data


ADAM_TERMS = "Adam state (0.38e9 / DP 8 + 3.63e9 / expert DP 4) x "


def test_megatrons_optimizer_offload_takes_the_offloaded_adam_state_off_the_gpu() -> None:
    # All of Adam's state on the GPU: weights, grads and the state alone overflow 32 GB.
    assert [f[:2] for f in mem_findings(megatron_on_v100_32())] == [
        ("MEM002", "error"), ("MEM003", "error")]
    assert f"{ADAM_TERMS}12 B = 10.7 GiB" in mem_findings(megatron_on_v100_32())[0][2]
    # Every parameter's moments on the CPU; the distributed optimizer's fp32 main shard stays.
    offloaded = megatron_on_v100_32(optimizer_cpu_offload=True, optimizer_offload_fraction=1.0)
    assert mem_findings(offloaded) == []
    adam = (f"{ADAM_TERMS}4 B (fp32 master 4 + Adam moments 8 x 0% on the GPU,"
            " optimizer_offload_fraction 1) = 3.6 GiB")
    sums = estimates(offloaded)
    assert adam in sums["policy training"] and sums["policy training"].endswith("= 27.2 GiB")
    assert adam in sums["policy forward"] and sums["policy forward"].endswith("= 27.0 GiB")
    # Half offloaded with the precision-aware optimizer, which takes its master params along.
    half = megatron_on_v100_32(optimizer_cpu_offload=True, optimizer_offload_fraction=0.5,
                               use_precision_aware_optimizer=True)
    assert mem_findings(half) == [(
        "MEM002", "warning",
        "The policy's training step leaves less than 10% of the GPU free (CUDA contexts, NCCL"
        " buffers and fragmentation are not in the sum): weights + grads (0.38e9 + 3.63e9 params"
        f" on this GPU) x 6 B = 22.4 GiB + {ADAM_TERMS}6 B ((fp32 master 4 + Adam moments 8) x"
        " 50% on the GPU, optimizer_offload_fraction 0.5, use_precision_aware_optimizer) ="
        " 5.3 GiB + activations (gradient checkpointing) (48 layers x 2 B + one layer 34 B) x"
        " micro 4 x 1536 tokens x hidden 2048 / TP 4 = 0.4 GiB + logits (bf16 + the divide's"
        " gradient) 4 B x micro 4 x 1536 tokens x vocab 151936 / TP 4 = 0.9 GiB = 29.0 GiB (91%"
        " of one V100-32GB, 32.0 GiB)")]


def test_the_precision_aware_optimizers_dtypes_shrink_the_adam_state_on_the_gpu() -> None:
    # fp32 state overflows 32 GB (above); bf16 moments and an fp16 master copy fit it.
    lean = megatron_on_v100_32(use_precision_aware_optimizer=True, main_params_dtype="FP16",
                               exp_avg_dtype="bf16", exp_avg_sq_dtype=" bfloat16")
    assert [f[:2] for f in mem_findings(lean)] == [("MEM002", "warning")]
    assert (f"{ADAM_TERMS}6 B (fp16 master 2 + Adam moments bf16 2 + bf16 2,"
            " use_precision_aware_optimizer) = 5.3 GiB") in estimates(lean)["policy training"]
    # fp8 moments, half of them offloaded with their fp16 master copy.
    offloaded = megatron_on_v100_32(
        use_precision_aware_optimizer=True, main_params_dtype="fp16", exp_avg_dtype="fp8",
        exp_avg_sq_dtype="uint8", optimizer_cpu_offload=True, optimizer_offload_fraction=0.5)
    assert (f"{ADAM_TERMS}2 B ((fp16 master 2 + Adam moments fp8 1 + fp8 1) x 50% on the GPU,"
            " optimizer_offload_fraction 0.5, use_precision_aware_optimizer) = 1.8 GiB"
            ) in estimates(offloaded)["policy training"]
    # Without the precision-aware optimizer the state is fp32 whatever the dtypes say (SET017
    # refuses such a run); so is a dtype SkyRL refuses, or one a state may not take.
    for kwargs in ({"exp_avg_dtype": "bf16"},
                   {"use_precision_aware_optimizer": True, "exp_avg_dtype": "int4"},
                   {"use_precision_aware_optimizer": True, "main_params_dtype": "bf16"}):
        assert f"{ADAM_TERMS}12 B = 10.7 GiB" in estimates(
            megatron_on_v100_32(**kwargs))["policy training"], kwargs


def test_the_offload_fraction_counts_as_megatron_core_applies_it() -> None:
    assert optimizer_offload({"optimizer_cpu_offload": True, "optimizer_offload_fraction": 0.25}
                             ) == OptimizerOffload(0.25, False)
    assert optimizer_offload({"optimizer_cpu_offload": True, "optimizer_offload_fraction": 1,
                              "use_precision_aware_optimizer": True}) == OptimizerOffload(1.0, True)
    # HybridDeviceOptimizer offloads while the count so far is below fraction x the count.
    assert optimizer_offload({"optimizer_cpu_offload": True, "optimizer_offload_fraction": 3}
                             ) == OptimizerOffload(1.0, False)
    for kwargs in (
        None, "offload", {}, {"optimizer_offload_fraction": 1.0},  # SkyRL's default: no offload
        {"optimizer_cpu_offload": False, "optimizer_offload_fraction": 1.0},
        {"optimizer_cpu_offload": True},  # SkyRL fills in fraction 0.0
        {"optimizer_cpu_offload": True, "optimizer_offload_fraction": -0.5},
        {"optimizer_cpu_offload": True, "optimizer_offload_fraction": "1.0"},
        {"optimizer_cpu_offload": True, "optimizer_offload_fraction": float("nan")},
    ):
        assert optimizer_offload(kwargs) == NO_OFFLOAD, kwargs
    assert NO_OFFLOAD.bytes == 12
    assert OptimizerOffload(0.5, False).bytes == 8 and OptimizerOffload(0.5, True).bytes == 6
    assert optimizer_offload({"use_precision_aware_optimizer": True, "exp_avg_dtype": "half",
                              "main_grads_dtype": "bf16"}
                             ) == OptimizerOffload(0.0, True, "fp32", ("fp16", "fp32"))
    assert OptimizerOffload(0.0, True, "fp16", ("bf16", "fp8")).bytes == 5


def test_weights_grads_and_adam_are_the_zero_papers_16_bytes_per_parameter() -> None:
    """ZeRO (Rajbhandari et al. 2020), section 3.1 / figure 1: mixed-precision Adam keeps
    2 + 2 + 12 = 16 bytes per parameter, 120 GB for a 7.5e9-parameter model; sharded over
    64 data-parallel GPUs (ZeRO stage 3, i.e. FSDP full sharding) 1.9 GB each."""
    facts = ModelFacts(
        num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=2048,
        num_experts=None, num_hidden_layers=32, hidden_size=4096, intermediate_size=11008,
        vocab_size=32000, head_dim=None, torch_dtype="bfloat16", num_parameters=7_500_000_000)
    one = policy_training(facts, fsdp_over(1), Activations(1, 1, 1, 1),
                          checkpointing=True, offload=False, lora_rank=0)
    assert one.terms[0].bytes == 120e9
    sharded = policy_training(facts, fsdp_over(64), Activations(1, 1, 1, 1),
                              checkpointing=True, offload=False, lora_rank=0)
    assert round(sharded.terms[0].bytes / 1e9, 1) == 1.9


def test_kv_cache_per_token_is_the_vllm_papers_800_kb_for_opt_13b() -> None:
    """vLLM (Kwon et al. 2023), section 3: "the KV cache of a single token demands 800 KB of
    space, calculated as 2 (key and value vectors) x 5120 (hidden state size) x 40 (number of
    layers) x 2 (bytes per FP16)" for OPT-13B (40 heads of 128, no GQA)."""
    opt13b = ModelFacts(
        num_attention_heads=40, num_key_value_heads=40, max_position_embeddings=2048,
        num_experts=None, num_hidden_layers=40, hidden_size=5120, intermediate_size=20480,
        vocab_size=50272, head_dim=None, torch_dtype="float16", num_parameters=12_853_478_400)
    per_token, formula = kv_bytes_per_token(opt13b, EngineShape(1, 1, 1, 1), 2)
    assert per_token == 2 * 5120 * 40 * 2 == 819_200
    assert formula == "2 x 40 layers x 40 KV heads x head dim 128 x 2 B = 819200 B/token"
    # Over TP 4 each rank keeps 10 of the 40 KV heads: a quarter.
    assert kv_bytes_per_token(opt13b, EngineShape(4, 1, 1, 1), 2)[0] == 819_200 // 4


def test_a_critic_is_costed_without_logits_and_refused_when_it_cannot_fit() -> None:
    """A GAE run on 8 x L4: the 1.5B policy fits; a 14B critic (SkyRL's
    `get_llm_for_sequence_regression`: no LM head, a value head) does not, whatever the
    lengths."""
    def critic_14b(data: dict[str, Any]) -> None:
        _with_critic(True)(data)
        data["critic_model"] = dict(QWEN25_14B, name="qwen2.5-14b-critic")
        data["execution"]["allocation"]["accelerator"] = "L4"
    data = example(edits=critic_14b)
    assert estimates(data)["critic training"] == (
        "weights + grads + Adam 13.99e9 params x 16 B / 8 shards = 26.1 GiB + unsharded root + "
        "one layer (0.78e9 + 0.28e9 params) x 4 B = 3.9 GiB + activations (gradient "
        "checkpointing) (48 layers x 2 B + one layer 34 B) x micro 4 x 1536 tokens x hidden "
        "5120 = 3.8 GiB = 33.8 GiB")
    [(code, severity, message)] = [f for f in mem_findings(data) if f[1] == "error"]
    assert (code, severity) == ("MEM002", "error")
    assert message.startswith(
        "The critic's training step does not fit on one GPU even at the shortest micro batch "
        "the spec allows (4 sequences of 2 tokens): weights + grads + Adam 13.99e9 params x 16 "
        "B / 8 shards = 26.1 GiB + unsharded root + one layer (0.78e9 + 0.28e9 params) x 4 B = "
        "3.9 GiB = 30.0 GiB before any activation")
    assert findings(data, "MEM002")[-1].fix.startswith(
        "Offload the critic (settings.trainer.critic.fsdp_config.cpu_offload: true)")
    assert estimates(example(edits=_with_critic(True)))["critic forward"] == (
        "weights 1.54e9 params x 4 B / 8 shards = 0.7 GiB + unsharded root + one layer (0.23e9 "
        "+ 0.05e9 params) x 2 B = 0.5 GiB + activations (forward, one layer) 34 B x micro 8 x "
        "1536 tokens x hidden 1536 = 0.6 GiB = 1.8 GiB")


def test_a_forward_micro_batch_that_cannot_fit_is_refused_though_training_fits() -> None:
    """Qwen2.5-1.5B on 8 x L4: the training micro batch of 4 fits; a forward micro batch of
    40000 sequences (all a GPU holds of a 40000-prompt mini batch x 8 samples over 8 GPUs)
    overflows even with every sequence 2 tokens long."""
    def wide_forward(data: dict[str, Any]) -> None:
        data["execution"]["allocation"]["accelerator"] = "L4"
        data["role_plan"]["batch"].update(train_batch_size=40000, policy_mini_batch_size=40000,
                                          micro_forward_batch_size_per_gpu=40000)
    found = [f for f in mem_findings(example(edits=wide_forward)) if f[0] != "MEM005"]
    assert [(code, severity) for code, severity, _ in found] == [
        ("MEM003", "error"), ("MEM003", "error")]
    assert found[0][2].startswith(
        "The policy's forward pass (old log-probs) does not fit on one GPU even at the shortest "
        "micro batch the spec allows (40000 sequences of 2 tokens): weights 1.54e9 params x 4 B "
        "/ 8 shards = 0.7 GiB + unsharded root + one layer (0.23e9 + 0.05e9 params) x 2 B = 0.5 "
        "GiB = 1.2 GiB before any activation, and 27.8 GiB with them;")
    assert found[1][2].startswith("The reference's forward pass does not fit on one GPU even")
    assert estimates(example(edits=wide_forward))["policy training"].endswith("= 8.2 GiB")
