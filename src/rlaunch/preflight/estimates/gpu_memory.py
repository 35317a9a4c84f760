"""GPU memory per phase of a run, as sums of named terms (the formulas of docs/memory.md).

Each estimate is the peak of one phase on one GPU, in bytes, with every term's formula in
numbers, so a finding can show the whole sum. The phases follow what SkyRL 0.3.0 holds on a GPU
at once (docs/memory.md cites the source): trainers that share GPUs take turns (WorkerDispatch
offloads the others of a colocation group), and under `colocate_all` the vLLM engines sleep while
a trainer works and the trainers are offloaded while the engines generate.

The estimates are pure functions of frozen values (facts, shapes, flags). An estimate sums its
terms when it is made and writes them in words only when they are shown (`Estimate.terms`): most
phases fit, and no message reads their terms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple

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
MEGATRON_MASTER = 4  # of MEGATRON_OPTIMIZER: the fp32 master params; the rest is Adam's moments
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
# benchmarks/memory_terms.py (2.02 B above the logits with the divide, 0.82 B without).
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
    """One term of an estimate: its bytes and its formula in numbers."""

    name: str
    bytes: float
    formula: str
    tokens: int = 0
    """The micro batch's tokens on this GPU when the term grows with them (activations and
    logits: bytes = tokens x a constant), 0 for a fixed term (weights, gradients, optimizer)."""

    def text(self) -> str:
        return f"{self.name} {self.formula} = {gib(self.bytes)}"


class Estimate:
    """The peak of one phase on one GPU: the sums of its terms, which a verdict reads, and the
    terms themselves in words (`terms`), written only when read: most phases fit, and then no
    message reads them. `adder(estimate, *args)` adds the phase's terms (`add`), each formula
    once: the estimate sums them when it is made, and the adder adds them again, kept in words,
    when `terms` is read. A plain class, read-only by convention (made for every phase of every
    plan, where a frozen dataclass costs a setattr per field)."""

    __slots__ = ("phase", "total", "fixed", "tokens", "growing", "per_token", "_adder", "_args",
                 "_kept")

    def __init__(self, phase: str, adder: Callable[..., None], args: tuple[Any, ...],
                 keep: bool = False) -> None:
        self.phase = phase
        self.total: float = 0
        """Every term's bytes, summed in the terms' order."""
        self.fixed: float = 0
        """What the phase holds whatever its micro batch: weights, gradients, optimizer state."""
        self.tokens: int = 0
        """The micro batch's tokens on this GPU at full length (0: no term grows with them)."""
        self.growing: float = 0
        """The bytes of the terms that grow with the micro batch's tokens."""
        self.per_token: float = 0.0
        """Bytes per token of the micro batch (the growing terms are linear in the tokens)."""
        self._adder, self._args = adder, args
        self._kept: list[Term] | None = [] if keep else None
        """The terms in words: kept when made with `keep`, else once `terms` is read."""
        adder(self, *args)

    def add(self, name: str, bytes: float, tokens: int, write: Callable[..., str],
            *values: Any) -> None:
        """Add the term `name` of `bytes`, growing with `tokens` of micro batch (0: fixed), its
        formula `write(*values)` (written only when the terms are kept)."""
        self.total += bytes
        if tokens:
            self.growing += bytes
            if tokens > self.tokens:
                self.tokens = tokens
            self.per_token = self.growing / self.tokens
        else:
            self.fixed += bytes
        if self._kept is not None:
            self._kept.append(Term(name, bytes, write(*values), tokens))

    @property
    def terms(self) -> tuple[Term, ...]:
        if self._kept is None:
            self._kept = Estimate(self.phase, self._adder, self._args, keep=True)._kept
        return tuple(self._kept)

    def __repr__(self) -> str:
        return f"Estimate({self.phase!r}, {self.terms!r})"

    def sum_text(self) -> str:
        return " + ".join(term.text() for term in self.terms) + f" = {gib(self.total)}"

    def at(self, tokens: float) -> float:
        """The phase's peak with `tokens` tokens of micro batch on this GPU."""
        return self.fixed + self.per_token * tokens

    def tokens_that_fit(self, memory: float) -> int:
        """The most micro-batch tokens on this GPU that fit in `memory` bytes."""
        per = self.per_token
        return int((memory - self.fixed) // per) if per else 0


def of_terms(phase: str, *terms: Term) -> Estimate:
    """An estimate of terms already written."""
    return Estimate(phase, _add_terms, terms)


def _add_terms(estimate: Estimate, *terms: Term) -> None:
    for term in terms:
        estimate.add(term.name, term.bytes, term.tokens, str, term.formula)


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


def lora_parameters(facts: ModelFacts) -> int:
    """LoRA adapters per unit of rank on every linear layer (SkyRL's `target_modules:
    all-linear`): in + out of q, k, v, o and the three MLP projections of each layer."""
    hidden, head = facts.hidden_size, facts.attention_head_dim
    q, kv = facts.num_attention_heads * head, facts.num_key_value_heads * head
    per_layer = (hidden + q) * 2 + (hidden + kv) * 2 + 3 * (hidden + facts.intermediate_size)
    return per_layer * facts.num_hidden_layers


class Sizes(NamedTuple):
    """What the formulas read of a model's facts, taken once per facts object (`sizes`): a
    named tuple's field costs a fraction of a pydantic model's attribute."""

    params: int
    hidden: int
    layers: int
    vocab: int
    root: int
    """FSDP's root unit: the embedding and LM head (`embedding_parameters`)."""
    layer: int
    """One decoder layer (`layer_parameters`)."""
    experts: int
    """The routed experts (`expert_parameters`)."""
    lora: int
    """LoRA adapters per unit of rank (`lora_parameters`)."""


@per_object
def sizes(facts: ModelFacts) -> Sizes:
    """The sizes the formulas read of `facts`."""
    return Sizes(facts.num_parameters, facts.hidden_size, facts.num_hidden_layers,
                 facts.vocab_size, embedding_parameters(facts, is_tied(facts)),
                 layer_parameters(facts), expert_parameters(facts), lora_parameters(facts))


class Activations(NamedTuple):
    """The tokens one GPU computes on: micro batch x sequence, split by SP or TP x CP."""

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


Add = Callable[..., None]
"""`Estimate.add` of the estimate a phase's terms go to."""


def _sharded_text(params: float, per: int, world: int) -> str:
    return f"{billions(params)} params x {per} B / {world} shards"


def _sharded(add: Add, name: str, params: float, per: int, world: int) -> None:
    """FSDP: `per` bytes of each of `params` parameters, sharded over the `world` GPUs."""
    add(name, params * per / world, 0, _sharded_text, params, per, world)


def _local_text(dense: float, expert: float, per: int) -> str:
    return f"({billions(dense)} + {billions(expert)} params on this GPU) x {per} B"


def _local(add: Add, name: str, dense: float, expert: float, per: int) -> None:
    """Megatron: `per` bytes of each dense and expert parameter on this GPU."""
    add(name, (dense + expert) * per, 0, _local_text, dense, expert, per)


OPTIMIZER_DTYPES: Mapping[str, str] = MappingProxyType({
    "fp32": "fp32", "float32": "fp32", "float": "fp32",
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "fp8": "fp8", "float8": "fp8", "uint8": "fp8",
})
"""The names SkyRL turns into a dtype in Megatron's `optimizer_config_kwargs` (SkyRL 0.3.0 and
0.4.0 skyrl/backends/skyrl_train/distributed/megatron/optimizer_dtype.py
`coerce_optimizer_dtype_kwargs`, which strips and lowercases a name first) -> the dtype, as its
short name. SkyRL raises ValueError for any other name of a key ending in `_dtype`. fp8 state is
stored as uint8 (Transformer Engine's FusedAdam)."""
OPTIMIZER_DTYPE_BYTES: Mapping[str, int] = MappingProxyType({
    "fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1})
OPTIMIZER_STATE_DTYPES: Mapping[str, frozenset[str]] = MappingProxyType({
    "main_params_dtype": frozenset({"fp32", "fp16"}),
    "exp_avg_dtype": frozenset({"fp32", "bf16", "fp16", "fp8"}),
    "exp_avg_sq_dtype": frozenset({"fp32", "bf16", "fp16", "fp8"}),
})
"""The optimizer state dtypes Transformer Engine's FusedAdam keeps (the master params and Adam's
two moments) -> the dtypes SkyRL allows for each (`_LEGAL_FIELD_DTYPES` beside
`coerce_optimizer_dtype_kwargs`; ValueError for another). Megatron-core takes them only with
`use_precision_aware_optimizer` (its `OptimizerConfig.__post_init__` asserts fp32 otherwise, as
it does for `main_grads_dtype`)."""


PRECISION_AWARE = "use_precision_aware_optimizer"
"""The `optimizer_config_kwargs` key that lets Megatron-core keep that state in other dtypes."""


def optimizer_dtype(value: Any) -> str | None:
    """The dtype SkyRL makes of a `*_dtype` value of `optimizer_config_kwargs`: its short name
    (`OPTIMIZER_DTYPES`), or None for a string SkyRL refuses or a value that is not a string
    (SkyRL hands those to Megatron-core as they are)."""
    return OPTIMIZER_DTYPES.get(value.strip().lower()) if isinstance(value, str) else None


class OptimizerOffload(NamedTuple):
    """Megatron's optimizer state on the GPU: its CPU offload and the dtypes of its master params
    and Adam moments, as SkyRL hands `optimizer_config_kwargs` to Megatron-core's
    `OptimizerConfig` (skyrl/backends/skyrl_train/distributed/megatron/optimizer.py
    `init_megatron_optim_config`, SkyRL 0.3.0 and 0.4.0). With `optimizer_cpu_offload`,
    Megatron-core wraps the step in `HybridDeviceOptimizer` (megatron/core/optimizer/__init__.py),
    which moves the optimizer step of the first `optimizer_offload_fraction` of the parameters, by
    count, to the CPU (cpu_offloading/hybrid_optimizer.py `_get_sub_optimizer_param_groups`): their
    Adam moments live there. Their master copy moves too only with
    `use_precision_aware_optimizer` (the optimizer then holds the master params); without it the
    distributed optimizer's fp32 main shard stays on the GPU (distrib_optimizer.py
    `_build_model_and_main_param_groups`). Only the precision-aware optimizer keeps its state in
    other dtypes than fp32 (`main_params_dtype`, `exp_avg_dtype`, `exp_avg_sq_dtype`:
    `OPTIMIZER_STATE_DTYPES`)."""

    fraction: float
    """Of the parameters whose optimizer state is on the CPU: 0 (no offload) to 1."""
    precision_aware: bool
    """`use_precision_aware_optimizer`: the master params move with the offloaded fraction."""
    master: str = "fp32"
    """`main_params_dtype`, as a short name (`OPTIMIZER_DTYPE_BYTES`)."""
    moments: tuple[str, str] = ("fp32", "fp32")
    """`exp_avg_dtype` and `exp_avg_sq_dtype`."""

    @property
    def bytes(self) -> float:
        """Optimizer bytes per local parameter on the GPU, over DP."""
        kept = 1 - self.fraction
        master = OPTIMIZER_DTYPE_BYTES[self.master]
        moments = sum(map(OPTIMIZER_DTYPE_BYTES.__getitem__, self.moments))
        if self.precision_aware:
            return (master + moments) * kept
        return master + moments * kept

    def text(self) -> str:
        """` x 12 B`, or the bytes and how offload and the state's dtypes make them."""
        if not self.fraction and self.master == "fp32" and self.moments == ("fp32", "fp32"):
            return f" x {MEGATRON_OPTIMIZER} B"
        sizes = OPTIMIZER_DTYPE_BYTES
        first, second = self.moments
        master = f"{self.master} master {sizes[self.master]}"
        moments = (f"Adam moments {MEGATRON_OPTIMIZER - MEGATRON_MASTER}"
                   if self.moments == ("fp32", "fp32") else
                   f"Adam moments {first} {sizes[first]} + {second} {sizes[second]}")
        aware = ", use_precision_aware_optimizer" if self.precision_aware else ""
        if not self.fraction:
            return f" x {self.bytes:g} B ({master} + {moments}{aware})"
        kept = (f"{100 * (1 - self.fraction):g}% on the GPU, optimizer_offload_fraction "
                f"{self.fraction:g}")
        if self.precision_aware:
            return f" x {self.bytes:g} B (({master} + {moments}) x {kept}{aware})"
        return f" x {self.bytes:g} B ({master} + {moments} x {kept})"


NO_OFFLOAD = OptimizerOffload(0.0, False)
"""Megatron's optimizer state all on the GPU (SkyRL's default `optimizer_config_kwargs`)."""


def _adam_text(dense: float, dp_dense: int, expert: float, dp_expert: int,
               optimizer: OptimizerOffload) -> str:
    return (f"({billions(dense)} / DP {dp_dense} + {billions(expert)} / expert DP {dp_expert})"
            + optimizer.text())


def _megatron_adam(add: Add, shape: Parallelism, dense: float, expert: float,
                   optimizer: OptimizerOffload) -> None:
    """Megatron's distributed optimizer: Adam state of the local parameters over DP, less what
    its CPU offload moves off the GPU."""
    dp_dense, dp_expert = optimizer_shards(shape)
    add("Adam state", (dense / dp_dense + expert / dp_expert) * optimizer.bytes, 0,
        _adam_text, dense, dp_dense, expert, dp_expert, optimizer)


def _unsharded_text(root: int, layer: int, per: int) -> str:
    return f"({billions(root)} + {billions(layer)} params) x {per} B"


def _unsharded(add: Add, model: Sizes, bytes_per_param: int) -> None:
    """What FSDP2 all-gathers while computing: the root unit (embeddings and LM head, which
    SkyRL leaves outside the per-layer units; the root stays unsharded through forward and
    backward) and one decoder layer."""
    add("unsharded root + one layer", (model.root + model.layer) * bytes_per_param, 0,
        _unsharded_text, model.root, model.layer, bytes_per_param)


def _per_token_text(coefficient: str, shape: Activations, width: str, size: int,
                    *values: int) -> str:
    """`coefficient` (a template of `values`) x the micro batch x `width` `size`, over TP."""
    per_tp = f" / TP {shape.tensor}" if shape.tensor > 1 else ""
    return f"{coefficient.format(*values)} x {shape.text()} x {width} {size}{per_tp}"


def _activations(add: Add, model: Sizes, shape: Activations, checkpointing: bool,
                 backward: bool, logits: bool) -> None:
    """Activations of a training micro batch (with or without gradient checkpointing) or of a
    forward-only pass (one layer at a time), and the logits (none for a critic: its value head
    gives one number per token)."""
    tokens = shape.tokens
    hidden, layers = model.hidden, model.layers
    layer = LAYER_ACTIVATION * tokens * hidden / shape.tensor
    if not backward:
        add("activations (forward, one layer)", layer, tokens, _per_token_text, "{} B", shape,
            "hidden", hidden, LAYER_ACTIVATION)
    elif checkpointing:
        kept = CHECKPOINT_INPUT * layers * tokens * hidden / shape.tensor
        add("activations (gradient checkpointing)", kept + layer, tokens, _per_token_text,
            "({} layers x {} B + one layer {} B)", shape, "hidden", hidden, layers,
            CHECKPOINT_INPUT, LAYER_ACTIVATION)
    else:
        add("activations (no checkpointing)", layers * layer, tokens, _per_token_text,
            "{} layers x {} B", shape, "hidden", hidden, layers, LAYER_ACTIVATION)
    if logits:
        size = LOGITS_TRAINING if backward else LOGITS_FORWARD
        add("logits (bf16 + the divide's gradient)" if backward else "logits (bf16)",
            size * tokens * model.vocab / shape.tensor, tokens, _per_token_text, "{} B", shape,
            "vocab", model.vocab, size)


def local_parameters(model: Sizes, layout: Parallelism) -> tuple[float, float]:
    """Megatron: (dense, expert) parameters on one GPU."""
    experts = model.experts
    dense = (model.params - experts) / (layout.tensor * layout.pipeline)
    return dense, experts / layout.expert_group


def optimizer_shards(layout: Parallelism) -> tuple[int, int]:
    """Megatron: (dense, expert) shards of the distributed optimizer: the DP and the expert DP.
    Floored and at least 1, so that a plan whose world does not divide (GEO003, GEO004) still
    gets an estimate."""
    return (max(layout.world // layout.model_parallel, 1),
            max(layout.world // layout.expert_group, 1))


@per_object
def critic_facts(facts: ModelFacts) -> ModelFacts:
    """The critic's model: SkyRL's `get_llm_for_sequence_regression`
    (skyrl/backends/skyrl_train/workers/model_wrapper.py) loads the base model without its LM
    head and adds a value head of hidden x 1, so an untied LM head's vocab x hidden parameters
    are not there (a tied one is the input embedding, which stays). The same object for the
    same facts object."""
    if is_tied(facts):
        return facts
    return facts.model_copy(update={
        "num_parameters": facts.num_parameters - facts.vocab_size * facts.hidden_size})


def policy_training(facts: ModelFacts, shape: Parallelism, activations: Activations,
                    checkpointing: bool, offload: bool, lora_rank: int,
                    role: str = "policy", optimizer: OptimizerOffload = NO_OFFLOAD) -> Estimate:
    """A trainer's forward and backward of one micro batch, with its optimizer state: the
    policy's, or (`role` "critic", facts from `critic_facts`) the critic's, which has no
    logits. `offload`: FSDP's CPU offload; `optimizer`: Megatron's optimizer offload."""
    return Estimate(f"{role} training", _training, (
        sizes(facts), shape, activations, checkpointing, offload, lora_rank, role == "policy",
        optimizer))


def _training(estimate: Estimate, model: Sizes, shape: Parallelism, activations: Activations,
              checkpointing: bool, offload: bool, lora_rank: int, logits: bool,
              optimizer: OptimizerOffload) -> None:
    add = estimate.add
    if shape.strategy == "megatron":
        dense, expert = local_parameters(model, shape)
        if lora_rank > 0:
            _local(add, "frozen weights", dense, expert, MEGATRON_FROZEN)
            adapters = lora_rank * model.lora
            ranks = shape.tensor * shape.pipeline
            add(f"LoRA rank {lora_rank} weights + grads + Adam",
                adapters * (MEGATRON_LOCAL / ranks + optimizer.bytes / shape.world), 0,
                _adapters_text, adapters, ranks, shape.world, optimizer)
        else:
            _local(add, "weights + grads", dense, expert, MEGATRON_LOCAL)
            _megatron_adam(add, shape, dense, expert, optimizer)
    elif lora_rank > 0:
        if not offload:
            _sharded(add, "frozen weights", model.params, FSDP_FROZEN_PARAM, shape.world)
        _sharded(add, f"LoRA rank {lora_rank} weights + grads + Adam",
                 lora_rank * model.lora, FSDP_TRAIN_STATE, shape.world)
        _unsharded(add, model, UNSHARDED_FORWARD)
    else:
        if not offload:
            _sharded(add, "weights + grads + Adam", model.params, FSDP_TRAIN_STATE, shape.world)
        _unsharded(add, model, UNSHARDED_TRAIN)
    _activations(add, model, activations, checkpointing, True, logits)


def _adapters_text(adapters: int, ranks: int, world: int, optimizer: OptimizerOffload) -> str:
    return (f"{billions(adapters)} params x ({MEGATRON_LOCAL} B / TP x PP {ranks} + "
            f"{optimizer.bytes:g} B / {world})")


def policy_forward(facts: ModelFacts, shape: Parallelism, activations: Activations,
                   offload: bool, optimizer_resident: bool, lora_rank: int,
                   role: str = "policy", optimizer: OptimizerOffload = NO_OFFLOAD) -> Estimate:
    """The policy's forward-only pass for the old log-probs (`micro_forward_batch_size_per_gpu`).
    `WorkerDispatch.forward` (skyrl/backends/skyrl_train/workers/worker_dispatch.py) puts the
    model on the GPU without its optimizer (`_ensure_on_gpu(need_optimizer=False)`); the
    optimizer state is there anyway when nothing offloads it (`optimizer_resident`: no
    `colocate_all`, no CPU offload; under Megatron less what `optimizer` offloads)."""
    return Estimate(f"{role} forward", _forward, (
        sizes(facts), shape, activations, offload, optimizer_resident, lora_rank,
        role == "policy", optimizer))


def _forward(estimate: Estimate, model: Sizes, shape: Parallelism, activations: Activations,
             offload: bool, optimizer_resident: bool, lora_rank: int, logits: bool,
             optimizer: OptimizerOffload) -> None:
    add = estimate.add
    if shape.strategy == "megatron":
        dense, expert = local_parameters(model, shape)
        if lora_rank > 0:
            _local(add, "weights", dense, expert, MEGATRON_FROZEN)
        else:
            _local(add, "weights + grad buffers", dense, expert, MEGATRON_LOCAL)
            if optimizer_resident:
                _megatron_adam(add, shape, dense, expert, optimizer)
    else:
        if not offload:
            _sharded(add, "weights", model.params, FSDP_FROZEN_PARAM, shape.world)
            if optimizer_resident and lora_rank == 0:
                _sharded(add, "Adam state", model.params, FSDP_ADAM, shape.world)
        _unsharded(add, model, UNSHARDED_FORWARD)
    _activations(add, model, activations, True, False, logits)


def reference_forward(facts: ModelFacts, shape: Parallelism, activations: Activations,
                      weight_bytes: int, offload: bool) -> Estimate:
    """The reference's forward of one micro batch (log-probs of the sampled tokens)."""
    return Estimate("reference forward", _reference, (
        sizes(facts), shape, activations, weight_bytes, offload))


def _reference(estimate: Estimate, model: Sizes, shape: Parallelism, activations: Activations,
               weight_bytes: int, offload: bool) -> None:
    add = estimate.add
    if shape.strategy == "megatron":
        _local(add, "weights", *local_parameters(model, shape), weight_bytes)
    else:
        if not offload:
            _sharded(add, "weights", model.params, weight_bytes, shape.world)
        _unsharded(add, model, UNSHARDED_FORWARD)
    _activations(add, model, activations, True, False, True)


def weight_sync(facts: ModelFacts, shape: Parallelism, weights: Term, offload: bool
                ) -> Estimate:
    """The weight sync under `colocate_all`: the policy's weights (fp32 under FSDP, bf16 under
    Megatron; none when offloaded) beside one engine rank's."""
    return Estimate("weight sync", _sync, (sizes(facts), shape, weights, offload))


def _sync(estimate: Estimate, model: Sizes, shape: Parallelism, weights: Term,
          offload: bool) -> None:
    add = estimate.add
    if shape.strategy == "megatron":
        _local(add, "policy weights", *local_parameters(model, shape), 2)
    elif offload:
        add("policy weights", 0, 0, str, "(offloaded to CPU)")
    else:
        _sharded(add, "policy weights", model.params, 4, shape.world)
    add(weights.name, weights.bytes, weights.tokens, str, weights.formula)


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
    model = sizes(facts)
    experts = model.experts
    dense = model.params - experts
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
