"""Memory: does each phase of the run fit in one GPU of the allocated accelerator?

The estimates are rlaunch.preflight.estimates.gpu_memory's (formulas and sources in
docs/memory.md).
The phases are what SkyRL 0.3.0 holds on a GPU at one time:
- trainers that share GPUs take turns: `WorkerDispatch._ensure_on_gpu`
  (skyrl/backends/skyrl_train/workers/worker_dispatch.py) offloads the other models of the
  colocation group (all of them under `colocate_all`, policy and reference under
  `colocate_policy_ref`) before one computes, so the policy's training and the reference's
  forward are separate peaks, never a sum;
- under `colocate_all` the vLLM engines sleep before training (`RayPPOTrainer.train`,
  skyrl/train/trainer.py: `await self.inference_engine_client.sleep()`) and the trainers are
  offloaded while they generate; the weight sync wakes the engines' weights with the policy's
  weights on the GPU and its optimizer offloaded (`WorkerDispatch.save_weights_for_sampler`,
  `_prepare_for_weight_sync`), the one moment a trainer and an engine share a GPU;
- a vLLM engine takes `gpu_memory_utilization` of its GPU for its weights and KV cache.
Runs on `sim` (the local executor's simulated GPUs: the smoke runtime trains on CPU) have no
accelerator memory, so these rules do not apply to them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from rlaunch.preflight.engine.check import Check, usable_facts
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.preflight.estimates.gpu_memory import (
    ACCELERATOR_MEMORY_GIB,
    DTYPE_BYTES,
    GIB,
    NO_OFFLOAD,
    OPTIMIZER_STATE_DTYPES,
    PRECISION_AWARE,
    SHORTEST_SEQUENCE,
    SIMULATED,
    Activations,
    EngineShape,
    Estimate,
    OptimizerOffload,
    Term,
    accelerator_memory,
    critic_facts,
    engine_weights,
    gib,
    kv_bytes_per_token,
    of_terms,
    optimizer_dtype,
    policy_forward,
    policy_training,
    reference_forward,
    weight_sync,
)
from rlaunch.preflight.rules.settings import (
    CPU_OFFLOAD,
    GPU_MEMORY,
    LORA_RANK,
    MEGATRON_OPTIMIZER_KWARGS,
)
from rlaunch.memo import Memo
from rlaunch.spec.artifacts import ModelFacts
from rlaunch.spec.examples import QWEN25_14B
from rlaunch.spec.parallelism import Parallelism

REF_OFFLOAD = "trainer.ref.fsdp_config.cpu_offload"
CRITIC_OFFLOAD = "trainer.critic.fsdp_config.cpu_offload"
CRITIC_LORA_RANK = "trainer.critic.model.lora.rank"
CHECKPOINTING = "trainer.gradient_checkpointing"
ENGINE_DTYPE = "generator.inference_engine.model_dtype"
TRAINER_BF16 = "trainer.bf16"
PADDING_REMOVAL = "trainer.remove_microbatch_padding"
TOKEN_CAP = "trainer.max_tokens_per_microbatch"
PER_MINIBATCH = "trainer.recompute_old_logprobs_per_minibatch"
# Above this share of a GPU a phase fits on paper, but CUDA contexts, NCCL buffers and the
# allocator's fragmentation (not in the sums) may take the rest.
THIN = 0.9
ACCELERATOR = "execution.allocation.accelerator"


def _set(name: str) -> str:
    return f"settings.{name}"


class Settings(NamedTuple):
    """The SkyRL settings the memory rules read (`RunSpec.skyrl_setting`: as the run sets them,
    else the pinned release's defaults), as they are."""

    checkpointing: Any
    cpu_offload: Any
    lora_rank: Any
    ref_offload: Any
    critic_offload: Any
    critic_lora_rank: Any
    bf16: Any
    padding_removal: Any
    token_cap: Any
    per_minibatch: Any
    gpu_memory: Any
    engine_dtype: Any
    megatron_optimizer: Any


SETTINGS_READ = (CHECKPOINTING, CPU_OFFLOAD, LORA_RANK, REF_OFFLOAD, CRITIC_OFFLOAD,
                 CRITIC_LORA_RANK, TRAINER_BF16, PADDING_REMOVAL, TOKEN_CAP, PER_MINIBATCH,
                 GPU_MEMORY, ENGINE_DTYPE, MEGATRON_OPTIMIZER_KWARGS)
"""The names of Settings' fields, in their order (read through `Check.setting`: once per
distinct part of the spec beside the plan)."""


class Memory(NamedTuple):
    """What every memory rule reads: the GPU's memory and the shapes of the run (a named tuple:
    made for every plan, where a frozen dataclass costs a setattr per field)."""

    gpu: float
    """Bytes of one GPU."""
    accelerator: str
    facts: ModelFacts
    reference_facts: ModelFacts
    activations: Activations
    forward: Activations
    sequence: int
    settings: Settings
    layout: tuple[Any, ...]
    """What the estimates read of the policy's layout (`_layout`)."""
    offload: bool
    """The policy's weights, grads and optimizer on the CPU (FSDP's `cpu_offload`)."""
    optimizer: OptimizerOffload
    """Megatron's optimizer offload (`optimizer_offload`); NO_OFFLOAD under FSDP."""


def optimizer_offload(kwargs: Any) -> OptimizerOffload:
    """Megatron's optimizer state on the GPU as `optimizer_config_kwargs` sets it (SkyRL fills in
    the keys a run leaves out with its defaults: no offload, fraction 0, no precision-aware
    optimizer).
    - Offload: none unless `optimizer_cpu_offload` is true, and then `optimizer_offload_fraction`
      as Megatron-core's `HybridDeviceOptimizer` applies it, comparing the count offloaded with
      the fraction x the count (below 0 offloads nothing, above 1 everything). A fraction that is
      not a finite number offloads nothing here: the sums then keep the whole state on the GPU.
    - Dtypes: with `use_precision_aware_optimizer` (any value Python takes as true),
      `main_params_dtype`, `exp_avg_dtype` and `exp_avg_sq_dtype` as SkyRL converts them; fp32
      for one left out, or one SkyRL or Megatron-core refuses (SET017 reports it: the run stops
      before memory matters). Without it, fp32."""
    if not isinstance(kwargs, Mapping):
        return NO_OFFLOAD
    fraction = kwargs.get("optimizer_offload_fraction", 0.0)
    if (kwargs.get("optimizer_cpu_offload") is not True
            or not isinstance(fraction, (int, float)) or not math.isfinite(fraction)
            or fraction <= 0):
        fraction = 0.0
    fraction = min(float(fraction), 1.0)
    # Megatron-core reads it with an `if` (OptimizerConfig.__post_init__), as SET017 does.
    if not kwargs.get(PRECISION_AWARE):
        return OptimizerOffload(fraction, False)
    master, first, second = (_state_dtype(kwargs, name) for name in OPTIMIZER_STATE_DTYPES)
    return OptimizerOffload(fraction, True, master, (first, second))


def _state_dtype(kwargs: Mapping[str, Any], name: str) -> str:
    """The dtype of the optimizer state `name` (`OPTIMIZER_STATE_DTYPES`): fp32 unless the
    kwargs set one SkyRL takes for it."""
    found = optimizer_dtype(kwargs.get(name, "fp32"))
    return found if found in OPTIMIZER_STATE_DTYPES[name] else "fp32"


def memory_of(check: Check) -> Memory | None:
    """The run's memory picture, or None when the rules cannot apply: simulated GPUs, an
    unknown accelerator (MEM001), unusable facts or roles (other rules report them). Computed
    once per check."""
    return check.derived(_memory_of)


def _memory_of(check: Check) -> Memory | None:
    base = check.shared(_memory_base)
    if base is None or not check.roles_ok or check.nonpositive_batch_counts:
        return None
    gpu, accelerator, facts, reference_facts, sequence, settings, cap, optimizer = base
    plan = check.plan
    policy = plan.policy
    megatron = plan.strategy == "megatron"
    split = policy.context_parallel_size if megatron else policy.sequence_parallel_size
    tensor = policy.tensor_parallel_size if megatron else 1
    return Memory(  # positional: a named tuple's keywords cost twice its positions
        gpu, accelerator, facts, reference_facts,
        _activations(plan.batch.micro_train_batch_size_per_gpu, sequence, split, tensor, cap),
        _activations(_forward_micro_batch(check, settings), sequence, split, tensor, cap),
        sequence, settings, _layout(check.parallelism("policy")),
        not megatron and bool(settings.cpu_offload), optimizer if megatron else NO_OFFLOAD)


MemoryBase = tuple[float, str, ModelFacts, ModelFacts, int, Settings, int, OptimizerOffload]
"""What the memory picture reads beside the role plan (Memory's fields of those names): the
GPU's bytes, the accelerator, the facts, the sequence, the settings, the token cap and
Megatron's optimizer offload."""


def _memory_base(check: Check) -> MemoryBase | None:
    """The part of the memory picture beside the role plan (once per distinct part, shared by a
    search's plans: `Check.shared`), or None when the rules cannot apply: simulated GPUs, an
    unknown accelerator (MEM001), unusable facts (other rules report them), a sequence vLLM
    refuses."""
    spec = check.spec
    accelerator = spec.execution.allocation.accelerator
    gpu = accelerator_memory(accelerator)
    facts = check.facts
    if gpu is None or facts is None:
        return None
    reference = spec.reference_model
    reference_facts = getattr(reference, "facts", None) if reference is not None else facts
    if reference_facts is None or not usable_facts(reference_facts):
        return None
    lengths = spec.lengths
    first = lengths.max_input_length if lengths.max_turns > 1 else lengths.max_prompt_length
    sequence = first + lengths.max_generate_length
    if not 0 < sequence <= facts.max_position_embeddings:
        return None  # CTX001, CTX002: vLLM refuses such a sequence before memory matters
    settings = Settings._make(map(check.setting, SETTINGS_READ))
    cap = settings.token_cap
    return (gpu * GIB, accelerator, facts, reference_facts, sequence, settings,
            cap if isinstance(cap, int) and cap > 0 else 0,
            optimizer_offload(settings.megatron_optimizer))


_SHAPES: Memo[tuple[int, int, int, int, int], Activations] = Memo(1024)
"""Activations by their sizes: the few a search sees, each made once (and an estimate's memo key
then compares them by identity)."""


def _activations(micro_batch: int, sequence: int, split: int, tensor: int,
                 token_cap: int) -> Activations:
    key = (micro_batch, sequence, split, tensor, token_cap)
    known = _SHAPES.get(key)
    return _SHAPES.put(key, Activations(*key)) if known is None else known


def _forward_micro_batch(check: Check, settings: Settings) -> int:
    """The forward micro batch as SkyRL cuts it: `micro_forward_batch_size_per_gpu` sequences,
    or all a GPU has when it has fewer (`SampleBasedBatchIterator` chunks what it is given): the
    mini batch's share of a DP rank with `trainer.recompute_old_logprobs_per_minibatch` (the
    default), else the whole training batch's."""
    batch = check.plan.batch
    micro = batch.micro_forward_batch_size_per_gpu
    dp = check.policy_dp
    if dp is None:
        return micro
    prompts = (batch.policy_mini_batch_size if settings.per_minibatch
               else batch.train_batch_size)
    return max(min(micro, prompts * batch.n_samples_per_prompt // dp), 1)


_ENGINES: Memo[tuple[Any, ...], tuple[ModelFacts, tuple[Term, int, str]]] = Memo(1024)
"""An engine's inputs, as plain values (the facts by identity) -> `(facts, (its weights, KV
cache bytes per token, the KV formula))`: the facts held, so no other object takes their
identity while the entry lives."""


_ESTIMATES: Memo[tuple[Any, ...], tuple[ModelFacts, Estimate]] = Memo(32768)
"""A trainer phase's inputs as plain values (its estimate's function, the facts by identity,
what the formulas read of the layout, the micro batch or for the weight sync the engine's
weights, the settings) -> `(facts, estimate)`:
the facts held, so no other object takes their identity while the entry lives. A search
sees the same phases plan after plan; the key costs less than the sum. Random plans over the
worked examples' six models meet about 20,000 distinct phases in 30,000 plans: at 8,192 entries a
third of the lookups missed, at 32,768 a tenth (about 2 MB more)."""


def _layout(shape: Parallelism) -> tuple[Any, ...]:
    """What the estimates read of a trainer's layout (rlaunch.preflight.estimates.gpu_memory):
    the strategy and the world, and under Megatron its TP, PP, CP, EP and ETP."""
    if shape.strategy == "megatron":
        return (shape.strategy, shape.world, shape.tensor, shape.pipeline, shape.context,
                shape.expert, shape.expert_tensor)
    return (shape.strategy, shape.world)


def _estimate(key: tuple[Any, ...], facts: ModelFacts, check: Check, role: str) -> Estimate:
    """The estimate of `key` = (its function, id(facts), the layout as `_layout` reads it, the
    micro batch or for the weight sync the engine's weights, the function's other arguments in
    order): `function(facts, the role's parallelism, micro batch, *the others)`, once per
    distinct key."""
    known = _ESTIMATES.get(key)
    if known is None:
        function, _, _, activations, *flags = key
        known = _ESTIMATES.put(key, (facts, function(facts, check.parallelism(role), activations,
                                                     *flags)))
    return known[1]


def _policy_estimate(check: Check, memory: Memory) -> Estimate:
    settings = memory.settings
    facts = memory.facts
    return _estimate((policy_training, id(facts), memory.layout, memory.activations,
                      bool(settings.checkpointing), memory.offload,
                      int(settings.lora_rank), "policy", memory.optimizer), facts, check,
                     "policy")


def _policy_forward(check: Check, memory: Memory) -> Estimate:
    settings = memory.settings
    facts = memory.facts
    offload = memory.offload
    return _estimate((policy_forward, id(facts), memory.layout, memory.forward, offload,
                      not offload and not check.plan.placement.colocate_all,
                      int(settings.lora_rank), "policy", memory.optimizer), facts, check,
                     "policy")


def _critic(check: Check, memory: Memory, *, training: bool) -> Estimate | None:
    """The critic's training step or its forward pass (values), when the plan has a critic:
    its own model (`critic_model`, else the policy's) without the LM head, FSDP over the
    critic's GPUs with the policy's sizes, `trainer.critic.*` offload and LoRA as set."""
    spec = check.spec
    if check.plan.critic is None:
        return None
    model = spec.critic_model
    facts = getattr(model, "facts", None) if model is not None else memory.facts
    if facts is None or not usable_facts(facts):
        return None
    settings = memory.settings
    offload = bool(settings.critic_offload)
    rank = int(settings.critic_lora_rank)
    shape = check.parallelism("critic")
    facts = critic_facts(facts)
    if training:
        key = (policy_training, id(facts), _layout(shape), memory.activations,
               bool(settings.checkpointing), offload, rank, "critic")
    else:
        key = (policy_forward, id(facts), _layout(shape), memory.forward, offload,
               not offload and not check.plan.placement.colocate_all, rank, "critic")
    return _estimate(key, facts, check, "critic")


def _reference_forward(check: Check, memory: Memory) -> Estimate | None:
    plan = check.plan
    if plan.reference is None or not check.use_kl:
        return None
    settings = memory.settings
    facts = memory.reference_facts
    shape = check.parallelism("reference")
    return _estimate((reference_forward, id(facts), _layout(shape), memory.forward,
                      2 if settings.bf16 else 4,
                      plan.strategy == "fsdp" and bool(settings.ref_offload)), facts, check,
                     "reference")


def _share(estimate: Estimate, memory: Memory) -> str:
    return (f"{estimate.sum_text()} ({100 * estimate.total / memory.gpu:.0f}% of one "
            f"{memory.accelerator}, {gib(memory.gpu)})")


_VERDICTS: Memo[tuple[Any, ...], tuple[Any, ...]] = Memo(4096)
"""The inputs of a verdict that finds something (the estimate by identity, the rule's words by
identity, the GPU, the micro batch, the padding setting) -> `(estimate, paths, fix,
findings)`: the objects keyed by identity held, so no other takes their identity while the
entry lives (a caller may pass words it built). Writing a finding's terms
costs ten times judging them, and a search meets the same overflowing phase again and again
(the trainer phases' estimates are kept per inputs: the same object)."""


def _verdict(code: str, paths: tuple[str, ...], what: str, estimate: Estimate,
             memory: Memory, shape: Activations, fix: str) -> tuple[Finding, ...]:
    """Error when the phase cannot fit for any input the spec allows (its fixed terms and a
    micro batch of the shortest sequences); a warning naming the length at which it starts to
    fail when only longer sequences overflow; a warning above 90% otherwise."""
    shortest = (1 if shape.token_cap else shape.micro_batch) * SHORTEST_SEQUENCE / shape.split
    gpu = memory.gpu
    if estimate.total <= THIN * gpu and estimate.fixed + estimate.per_token * shortest <= gpu:
        return ()  # fits with room, the common case: each of _judge's conditions is false
    padding = bool(memory.settings.padding_removal)
    key = (id(estimate), code, id(paths), what, id(fix), gpu, memory.accelerator, shape,
           memory.sequence, padding)
    known = _VERDICTS.get(key)
    if known is None:
        known = _VERDICTS.put(key, (estimate, paths, fix, tuple(
            _judge(code, paths, what, estimate, memory, shape, fix, padding))))
    return known[3]


def _judge(code: str, paths: tuple[str, ...], what: str, estimate: Estimate,
           memory: Memory, shape: Activations, fix: str, padding: bool) -> Iterator[Finding]:
    """Error when the phase cannot fit for any input the spec allows (its fixed terms and a
    micro batch of the shortest sequences); a warning naming the length at which it starts to
    fail when only longer sequences overflow; a warning above 90% otherwise."""
    shortest = (1 if shape.token_cap else shape.micro_batch) * SHORTEST_SEQUENCE / shape.split
    smallest = (f"one sequence of {SHORTEST_SEQUENCE} tokens" if shape.token_cap else
                f"{shape.micro_batch} sequences of {SHORTEST_SEQUENCE} tokens")
    if not estimate.tokens and estimate.total > memory.gpu:
        yield error(code, paths, f"{what} does not fit on one GPU: {_share(estimate, memory)}",
                    fix)
    elif estimate.at(shortest) > memory.gpu:
        fixed = " + ".join(term.text() for term in estimate.terms if not term.tokens)
        yield error(code, paths,
                    f"{what} does not fit on one GPU even at the shortest micro batch the spec "
                    f"allows ({smallest}): "
                    f"{fixed} = {gib(estimate.fixed)} before any activation, and "
                    f"{gib(estimate.at(shortest))} with them; at full length "
                    f"{_share(estimate, memory)}", fix)
    elif estimate.total > memory.gpu:
        fit = estimate.tokens_that_fit(memory.gpu)
        length = fit * shape.split // max(shape.micro_batch, 1)
        when = (f"a micro batch packs more than {fit * shape.split} tokens ({TOKEN_CAP} "
                f"{shape.token_cap}; a longer sequence is a micro batch of its own)"
                if shape.token_cap else
                f"a micro batch's {shape.micro_batch} sequences average more than {length} "
                f"tokens ({fit} tokens on this GPU; SkyRL removes a micro batch's padding, "
                f"{PADDING_REMOVAL})" if padding else
                f"a micro batch's longest sequence exceeds {length} tokens (SkyRL pads a micro "
                f"batch to its longest sequence, {PADDING_REMOVAL}: false)")
        yield warning(code, paths,
                      f"{what} fails with out-of-memory once {when}: the worst case, every "
                      f"sequence at {memory.sequence} tokens, is {_share(estimate, memory)}; "
                      f"shorter sequences fit ({gib(estimate.fixed)} fixed + "
                      f"{estimate.per_token:.0f} B per token)", fix)
    elif estimate.total > THIN * memory.gpu:
        yield warning(code, paths,
                      f"{what} leaves less than {100 - 100 * THIN:.0f}% of the GPU free (CUDA "
                      f"contexts, NCCL buffers and fragmentation are not in the sum): "
                      f"{_share(estimate, memory)}", fix)


@rule(
    "MEM001",
    "The accelerator is in the memory table (simulated GPUs `sim` have no memory to check).",
    example=Example(edits={ACCELERATOR: "A100"}),
    reads_plan=False,
)
def accelerator_known(check: Check) -> Iterator[Finding]:
    """Error. Every memory rule compares with the memory of one GPU of the allocation's
    accelerator; an accelerator missing from the table (`A100` alone: 40 or 80 GB?) leaves the
    run unchecked. `sim` is exempt: simulated GPUs run the CPU smoke runtime."""
    accelerator = check.spec.execution.allocation.accelerator
    if accelerator.strip().upper() == SIMULATED or accelerator_memory(accelerator) is not None:
        return
    table = ", ".join(f"{name} {size:g}" for name, size in ACCELERATOR_MEMORY_GIB.items())
    yield error(
        "MEM001", (ACCELERATOR,),
        f"{ACCELERATOR} {accelerator!r} is not in the accelerator memory table (GiB per GPU: "
        f"{table}; `sim` for simulated GPUs), so no memory rule can check the plan",
        "Name the accelerator as the table does (e.g. A100-80GB), or add it with its memory to "
        "ACCELERATOR_MEMORY_GIB in rlaunch/preflight/estimates/gpu_memory.py.",
    )


def qwen14b_on_a100_40(data: dict) -> None:
    """Qwen2.5-14B-Instruct, full fine-tuning on 1 x 8 A100-40GB, micro batch 2 of 1024 + 2048
    tokens"""
    data["model"] = data["tokenizer"] = QWEN25_14B
    data["execution"]["allocation"]["accelerator"] = "A100-40GB"
    data["lengths"].update(max_prompt_length=1024, max_input_length=1024,
                           max_generate_length=2048)
    data["role_plan"]["batch"].update(micro_train_batch_size_per_gpu=2,
                                      micro_forward_batch_size_per_gpu=4)
    data["role_plan"]["rollout"].update(num_engines=4, tensor_parallel_size=2)


def qwen14b_on_l4(data: dict) -> None:
    """Qwen2.5-14B-Instruct, full fine-tuning on 1 x 8 L4: weights, grads and Adam overflow

    The weights, gradients and Adam state alone do not fit in 24 GB, whatever the lengths."""
    qwen14b_on_a100_40(data)
    data["execution"]["allocation"]["accelerator"] = "L4"


@rule(
    "MEM002",
    "The policy's training step fits on one GPU (weights, grads, Adam, activations, logits), "
    "and the critic's when there is one.",
    example=Example(edits=qwen14b_on_l4),
)
def policy_fits(check: Check) -> tuple[Finding, ...]:
    """Error when the step cannot fit even at the shortest micro batch the spec allows (certain:
    the weights, gradients and optimizer state alone overflow); a warning naming the length at
    which it starts to fail when only long sequences overflow (SkyRL removes a micro batch's
    padding, so the cost follows the tokens a micro batch holds); a warning above 90%. FSDP:
    16 B per parameter (fp32 weights, grads and Adam moments) over the policy's GPUs, plus the
    all-gathered root unit and one layer; Megatron: 6 B per local parameter and 12 B over DP
    (distributed optimizer), less what its optimizer CPU offload moves
    (`trainer.policy.megatron_config.optimizer_config_kwargs`). Offload
    (`trainer.policy.fsdp_config.cpu_offload`) and LoRA
    (`trainer.policy.model.lora.rank`, FSDP and Megatron) as set. Beyond SkyRL: an
    out-of-memory error mid-step otherwise."""
    memory = memory_of(check)
    if memory is None:
        return ()
    findings = _verdict("MEM002", _POLICY_PATHS, "The policy's training step",
                        _policy_estimate(check, memory), memory, memory.activations, _POLICY_FIX)
    critic = _critic(check, memory, training=True)
    if critic is not None:
        paths = _CRITIC_PATHS[check.spec.critic_model is not None]
        findings += _verdict("MEM002", paths, "The critic's training step", critic, memory,
                             memory.activations, _CRITIC_FIX)
    return findings


_POLICY_PATHS = (ACCELERATOR, "role_plan.batch.micro_train_batch_size_per_gpu",
                 "role_plan.policy.num_nodes", "model.facts.num_parameters")
_POLICY_FIX = (
    f"Offload the policy ({_set(CPU_OFFLOAD)}: true), train LoRA adapters ({_set(LORA_RANK)}),"
    " lower role_plan.batch.micro_train_batch_size_per_gpu or the lengths, shard over more "
    "GPUs, or take a larger accelerator.")
_CRITIC_PATHS = {
    own: (ACCELERATOR, "role_plan.batch.micro_train_batch_size_per_gpu",
          "role_plan.critic.num_nodes",
          f"{'critic_model' if own else 'model'}.facts.num_parameters")
    for own in (False, True)}
"""MEM002's paths for a critic, by whether it has its own model (`critic_model`)."""
_CRITIC_FIX = (
    f"Offload the critic ({_set(CRITIC_OFFLOAD)}: true), train LoRA adapters "
    f"({_set(CRITIC_LORA_RANK)}), lower role_plan.batch.micro_train_batch_size_per_gpu "
    "or the lengths, give the critic more GPUs, or take a larger accelerator.")


@rule(
    "MEM003",
    "The forward-only passes fit on one GPU: the policy's old log-probs, the reference's, the "
    "critic's values (weights, one layer, logits of micro_forward_batch_size_per_gpu).",
    example=Example(edits={ACCELERATOR: "L4", "role_plan.batch.micro_forward_batch_size_per_gpu":
                           64}),
)
def forward_fits(check: Check) -> tuple[Finding, ...]:
    """Error when a forward micro batch cannot fit even at its shortest, warning (with the
    length at which it fails) when only its worst case does not, warning above 90%. Each
    forward-only pass is its own peak (`WorkerDispatch.forward` puts one model on the GPU,
    without its optimizer): the policy's (fp32 weights over its GPUs, its Adam state too when
    nothing offloads it) and the reference's (bf16 weights, `trainer.bf16`), each with one
    layer's activations and the bf16 logits of `micro_forward_batch_size_per_gpu`. The
    training micro batch fitting says nothing about it."""
    memory = memory_of(check)
    if memory is None:
        return ()
    spec = check.spec
    policy = _policy_forward(check, memory)
    reference = _reference_forward(check, memory)
    critic = _critic(check, memory, training=False)
    findings = _verdict("MEM003", _FORWARD_PATHS["model"],
                        "The policy's forward pass (old log-probs)", policy, memory,
                        memory.forward, _FORWARD_FIXES[CPU_OFFLOAD])
    if reference is not None:
        model = "reference_model" if spec.reference_model is not None else "model"
        findings += _verdict("MEM003", _FORWARD_PATHS[model], "The reference's forward pass",
                             reference, memory, memory.forward, _FORWARD_FIXES[REF_OFFLOAD])
    if critic is not None:
        model = "critic_model" if spec.critic_model is not None else "model"
        findings += _verdict("MEM003", _FORWARD_PATHS[model],
                             "The critic's forward pass (values)", critic, memory,
                             memory.forward, _FORWARD_FIXES[CRITIC_OFFLOAD])
    return findings


_FORWARD_PATHS = {
    model: (ACCELERATOR, "role_plan.batch.micro_forward_batch_size_per_gpu",
            f"{model}.facts.num_parameters")
    for model in ("model", "reference_model", "critic_model")}
"""MEM003's paths, by the spec field of the model whose pass it is."""
_FORWARD_FIXES = {
    setting: f"Lower role_plan.batch.micro_forward_batch_size_per_gpu, offload the {role} "
             f"({_set(setting)}: true), shard over more GPUs, or take a larger accelerator."
    for setting, role in ((CPU_OFFLOAD, "policy"), (REF_OFFLOAD, "reference"),
                          (CRITIC_OFFLOAD, "critic"))}
"""MEM003's fix, by the offload setting of the model whose pass it is."""


def _engine_budget(check: Check, memory: Memory) -> tuple[float, Term, int, str] | None:
    fraction = memory.settings.gpu_memory
    if not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
        return None  # SET002
    weight_bytes = DTYPE_BYTES.get(str(memory.settings.engine_dtype), 2)
    facts, rollout = memory.facts, check.plan.rollout
    key = (id(facts), rollout.tensor_parallel_size, rollout.pipeline_parallel_size,
           rollout.data_parallel_size, rollout.expert_parallel_size, weight_bytes)
    known = _ENGINES.get(key)
    if known is None:
        engine = EngineShape(*key[1:5])
        known = _ENGINES.put(key, (facts, (
            engine_weights(facts, engine, weight_bytes),
            *kv_bytes_per_token(facts, engine, weight_bytes))))
    weights, per_token, formula = known[1]
    if per_token <= 0:
        return None  # more pipeline stages than layers, or heads wider than the model (GEO)
    return fraction * memory.gpu, weights, per_token, formula


def _engine(check: Check) -> tuple[Memory, tuple[float, Term, int, str]] | None:
    """The memory picture and the engine's budget, when both apply (once per check: MEM004,
    MEM005 and MEM006 read it)."""
    return check.derived(_engine_of)


def _engine_of(check: Check) -> tuple[Memory, tuple[float, Term, int, str]] | None:
    memory = memory_of(check)
    budget = None if memory is None else _engine_budget(check, memory)
    return None if memory is None or budget is None else (memory, budget)


@rule(
    "MEM004",
    "A vLLM engine's weights and the KV cache of one longest sequence fit in "
    "gpu_memory_utilization of its GPU.",
    example=Example(edits={ACCELERATOR: "L4", "settings": {GPU_MEMORY: 0.1}}),
)
def engine_fits(check: Check) -> list[Finding]:
    """Error. vLLM takes `gpu_memory_utilization` x the GPU's memory; what its weights leave is
    the KV cache, and vLLM refuses to start when that cannot hold one sequence of
    `max_model_len` tokens (prompt + generation)."""
    findings: list[Finding] = []
    engine = _engine(check)
    if engine is None:
        return findings
    memory, (limit, weights, per_token, formula) = engine
    needed = per_token * memory.sequence
    if weights.bytes + needed <= limit:
        return findings
    fraction = memory.settings.gpu_memory
    findings.append(error(
        "MEM004",
        (ACCELERATOR, _set(GPU_MEMORY), "role_plan.rollout.tensor_parallel_size",
         "lengths.max_generate_length"),
        f"A vLLM engine rank does not fit in {GPU_MEMORY} {fraction} x {gib(memory.gpu)} = "
        f"{gib(limit)}: {weights.text()} + KV cache of one {memory.sequence}-token sequence "
        f"({formula}) = {gib(needed)} = {gib(weights.bytes + needed)}",
        f"Raise {_set(GPU_MEMORY)} (up to 1 when no trainer shares the GPU), raise "
        "role_plan.rollout.tensor_parallel_size, shorten the lengths, or take a larger "
        "accelerator.",
    ))
    return findings


def _thin_kv(data: dict) -> None:
    """Qwen2.5-14B-Instruct on A100-40GB, engines of TP 1 and 4096 generated tokens"""
    data["model"] = data["tokenizer"] = QWEN25_14B
    data["execution"]["allocation"]["accelerator"] = "A100-40GB"
    data["lengths"]["max_generate_length"] = 4096
    data["settings"] = {CPU_OFFLOAD: True}


@rule(
    "MEM005",
    "Warning: the KV cache holds fewer longest sequences than one prompt's samples.",
    example=Example(edits=_thin_kv),
)
def kv_cache_margin(check: Check) -> list[Finding]:
    """Warning. What the weights leave of `gpu_memory_utilization` is the KV cache; when it holds
    fewer full-length sequences than `n_samples_per_prompt`, vLLM cannot run even one prompt's
    group at full length at once and preempts (recomputes) sequences: generation slows down
    badly as answers grow. (Fewer than one is MEM004's error.)"""
    findings: list[Finding] = []
    engine = _engine(check)
    if engine is None:
        return findings
    memory, (limit, weights, per_token, formula) = engine
    cache = limit - weights.bytes
    sequences = cache / (per_token * memory.sequence)
    group = check.plan.batch.n_samples_per_prompt
    if not 1 <= sequences < group:
        return findings
    fraction = memory.settings.gpu_memory
    findings.append(warning(
        "MEM005",
        (ACCELERATOR, _set(GPU_MEMORY), "role_plan.rollout.tensor_parallel_size",
         "role_plan.batch.n_samples_per_prompt"),
        f"The KV cache of a vLLM engine rank holds {sequences:.1f} sequences of "
        f"{memory.sequence} tokens, fewer than the {group} samples of one prompt: "
        f"{GPU_MEMORY} {fraction} x {gib(memory.gpu)} = {gib(limit)} - {weights.text()} = "
        f"{gib(cache)} of KV cache at {formula}",
        f"Raise role_plan.rollout.tensor_parallel_size (more ranks share the weights and the KV "
        f"heads), raise {_set(GPU_MEMORY)}, shorten lengths.max_generate_length, or take a "
        f"larger accelerator.",
    ))
    return findings


@rule(
    "MEM006",
    "colocate_all: the policy's weights and the engine's weights fit together for the sync.",
    example=Example(edits={ACCELERATOR: "L4", "model": QWEN25_14B, "tokenizer": QWEN25_14B}),
)
def weight_sync_fits(check: Check) -> tuple[Finding, ...]:
    """Error over the GPU's memory, warning above 90%. Under `colocate_all` SkyRL wakes the
    engines' weights while the policy's weights are on the GPU (its optimizer offloaded) to
    broadcast them (`WorkerDispatch.save_weights_for_sampler`)."""
    engine = _engine(check)
    if engine is None or not check.plan.placement.colocate_all:
        return ()
    memory, budget = engine
    facts = memory.facts
    sync = _estimate((weight_sync, id(facts), memory.layout, budget[1], memory.offload), facts,
                     check, "policy")
    return _verdict("MEM006", _SYNC_PATHS, "The weight sync (policy and engine weights together)",
                    sync, memory, memory.activations, _SYNC_FIX)


_SYNC_PATHS = (ACCELERATOR, "role_plan.placement.colocate_all",
               "role_plan.rollout.tensor_parallel_size")
_SYNC_FIX = ("Raise role_plan.rollout.tensor_parallel_size, offload the policy "
             f"({_set(CPU_OFFLOAD)}: true), or take a larger accelerator.")


def memory_estimates(check: Check) -> list[Estimate]:
    """Every phase's estimate for one run (for `rlaunch memory` and the tests): the policy's
    training, the reference's forward, and the engine (weights + the KV cache it is left)."""
    memory = memory_of(check)
    if memory is None:
        return []
    estimates = [_policy_estimate(check, memory), _policy_forward(check, memory)]
    for estimate in (_reference_forward(check, memory), _critic(check, memory, training=True),
                     _critic(check, memory, training=False)):
        if estimate is not None:
            estimates.append(estimate)
    budget = _engine_budget(check, memory)
    if budget is not None:
        limit, weights, _, formula = budget
        estimates.append(of_terms("vLLM engine", weights, Term(
            "KV cache", limit - weights.bytes, f"(what is left; {formula})")))
    return estimates
