"""GPU memory per phase of a run, as sums of named terms (the formulas of docs/memory.md).

Each estimate is the peak of one phase on one GPU, in bytes, with every term's formula in
numbers, so a finding can show the whole sum. The phases follow what SkyRL 0.3.0 holds on a GPU
at once (docs/memory.md cites the source): trainers that share GPUs take turns (WorkerDispatch
offloads the others of a colocation group), and under `colocate_all` the vLLM engines sleep while
a trainer works and the trainers are offloaded while the engines generate.

The estimates are pure functions of frozen values (facts, shapes, flags); the memory rules keep
each phase's estimate per distinct inputs (rlaunch.preflight.rules.memory). A term's formula is
written when it is shown (`Term.formula`): most estimates fit, and no message reads theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from rlaunch.memo import per_object
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
# Megatron LoRA: the base is frozen in bf16, and Megatron's DDP gives grad buffers only to
# parameters that require grad (the adapters), so a base parameter costs its 2 bytes.
MEGATRON_FROZEN = 2
FSDP_ADAM = 8  # Adam's two fp32 moments, resident on the GPU between steps when not offloaded
# Activation bytes per token per hidden unit of one transformer layer (Korthikanti et al. 2022,
# "Reducing Activation Recomputation in Large Transformer Models": 34 s b h with flash attention,
# i.e. without the 5 a s / h term of materialized attention scores).
LAYER_ACTIVATION = 34
CHECKPOINT_INPUT = 2  # gradient checkpointing keeps each layer's bf16 input
# Logits, bytes per token per vocabulary entry. The LM head computes in bf16 (FSDP2's
# MixedPrecisionPolicy(param_dtype=bf16), skyrl/backends/skyrl_train/distributed/
# fsdp_strategy.py; transformers 5's Qwen2ForCausalLM.forward does not upcast them);
# `HFModelWrapper.forward` (skyrl/backends/skyrl_train/workers/model_wrapper.py) divides them by
# the temperature in place (`logits_BSV.div_(temperature)`) and takes log-probs with
# `logprobs_from_logits(..., inplace_backward=True)` (skyrl/backends/skyrl_train/utils/
# torch_utils.py): flash-attn's cross entropy keeps one fp32 value per token and writes its
# gradient into the logits' own buffer. A forward-only pass holds the one bf16 tensor: 2 B.
# A training step's backward holds two: the in-place divide is recorded by autograd, and its
# backward (grad / temperature) allocates a new bf16 gradient while the cross entropy's
# in-place one still holds the logits' buffer: 4 B at the backward's peak. Measured on CPU by
# benchmarks/memory_terms.py (2.04 B above the logits with the divide, 0.82 B without).
LOGITS_FORWARD = 2
LOGITS_TRAINING = 4
# The fewest tokens a sequence can have: one prompt token and one generated token. With SkyRL's
# padding removal (`trainer.remove_microbatch_padding`, default true) a micro batch costs the
# tokens it holds; without it, its longest sequence times its size. Either way the spec allows
# a micro batch of sequences this short, so only what does not fit at this length is certain.
SHORTEST_SEQUENCE = 2


def accelerator_memory(accelerator: str) -> float | None:
    """GiB of one GPU of `accelerator` (case-insensitive), None when the table lacks it."""
    return ACCELERATOR_MEMORY_GIB.get(accelerator.strip().upper())


class Term(NamedTuple):
    """One term of an estimate: its bytes, and its formula in numbers (`formula`)."""

    name: str
    bytes: float
    written: str | Callable[[], str]
    """The formula, or a function writing it when it is shown (most estimates fit, and then no
    message reads their formulas: writing them would cost more than the sums)."""
    tokens: int = 0
    """The micro batch's tokens on this GPU when the term grows with them (activations and
    logits: bytes = tokens x a constant), 0 for a fixed term (weights, gradients, optimizer)."""

    @property
    def formula(self) -> str:
        written = self.written
        return written if type(written) is str else written()

    def text(self) -> str:
        return f"{self.name} {self.formula} = {gib(self.bytes)}"


class Estimate:
    """The peak of one phase on one GPU: its terms and their sum (the sums are taken once, when
    it is made: a verdict reads them several times). Read-only by convention (a plain class:
    made for a third of the phases of fresh plans, where a frozen dataclass costs a setattr per
    field)."""

    __slots__ = ("phase", "terms", "total", "fixed", "tokens", "growing")

    def __init__(self, phase: str, terms: tuple[Term, ...]) -> None:
        self.phase = phase
        self.terms = terms
        total = fixed = growing = tokens = 0
        for term in terms:  # each sum in the terms' order
            total += term.bytes
            if term.tokens:
                growing += term.bytes
                tokens = max(tokens, term.tokens)
            else:
                fixed += term.bytes
        self.total: float = total
        """Every term's bytes."""
        self.fixed: float = fixed
        """What the phase holds whatever its micro batch: weights, gradients, optimizer state."""
        self.tokens: int = tokens
        """The micro batch's tokens on this GPU at full length (0: no term grows with them)."""
        self.growing: float = growing
        """The bytes of the terms that grow with the micro batch's tokens."""

    def __repr__(self) -> str:
        return f"Estimate({self.phase!r}, {self.terms!r})"

    def sum_text(self) -> str:
        return " + ".join(term.text() for term in self.terms) + f" = {gib(self.total)}"

    def per_token(self) -> float:
        """Bytes per token of the micro batch (the growing terms are linear in the tokens)."""
        return self.growing / self.tokens if self.tokens else 0.0

    def at(self, tokens: float) -> float:
        """The phase's peak with `tokens` tokens of micro batch on this GPU."""
        return self.fixed + self.per_token() * tokens

    def tokens_that_fit(self, memory: float) -> int:
        """The most micro-batch tokens on this GPU that fit in `memory` bytes."""
        per = self.per_token()
        return int((memory - self.fixed) // per) if per else 0


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


@per_object
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


@per_object
def layer_parameters(facts: ModelFacts) -> int:
    """One decoder layer (every expert of an MoE layer): the total less the embeddings, over
    the layers."""
    embeddings = embedding_parameters(facts, is_tied(facts))
    return max((facts.num_parameters - embeddings) // facts.num_hidden_layers, 0)


@per_object
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


class Activations(NamedTuple):
    """The tokens one GPU computes on: micro batch x sequence, split by SP or TP x CP. A named
    tuple: a memo key as it is (the memory rules make two per plan)."""

    micro_batch: int
    sequence: int
    split: int
    """Ulysses SP (FSDP) or CP (Megatron): divides the sequence."""
    tensor: int
    """Megatron TP with sequence parallelism: divides activations and the vocabulary."""
    token_cap: int = 0
    """`trainer.max_tokens_per_microbatch` when > 0: SkyRL packs micro batches by tokens
    (`TokenBasedBatchIterator`, skyrl/backends/skyrl_train/workers/worker_utils.py) and
    ignores the sample count; a sequence longer than the cap is a micro batch of its own, so a
    micro batch holds at most max(cap, sequence) tokens."""

    @property
    def tokens(self) -> int:
        """The most tokens a micro batch puts on this GPU."""
        whole = max(self.token_cap, self.sequence) if self.token_cap > 0 else (
            self.micro_batch * self.sequence)
        return whole // self.split

    def text(self) -> str:
        """The micro batch in words, for a term's formula."""
        split = f" / {self.split}" if self.split > 1 else ""
        if self.token_cap > 0:
            return (f"micro batch max(max_tokens_per_microbatch {self.token_cap}, "
                    f"{self.sequence}) tokens{split}")
        return f"micro {self.micro_batch} x {self.sequence} tokens{split}"


@lru_cache(maxsize=1024, typed=True)
def activation_terms(facts: ModelFacts, shape: Activations, checkpointing: bool,
                     backward: bool, logits: bool = True) -> tuple[Term, ...]:
    """Activations of a training micro batch (with or without gradient checkpointing) or of a
    forward-only pass (one layer at a time), and the logits (none for a critic: its value head
    gives one number per token)."""
    tokens = shape.tokens
    hidden, layers = facts.hidden_size, facts.num_hidden_layers
    layer = LAYER_ACTIVATION * tokens * hidden / shape.tensor

    def per_tp() -> str:
        return f" / TP {shape.tensor}" if shape.tensor > 1 else ""

    if not backward:
        activations = Term(
            "activations (forward, one layer)", layer,
            lambda: f"{LAYER_ACTIVATION} B x {shape.text()} x hidden {hidden}{per_tp()}", tokens)
    elif checkpointing:
        kept = CHECKPOINT_INPUT * layers * tokens * hidden / shape.tensor
        activations = Term(
            "activations (gradient checkpointing)", kept + layer,
            lambda: f"({layers} layers x {CHECKPOINT_INPUT} B + one layer {LAYER_ACTIVATION} B)"
                    f" x {shape.text()} x hidden {hidden}{per_tp()}", tokens)
    else:
        activations = Term(
            "activations (no checkpointing)", layers * layer,
            lambda: f"{layers} layers x {LAYER_ACTIVATION} B x {shape.text()} x hidden {hidden}"
                    f"{per_tp()}", tokens)
    if not logits:
        return (activations,)
    size = LOGITS_TRAINING if backward else LOGITS_FORWARD
    vocab = facts.vocab_size
    return (activations, Term(
        "logits (bf16 + the divide's gradient)" if backward else "logits (bf16)",
        size * tokens * vocab / shape.tensor,
        lambda: f"{size} B x {shape.text()} x vocab {vocab}{per_tp()}", tokens))


@lru_cache(maxsize=256, typed=True)
def fsdp_unsharded_terms(facts: ModelFacts, bytes_per_param: int) -> tuple[Term, ...]:
    """What FSDP2 all-gathers while computing: the root unit (embeddings and LM head, which
    SkyRL leaves outside the per-layer units; the root stays unsharded through forward and
    backward) and one decoder layer."""
    root = embedding_parameters(facts, is_tied(facts))
    layer = layer_parameters(facts)
    return (Term("unsharded root + one layer",
                  (root + layer) * bytes_per_param,
                  lambda: f"({billions(root)} + {billions(layer)} params) x {bytes_per_param} B"),)


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


def critic_facts(facts: ModelFacts) -> ModelFacts:
    """The critic's model: SkyRL's `get_llm_for_sequence_regression`
    (skyrl/backends/skyrl_train/workers/model_wrapper.py) loads the base model without its LM
    head and adds a value head of hidden x 1, so an untied LM head's vocab x hidden parameters
    are not there (a tied one is the input embedding, which stays)."""
    if is_tied(facts):
        return facts
    return facts.model_copy(update={
        "num_parameters": facts.num_parameters - facts.vocab_size * facts.hidden_size})


def policy_training(facts: ModelFacts, shape: Parallelism, activations: Activations, *,
                    checkpointing: bool, offload: bool, lora_rank: int,
                    role: str = "policy") -> Estimate:
    """A trainer's forward and backward of one micro batch, with its optimizer state: the
    policy's, or (`role` "critic", facts from `critic_facts`) the critic's, which has no
    logits."""
    params = facts.num_parameters
    terms: list[Term] = []
    if shape.strategy == "megatron" and lora_rank > 0:
        dense, expert = local_parameters(facts, shape)
        terms.append(Term("frozen weights", (dense + expert) * MEGATRON_FROZEN,
                          lambda: f"({billions(dense)} + {billions(expert)} params on this GPU)"
                                  f" x {MEGATRON_FROZEN} B"))
        adapters = lora_parameters(facts, lora_rank)
        ranks = shape.tensor * shape.pipeline
        terms.append(Term(
            f"LoRA rank {lora_rank} weights + grads + Adam",
            adapters * (MEGATRON_LOCAL / ranks + MEGATRON_OPTIMIZER / shape.world),
            lambda: f"{billions(adapters)} params x ({MEGATRON_LOCAL} B / TP x PP {ranks} + "
                    f"{MEGATRON_OPTIMIZER} B / {shape.world})"))
    elif shape.strategy == "megatron":
        dense, expert = local_parameters(facts, shape)
        dp_dense, dp_expert = optimizer_shards(shape)
        terms.append(Term("weights + grads", (dense + expert) * MEGATRON_LOCAL,
                          lambda: f"({billions(dense)} + {billions(expert)} params on this GPU)"
                                  f" x {MEGATRON_LOCAL} B"))
        terms.append(Term("Adam state", (dense / dp_dense + expert / dp_expert)
                          * MEGATRON_OPTIMIZER,
                          lambda: f"({billions(dense)} / DP {dp_dense} + {billions(expert)} /"
                                  f" expert DP {dp_expert}) x {MEGATRON_OPTIMIZER} B"))
    elif lora_rank > 0:
        adapters = lora_parameters(facts, lora_rank)
        if not offload:
            terms.append(Term("frozen weights", params * FSDP_FROZEN_PARAM / shape.world,
                              lambda: f"{billions(params)} params x {FSDP_FROZEN_PARAM} B / "
                                      f"{shape.world} shards"))
        terms.append(Term(f"LoRA rank {lora_rank} weights + grads + Adam",
                          adapters * FSDP_TRAIN_STATE / shape.world,
                          lambda: f"{billions(adapters)} params x {FSDP_TRAIN_STATE} B / "
                                  f"{shape.world} shards"))
        terms += fsdp_unsharded_terms(facts, UNSHARDED_FORWARD)
    else:
        if not offload:
            terms.append(Term("weights + grads + Adam", params * FSDP_TRAIN_STATE / shape.world,
                              lambda: f"{billions(params)} params x {FSDP_TRAIN_STATE} B / "
                                      f"{shape.world} shards"))
        terms += fsdp_unsharded_terms(facts, UNSHARDED_TRAIN)
    terms += activation_terms(facts, activations, checkpointing, backward=True,
                              logits=role == "policy")
    return Estimate(f"{role} training", tuple(terms))


def policy_forward(facts: ModelFacts, shape: Parallelism, activations: Activations, *,
                   offload: bool, optimizer_resident: bool, lora_rank: int,
                   role: str = "policy") -> Estimate:
    """The policy's forward-only pass for the old log-probs (`micro_forward_batch_size_per_gpu`).
    `WorkerDispatch.forward` (skyrl/backends/skyrl_train/workers/worker_dispatch.py) puts the
    model on the GPU without its optimizer (`_ensure_on_gpu(need_optimizer=False)`); the
    optimizer state is there anyway when nothing offloads it (`optimizer_resident`: no
    `colocate_all`, no CPU offload)."""
    params = facts.num_parameters
    terms: list[Term] = []
    if shape.strategy == "megatron":
        dense, expert = local_parameters(facts, shape)
        per = MEGATRON_FROZEN if lora_rank > 0 else MEGATRON_LOCAL
        terms.append(Term("weights" if lora_rank > 0 else "weights + grad buffers",
                          (dense + expert) * per,
                          lambda: f"({billions(dense)} + {billions(expert)} params on this GPU)"
                                  f" x {per} B"))
        if optimizer_resident and lora_rank == 0:
            dp_dense, dp_expert = optimizer_shards(shape)
            terms.append(Term("Adam state", (dense / dp_dense + expert / dp_expert)
                              * MEGATRON_OPTIMIZER,
                              lambda: f"({billions(dense)} / DP {dp_dense} + {billions(expert)}"
                                      f" / expert DP {dp_expert}) x {MEGATRON_OPTIMIZER} B"))
    elif not offload:
        terms.append(Term("weights", params * FSDP_FROZEN_PARAM / shape.world,
                          lambda: f"{billions(params)} params x {FSDP_FROZEN_PARAM} B / "
                                  f"{shape.world} shards"))
        if optimizer_resident and lora_rank == 0:
            terms.append(Term("Adam state", params * FSDP_ADAM / shape.world,
                              lambda: f"{billions(params)} params x {FSDP_ADAM} B / "
                                      f"{shape.world} shards"))
    if shape.strategy != "megatron":
        terms += fsdp_unsharded_terms(facts, UNSHARDED_FORWARD)
    terms += activation_terms(facts, activations, checkpointing=True, backward=False,
                              logits=role == "policy")
    return Estimate(f"{role} forward", tuple(terms))


def reference_forward(facts: ModelFacts, shape: Parallelism, activations: Activations, *,
                      weight_bytes: int, offload: bool) -> Estimate:
    """The reference's forward of one micro batch (log-probs of the sampled tokens)."""
    terms: list[Term] = []
    if shape.strategy == "megatron":
        dense, expert = local_parameters(facts, shape)
        terms.append(Term("weights", (dense + expert) * weight_bytes,
                          lambda: f"({billions(dense)} + {billions(expert)} params on this GPU)"
                                  f" x {weight_bytes} B"))
    else:
        params = facts.num_parameters
        if not offload:
            terms.append(Term("weights", params * weight_bytes / shape.world,
                              lambda: f"{billions(params)} params x {weight_bytes} B /"
                                      f" {shape.world} shards"))
        terms += fsdp_unsharded_terms(facts, UNSHARDED_FORWARD)
    terms += activation_terms(facts, activations, checkpointing=True, backward=False)
    return Estimate("reference forward", tuple(terms))


class EngineShape(NamedTuple):
    """One vLLM engine's sizes: TP, PP, DP and EP."""

    tensor: int
    pipeline: int
    data: int
    expert: int


@lru_cache(maxsize=1024, typed=True)
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


@lru_cache(maxsize=1024, typed=True)
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
