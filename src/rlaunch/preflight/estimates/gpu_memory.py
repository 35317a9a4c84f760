"""GPU memory per phase of a run, as sums of named terms (the formulas of docs/memory.md).

Each estimate is the peak of one phase on one GPU, in bytes, with every term's formula in
numbers, so a finding can show the whole sum. The phases follow what SkyRL 0.3.0 holds on a GPU
at once (docs/memory.md cites the source): trainers that share GPUs take turns (WorkerDispatch
offloads the others of a colocation group), and under `colocate_all` the vLLM engines sleep while
a trainer works and the trainers are offloaded while the engines generate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from rlaunch.spec.artifacts import ModelFacts
from rlaunch.spec.parallelism import Parallelism

GIB = 2**30

# Memory of one GPU, GiB, as the vendor states it ("80 GB" HBM3 is 80 GiB). `sim`, the local
# executor's simulated GPUs, has none: the memory rules do not apply to it.
ACCELERATOR_MEMORY_GIB: Mapping[str, float] = MappingProxyType({
    "H100": 80, "H100-80GB": 80, "H100-SXM": 80, "H100-PCIE": 80, "H100-NVL": 94,
    "H200": 141, "H20": 96, "GH200": 96,
    "B200": 180, "GB200": 186, "B300": 288,
    "A100-40GB": 40, "A100-80GB": 80,
    "L4": 24, "A10G": 24, "A10": 24, "L40S": 48, "L40": 48,
    "V100-16GB": 16, "V100-32GB": 32, "T4": 16,
    "MI300X": 192, "MI325X": 256,
})
SIMULATED = "SIM"

DTYPE_BYTES: Mapping[str, int] = MappingProxyType({
    "bfloat16": 2, "float16": 2, "float32": 4, "bf16": 2, "fp16": 2, "fp32": 4, "auto": 2,
})

# Bytes per parameter (the ZeRO paper's mixed-precision Adam: 2 + 2 + 12 = 16).
FSDP_TRAIN_STATE = 16  # fp32 sharded params 4 + fp32 grads 4 + Adam moments 8
FSDP_FROZEN_PARAM = 4  # a frozen (LoRA base) parameter: fp32, no gradient, no optimizer state
UNSHARDED_TRAIN = 4  # an all-gathered unit while it computes: bf16 params 2 + bf16 grads 2
UNSHARDED_FORWARD = 2  # an all-gathered unit in a forward-only pass: bf16 params
MEGATRON_LOCAL = 6  # bf16 params 2 + fp32 main grads 4 (grad_reduce_in_fp32)
MEGATRON_OPTIMIZER = 12  # fp32 master params 4 + Adam moments 8, over DP (distributed optimizer)
# Activation bytes per token per hidden unit of one transformer layer (Korthikanti et al. 2022,
# "Reducing Activation Recomputation in Large Transformer Models": 34 s b h with flash attention,
# i.e. without the 5 a s / h term of materialized attention scores).
LAYER_ACTIVATION = 34
CHECKPOINT_INPUT = 2  # gradient checkpointing keeps each layer's bf16 input
# bf16 logits 2 + one bf16 working copy 2: SkyRL divides them by the temperature in place and
# takes log-probs with flash-attn's cross entropy, whose backward is in place
# (skyrl/backends/skyrl_train/workers/model_wrapper.py, `logprobs_from_logits`).
LOGITS = 4


def accelerator_memory(accelerator: str) -> float | None:
    """GiB of one GPU of `accelerator` (case-insensitive), None when the table lacks it."""
    return ACCELERATOR_MEMORY_GIB.get(accelerator.strip().upper())


@dataclass(frozen=True)
class Term:
    name: str
    bytes: float
    formula: str

    def text(self) -> str:
        return f"{self.name} {self.formula} = {gib(self.bytes)}"


@dataclass(frozen=True)
class Estimate:
    """The peak of one phase on one GPU: its terms and their sum."""

    phase: str
    terms: tuple[Term, ...]

    @property
    def total(self) -> float:
        return sum(term.bytes for term in self.terms)

    def sum_text(self) -> str:
        return " + ".join(term.text() for term in self.terms) + f" = {gib(self.total)}"


def gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


def billions(count: float) -> str:
    return f"{count / 1e9:.2f}e9"


def embedding_parameters(facts: ModelFacts, tied: bool) -> int:
    """The embedding and LM head: vocab x hidden, once when tied, else twice."""
    return facts.vocab_size * facts.hidden_size * (1 if tied else 2)


def attention_parameters(facts: ModelFacts) -> int:
    """One layer's attention projections: q and o of heads x head_dim, k and v of KV heads."""
    head = facts.attention_head_dim
    return facts.hidden_size * head * 2 * (facts.num_attention_heads + facts.num_key_value_heads)


def is_tied(facts: ModelFacts) -> bool:
    """Whether the LM head is the embedding (config.json's `tie_word_embeddings` is not a fact):
    the parameter count is nearer layers + one embedding than layers + two, the layers counted as
    attention + a gated MLP (3 x hidden x intermediate). An MoE model counts as untied."""
    if facts.num_experts is not None:
        return False
    layers = facts.num_hidden_layers * (
        attention_parameters(facts) + 3 * facts.hidden_size * facts.intermediate_size)
    once = facts.vocab_size * facts.hidden_size
    rest = facts.num_parameters - layers
    return abs(rest - once) < abs(rest - 2 * once)


def layer_parameters(facts: ModelFacts) -> int:
    """One decoder layer (every expert of an MoE layer): the total less the embeddings, over
    the layers."""
    embeddings = embedding_parameters(facts, is_tied(facts))
    return max((facts.num_parameters - embeddings) // facts.num_hidden_layers, 0)


def expert_parameters(facts: ModelFacts) -> int:
    """The routed experts' share of an MoE model: all but the embeddings and attention (an
    estimate: router and norms count as expert weights); 0 for a dense model."""
    if facts.num_experts is None:
        return 0
    dense = embedding_parameters(facts, is_tied(facts)) + (
        attention_parameters(facts) * facts.num_hidden_layers)
    return max(facts.num_parameters - dense, 0)


def lora_parameters(facts: ModelFacts, rank: int) -> int:
    """LoRA adapters on every linear layer (SkyRL's `target_modules: all-linear`): rank x (in +
    out) for q, k, v, o and the three MLP projections of each layer."""
    hidden, head = facts.hidden_size, facts.attention_head_dim
    q, kv = facts.num_attention_heads * head, facts.num_key_value_heads * head
    per_layer = (hidden + q) * 2 + (hidden + kv) * 2 + 3 * (hidden + facts.intermediate_size)
    return rank * per_layer * facts.num_hidden_layers


@dataclass(frozen=True)
class Activations:
    """The tokens one GPU computes on: micro batch x sequence, split by SP or TP x CP."""

    micro_batch: int
    sequence: int
    split: int
    """Ulysses SP (FSDP) or CP (Megatron): divides the sequence."""
    tensor: int
    """Megatron TP with sequence parallelism: divides activations and the vocabulary."""


def activation_terms(facts: ModelFacts, shape: Activations, checkpointing: bool,
                     backward: bool) -> list[Term]:
    """Activations of a training micro batch (with or without gradient checkpointing) or of a
    forward-only pass (one layer at a time), and the logits."""
    tokens = shape.micro_batch * shape.sequence // shape.split
    hidden, layers = facts.hidden_size, facts.num_hidden_layers
    where = f"micro {shape.micro_batch} x {shape.sequence} tokens" + (
        f" / {shape.split}" if shape.split > 1 else "")
    per_tp = f" / TP {shape.tensor}" if shape.tensor > 1 else ""
    layer = LAYER_ACTIVATION * tokens * hidden / shape.tensor
    terms = []
    if not backward:
        terms.append(Term("activations (forward, one layer)",
                          layer, f"{LAYER_ACTIVATION} B x {where} x hidden {hidden}{per_tp}"))
    elif checkpointing:
        kept = CHECKPOINT_INPUT * layers * tokens * hidden / shape.tensor
        terms.append(Term(
            "activations (gradient checkpointing)", kept + layer,
            f"({layers} layers x {CHECKPOINT_INPUT} B + one layer {LAYER_ACTIVATION} B) x "
            f"{where} x hidden {hidden}{per_tp}"))
    else:
        terms.append(Term(
            "activations (no checkpointing)", layers * layer,
            f"{layers} layers x {LAYER_ACTIVATION} B x {where} x hidden {hidden}{per_tp}"))
    terms.append(Term("logits", LOGITS * tokens * facts.vocab_size / shape.tensor,
                      f"{LOGITS} B x {where} x vocab {facts.vocab_size}{per_tp}"))
    return terms


def fsdp_unsharded_terms(facts: ModelFacts, bytes_per_param: int) -> list[Term]:
    """What FSDP2 all-gathers while computing: the root unit (embeddings and LM head, which
    SkyRL leaves outside the per-layer units; the root stays unsharded through forward and
    backward) and one decoder layer."""
    root = embedding_parameters(facts, is_tied(facts))
    layer = layer_parameters(facts)
    return [Term("unsharded root + one layer",
                 (root + layer) * bytes_per_param,
                 f"({billions(root)} + {billions(layer)} params) x {bytes_per_param} B")]


def local_parameters(facts: ModelFacts, layout: Parallelism) -> tuple[float, float]:
    """Megatron: (dense, expert) parameters on one GPU."""
    experts = expert_parameters(facts)
    dense = (facts.num_parameters - experts) / (layout.tensor * layout.pipeline)
    return dense, experts / layout.expert_group


def optimizer_shards(layout: Parallelism) -> tuple[int, int]:
    """Megatron: (dense, expert) shards of the distributed optimizer: the DP and the expert DP.
    Floored and at least 1, so that a plan whose world does not divide (GEO003, GEO004) still
    gets an estimate."""
    return (max(layout.world // layout.model_parallel, 1),
            max(layout.world // layout.expert_group, 1))


def policy_training(facts: ModelFacts, shape: Parallelism, activations: Activations, *,
                    checkpointing: bool, offload: bool, lora_rank: int) -> Estimate:
    """The policy's forward and backward of one micro batch, with its optimizer state."""
    params = facts.num_parameters
    terms: list[Term] = []
    if shape.strategy == "megatron":
        dense, expert = local_parameters(facts, shape)
        dp_dense, dp_expert = optimizer_shards(shape)
        terms.append(Term("weights + grads", (dense + expert) * MEGATRON_LOCAL,
                          f"({billions(dense)} + {billions(expert)} params on this GPU) x "
                          f"{MEGATRON_LOCAL} B"))
        terms.append(Term("Adam state", (dense / dp_dense + expert / dp_expert)
                          * MEGATRON_OPTIMIZER,
                          f"({billions(dense)} / DP {dp_dense} + {billions(expert)} / expert DP "
                          f"{dp_expert}) x {MEGATRON_OPTIMIZER} B"))
    elif lora_rank > 0:
        adapters = lora_parameters(facts, lora_rank)
        if not offload:
            terms.append(Term("frozen weights", params * FSDP_FROZEN_PARAM / shape.world,
                              f"{billions(params)} params x {FSDP_FROZEN_PARAM} B / "
                              f"{shape.world} shards"))
        terms.append(Term(f"LoRA rank {lora_rank} weights + grads + Adam",
                          adapters * FSDP_TRAIN_STATE / shape.world,
                          f"{billions(adapters)} params x {FSDP_TRAIN_STATE} B / "
                          f"{shape.world} shards"))
        terms += fsdp_unsharded_terms(facts, UNSHARDED_FORWARD)
    else:
        if not offload:
            terms.append(Term("weights + grads + Adam", params * FSDP_TRAIN_STATE / shape.world,
                              f"{billions(params)} params x {FSDP_TRAIN_STATE} B / "
                              f"{shape.world} shards"))
        terms += fsdp_unsharded_terms(facts, UNSHARDED_TRAIN)
    terms += activation_terms(facts, activations, checkpointing, backward=True)
    return Estimate("policy training", tuple(terms))


def reference_forward(facts: ModelFacts, shape: Parallelism, activations: Activations, *,
                      weight_bytes: int, offload: bool) -> Estimate:
    """The reference's forward of one micro batch (log-probs of the sampled tokens)."""
    terms: list[Term] = []
    if shape.strategy == "megatron":
        dense, expert = local_parameters(facts, shape)
        terms.append(Term("weights", (dense + expert) * weight_bytes,
                          f"({billions(dense)} + {billions(expert)} params on this GPU) x "
                          f"{weight_bytes} B"))
    else:
        if not offload:
            terms.append(Term("weights", facts.num_parameters * weight_bytes / shape.world,
                              f"{billions(facts.num_parameters)} params x {weight_bytes} B / "
                              f"{shape.world} shards"))
        terms += fsdp_unsharded_terms(facts, UNSHARDED_FORWARD)
    terms += activation_terms(facts, activations, checkpointing=True, backward=False)
    return Estimate("reference forward", tuple(terms))


@dataclass(frozen=True)
class EngineShape:
    tensor: int
    pipeline: int
    data: int
    expert: int


def engine_weights(facts: ModelFacts, engine: EngineShape, weight_bytes: int) -> Term:
    """One vLLM rank's share of the weights: dense weights over TP (and PP), the routed experts
    over EP when EP > 1 (vLLM's expert parallelism spans DP x TP), else over TP."""
    experts = expert_parameters(facts)
    dense = facts.num_parameters - experts
    expert_split = engine.expert if engine.expert > 1 else engine.tensor
    local = (dense / engine.tensor + experts / expert_split) / engine.pipeline
    if experts:
        formula = (f"({billions(dense)} / TP {engine.tensor} + experts {billions(experts)} / "
                   f"{'EP' if engine.expert > 1 else 'TP'} {expert_split})")
    else:
        formula = f"{billions(dense)} params / TP {engine.tensor}"
    if engine.pipeline > 1:
        formula += f" / PP {engine.pipeline}"
    return Term("engine weights", local * weight_bytes, f"{formula} x {weight_bytes} B")


def kv_bytes_per_token(
    facts: ModelFacts, engine: EngineShape, kv_bytes: int
) -> tuple[int, str]:
    """vLLM's KV cache per token on one rank: 2 (K and V) x layers x KV heads x head dim x bytes,
    the KV heads split over TP (replicated, one per rank, when TP exceeds them), the layers over
    PP."""
    kv = facts.num_key_value_heads
    local = max(kv // engine.tensor, 1)
    layers = facts.num_hidden_layers // engine.pipeline
    heads = f"{kv} KV heads / TP {engine.tensor}" if engine.tensor > 1 else f"{kv} KV heads"
    value = 2 * layers * local * facts.attention_head_dim * kv_bytes
    return value, (f"2 x {layers} layers x {heads} x head dim {facts.attention_head_dim} x "
                   f"{kv_bytes} B = {value} B/token")
