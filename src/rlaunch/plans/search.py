"""Search the role plans of a GPU budget that preflight accepts, and rank them.

A search starts from a base RunSpec (model, data, runtime, lengths, algorithm and settings, as
a run pins them) and a budget (nodes x GPUs per node of one accelerator). It enumerates role
plans level by level:

1. the trainers (`trainer` level): strategy, placement (all colocated, or the policy on GPUs
   of its own with the reference beside it or on GPUs of its own), the policy's footprint and
   parallel sizes (FSDP: SP; Megatron: TP, PP, EP), the reference with the policy's sizes;
2. the engines (`rollout` level): TP, DP and EP of an engine over the GPUs the trainers leave;
3. the concessions (`settings` level), only those the user allows (`Allowed`): FSDP's CPU
   offload of the reference, the policy or both, Megatron's CPU offload of the policy's
   optimizer state, and LoRA adapters of one rank on the policy, cheapest first
   (`concessions`);
4. the micro batches (`batch` level): micro train batch m and micro forward batch 2m, largest
   first; the first m preflight accepts is the geometry's plan, and smaller ones are not tried.
A geometry's plan is the first valid one in that order: the fewest concessions that fit, at
their largest micro batch.

Every candidate is preflighted by `run_preflight` (spec scope, every rule): a plan is valid
when no finding is an error. Pruning comes from the findings themselves: an error of a
geometry rule holds for every plan that makes the same choices at the levels its field paths
lie in (the base spec's own fields are fixed), so that whole family is skipped (an engine TP
that does not divide the heads is not tried again under any other trainer). The test suite
checks the pruned search against brute force on small budgets. Three memory rules prune by
what their estimates read (TRAINER_MEMORY, ENGINE_MEMORY): a trainer phase that overflows at
micro batch m overflows under every engine layout at m.

Ranking (`Facts.key`) orders valid plans by facts preflight computes, not by speed: fewest idle
GPUs, then the cheapest concession (none, then offload, then LoRA), then fewest warnings, then
fewest engines crossing a node boundary, then the largest memory headroom of the tightest
training phase (preflight's estimates). It predicts no throughput.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding
from rlaunch.preflight.engine.registry import registered_rules
from rlaunch.preflight.engine.runner import run_preflight
from rlaunch.preflight.rules.memory import memory_estimates, memory_of, optimizer_offload
from rlaunch.preflight.rules.settings import MEGATRON_OPTIMIZER_KWARGS
from rlaunch.spec.io import SpecError, parse_spec
from rlaunch.spec.run import RunSpec

POLICY_OFFLOAD = "trainer.policy.fsdp_config.cpu_offload"
REFERENCE_OFFLOAD = "trainer.ref.fsdp_config.cpu_offload"
LORA_RANK = "trainer.policy.model.lora.rank"
"""The settings the search may vary, where the user allows them (`Allowed`), with
MEGATRON_OPTIMIZER_KWARGS: the ones preflight's memory rules read
(rlaunch.preflight.rules.memory `_policy_estimate`, `_policy_forward`, `_reference_forward`,
`weight_sync_fits`)."""
OPTIMIZER_OFFLOADED = {"optimizer_cpu_offload": True, "optimizer_offload_fraction": 1.0}
"""What the search sets in MEGATRON_OPTIMIZER_KWARGS, over the base spec's own keys: every
parameter's Adam moments on the CPU (the precision-aware optimizer, which would move the fp32
master params too, stays as the spec sets it)."""

LEVELS = ("trainer", "rollout", "settings", "batch")
"""The search's levels, outermost first."""
LEVEL_PATHS = {
    "trainer": ("role_plan.strategy", "role_plan.policy", "role_plan.reference",
                "role_plan.critic", "role_plan.placement"),
    "rollout": ("role_plan.rollout",),
    "settings": tuple(f"settings.{name}" for name in (POLICY_OFFLOAD, REFERENCE_OFFLOAD,
                                                       LORA_RANK)),
    "batch": ("role_plan.batch.micro_train_batch_size_per_gpu",
              "role_plan.batch.micro_forward_batch_size_per_gpu"),
}
"""The spec fields each level decides; every other field is the base spec's, fixed."""
MICRO_BATCHES = (8, 4, 2, 1)
"""Micro train batches tried, largest first (the micro forward batch is twice it)."""
STRATEGIES = ("fsdp", "megatron")
ENGINE_PHASE = "vLLM engine"
"""The phase name of the engine's estimate (rlaunch.preflight.rules.memory.memory_estimates)."""


@dataclass(frozen=True)
class Budget:
    """What the plans may use: nodes x GPUs per node of one accelerator."""

    nodes: int
    gpus_per_node: int
    accelerator: str

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


def level_of(path: str) -> int:
    """The index of the level that decides a field path; -1 for a field the base spec fixes."""
    for index, level in enumerate(LEVELS):
        if any(path == prefix or path.startswith(prefix + ".") for prefix in LEVEL_PATHS[level]):
            return index
    return -1


PRUNING_FAMILIES = frozenset({"geometry"})
"""The rule families whose findings name every field they read, so that an error rules out
every plan making the same choices at those fields' levels. Other rules (memory estimates
read the parallel sizes their paths leave out) rule out their own plan only."""


TRAINER_MEMORY = frozenset({"MEM002", "MEM003"})
"""Memory rules of the trainers' phases (policy training; the policy's and the reference's
forward passes): their estimates read the trainers' sizes, placement, offload, LoRA rank and
micro batches (rlaunch.preflight.rules.memory `_policy_estimate`, `_policy_forward`,
`_reference_forward`), never the engines. Such an error holds for every engine layout under
the same trainers, concessions and micro batch."""
ENGINE_MEMORY = frozenset({"MEM004"})
"""The engine's memory rule: `_engine_budget` reads the engine's shape and the engine's
settings (gpu_memory_utilization, model_dtype), never the micro batches, offload or LoRA, so its
error holds for every concession and micro batch of the same trainers and engines."""


@lru_cache(maxsize=1)
def _families() -> dict[str, str]:
    return {rule.code: rule.family for rule in registered_rules()}


def decided_by(finding: Finding) -> frozenset[int]:
    """The levels a geometry finding's fields belong to: the same error holds for every plan
    that makes the same choices at those levels. Every level (it prunes nothing but its own
    plan) for a finding of another family, or one that names no field of a level."""
    if finding.code in TRAINER_MEMORY:
        return frozenset({LEVELS.index("trainer"), LEVELS.index("settings"),
                          LEVELS.index("batch")})
    if finding.code in ENGINE_MEMORY:
        return frozenset({LEVELS.index("trainer"), LEVELS.index("rollout")})
    if _families().get(finding.code) not in PRUNING_FAMILIES:
        return frozenset(range(len(LEVELS)))
    levels = frozenset(level for path in finding.paths if (level := level_of(path)) >= 0)
    # A finding on the base spec's fields alone may still hang on the plan (a setting only
    # one strategy reads): it rules out its own plan only.
    return levels or frozenset(range(len(LEVELS)))


def _divisors(number: int) -> list[int]:
    return [d for d in range(1, number + 1) if number % d == 0]


def _sizes(strategy: str, gpus: int, moe: bool) -> Iterator[dict[str, int]]:
    """A trainer's parallel sizes over `gpus` GPUs."""
    base = {"tensor_parallel_size": 1, "pipeline_parallel_size": 1, "context_parallel_size": 1,
            "expert_parallel_size": 1, "expert_tensor_parallel_size": 1,
            "sequence_parallel_size": 1}
    if strategy == "fsdp":
        for sp in _divisors(gpus):
            yield {**base, "sequence_parallel_size": sp}
        return
    for tp in _divisors(gpus):
        for pp in (1, 2):
            if gpus % (tp * pp):
                continue
            for ep in (_divisors(gpus) if moe else [1]):
                yield {**base, "tensor_parallel_size": tp, "pipeline_parallel_size": pp,
                       "expert_parallel_size": ep}


def _footprints(budget: Budget, gpus: int) -> list[tuple[int, int]]:
    """`(nodes, GPUs per node)` holding `gpus` GPUs: whole nodes, or part of one node."""
    width = budget.gpus_per_node
    if gpus <= width:
        return [(1, gpus)]
    return [(gpus // width, width)] if gpus % width == 0 else []


def _trainer_splits(budget: Budget) -> list[int]:
    """GPUs the policy may take when it has GPUs of its own: a divisor of a node, or whole
    nodes, leaving at least one GPU to the engines."""
    width = budget.gpus_per_node
    splits = [g for g in _divisors(width) if g < budget.gpus]
    splits += [n * width for n in range(2, budget.nodes)]
    return sorted(set(splits))


@dataclass(frozen=True)
class Trainers:
    """The trainer level's choice."""

    strategy: str
    colocate_all: bool
    reference: str | None
    """`colocated` (the policy's GPUs), `separate` (GPUs of its own, the policy's shape), or
    None when the run has no reference."""
    nodes: int
    gpus_per_node: int
    sizes: tuple[tuple[str, int], ...]

    @property
    def trainer_gpus(self) -> int:
        gpus = self.nodes * self.gpus_per_node
        return 2 * gpus if self.reference == "separate" else gpus


def trainer_choices(budget: Budget, strategies: tuple[str, ...], with_reference: bool,
                    moe: bool) -> Iterator[Trainers]:
    references: tuple[str | None, ...] = ("colocated", "separate") if with_reference else (None,)
    for strategy in strategies:
        layouts = [(True, "colocated" if with_reference else None, budget.nodes,
                    budget.gpus_per_node)]
        for gpus in _trainer_splits(budget):
            for nodes, width in _footprints(budget, gpus):
                for reference in references:
                    used = 2 * gpus if reference == "separate" else gpus
                    if used < budget.gpus:
                        layouts.append((False, reference, nodes, width))
        for colocate_all, reference, nodes, width in layouts:
            for sizes in _sizes(strategy, nodes * width, moe):
                yield Trainers(strategy, colocate_all, reference, nodes, width,
                               tuple(sizes.items()))


@dataclass(frozen=True)
class Allowed:
    """The concessions the user allows the search to make where a plan does not fit without
    them (`rlaunch plans --allow-offload`, `--allow-lora RANK`)."""

    offload: bool = False
    """FSDP's CPU offload (FSDP2's CPUOffloadPolicy: SkyRL 0.3.0 and 0.4.0
    skyrl/backends/skyrl_train/distributed/fsdp_strategy.py `FSDPStrategy._fsdp_init_model`)
    of the reference, the policy, or both; Megatron's CPU offload of the policy's optimizer
    state (`OPTIMIZER_OFFLOADED`; rlaunch.preflight.estimates.gpu_memory `OptimizerOffload`)."""
    lora_rank: int = 0
    """LoRA adapters of this rank on the policy (0: full fine-tuning only)."""


@dataclass(frozen=True)
class Concession:
    """Settings a plan adds to the base spec's so that it fits: none, offload, LoRA."""

    settings: tuple[tuple[str, Any], ...]
    """`(name, value)`; Megatron's optimizer offload is a mapping (never changed)."""
    words: str
    """What it is, for the ranking's line; empty for none."""
    tag: str
    """What it adds to a plan's name; empty for none."""

    def __hash__(self) -> int:
        # A trainer choice's concessions differ in their tags (`concessions`); the settings may
        # hold a mapping, which has no hash.
        return hash(self.tag)


NO_CONCESSION = Concession((), "", "")


def concessions(trainers: Trainers, allowed: Allowed, base_settings: dict[str, Any]
                ) -> list[Concession]:
    """The concessions of a trainer choice, cheapest first: none; offloading (FSDP: the reference,
    one forward pass a step, then the policy, then both; Megatron: the policy's optimizer
    state); then LoRA, alone and with each offload. An offload that changes nothing of the base
    spec's settings (the base already offloads the reference) is left out."""
    offloads: list[tuple[dict[str, Any], str, str]] = [({}, "", "")]
    """`(settings, whose, tag)` of each offload, none first."""
    if allowed.offload and trainers.strategy == "fsdp":
        fsdp = [((POLICY_OFFLOAD,), "policy")]
        if trainers.reference is not None:
            fsdp = [((REFERENCE_OFFLOAD,), "reference"), *fsdp,
                    ((POLICY_OFFLOAD, REFERENCE_OFFLOAD), "policy and reference")]
        for names, whose in fsdp:
            settings = {name: True for name in names if base_settings.get(name) is not True}
            if settings:
                offloads.append((settings, whose, "offload-" + "-".join(
                    "ref" if name == REFERENCE_OFFLOAD else "policy" for name in names)))
    if allowed.offload and trainers.strategy == "megatron":
        own = base_settings.get(MEGATRON_OPTIMIZER_KWARGS)
        kwargs = {**(own if isinstance(own, dict) else {}), **OPTIMIZER_OFFLOADED}
        if optimizer_offload(kwargs) != optimizer_offload(own):
            offloads.append(({MEGATRON_OPTIMIZER_KWARGS: kwargs}, "policy's optimizer state",
                             "offload-optimizer"))
    loras = [0, allowed.lora_rank] if allowed.lora_rank > 0 else [0]
    found, seen = [], set()
    for rank in loras:
        for offload, whose, tag in offloads:
            settings = {**offload, LORA_RANK: rank} if rank else offload
            key = json.dumps(settings, sort_keys=True)
            if key in seen:
                continue  # the base offloads part of it: the same as another
            seen.add(key)
            words = [f"LoRA rank {rank}"] if rank else []
            tags = [f"lora{rank}"] if rank else []
            if whose:
                words.append(f"CPU offload of the {whose}")
                tags.append(tag)
            found.append(Concession(tuple(sorted(settings.items())), ", ".join(words),
                                    "-".join(tags)))
    return found


def rollout_choices(budget: Budget, trainers: Trainers, moe: bool) -> Iterator[dict[str, int]]:
    """Engines over the GPUs the trainers leave (all of them under colocate_all)."""
    gpus = budget.gpus if trainers.colocate_all else budget.gpus - trainers.trainer_gpus
    for tp in _divisors(gpus):
        for dp in _divisors(gpus // tp):
            for ep in ((1, tp * dp) if moe and tp * dp > 1 else (1,)):
                yield {"num_engines": gpus // (tp * dp), "tensor_parallel_size": tp,
                       "pipeline_parallel_size": 1, "data_parallel_size": dp,
                       "expert_parallel_size": ep}


def role_plan_of(base: dict[str, Any], trainers: Trainers, rollout: dict[str, int],
                 micro: int) -> dict[str, Any]:
    """The role plan document of one candidate (backends and batch targets from the base)."""
    plan = base["role_plan"]
    sizes = dict(trainers.sizes)
    policy = {"num_nodes": trainers.nodes, "num_gpus_per_node": trainers.gpus_per_node, **sizes}
    reference = None
    if trainers.reference is not None:
        reference = {"colocated_with_policy": trainers.reference == "colocated", **policy}
    return {
        "strategy": trainers.strategy,
        "policy": policy,
        "reference": reference,
        "critic": None,
        "rollout": {**rollout, "backend": plan["rollout"]["backend"],
                    "weight_sync_backend": plan["rollout"]["weight_sync_backend"]},
        "placement": {"colocate_all": trainers.colocate_all,
                      "colocate_policy_ref": trainers.reference == "colocated"},
        "batch": {**plan["batch"], "micro_train_batch_size_per_gpu": micro,
                  "micro_forward_batch_size_per_gpu": 2 * micro},
    }


def candidate(base: dict[str, Any], budget: Budget, role_plan: dict[str, Any],
              settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The base spec with this role plan (and these settings over its own) on the budget's
    allocation."""
    execution = dict(base["execution"])
    execution["allocation"] = {**execution["allocation"], "num_nodes": budget.nodes,
                               "gpus_per_node": budget.gpus_per_node,
                               "accelerator": budget.accelerator}
    document = {**base, "role_plan": role_plan, "execution": execution}
    if settings:
        document["settings"] = {**base.get("settings", {}), **settings}
    return document


@dataclass(frozen=True)
class Candidate:
    trainers: Trainers
    rollout: dict[str, int]
    micro: int
    concession: Concession = NO_CONCESSION
    rank: int = 0
    """The concession's place among its trainers' (0: none; lower is cheaper)."""

    def choices(self) -> tuple[Any, ...]:
        """The choice made at each level, hashable."""
        return (self.trainers, tuple(self.rollout.items()), self.concession, self.micro)


def candidates(base: dict[str, Any], budget: Budget, strategies: tuple[str, ...],
               allowed: Allowed = Allowed()) -> Iterator[Candidate]:
    """Every candidate of the space, level by level."""
    with_reference = base["role_plan"]["reference"] is not None
    moe = bool((base["model"].get("facts") or {}).get("num_experts"))
    base_settings = base.get("settings") or {}
    for trainers in trainer_choices(budget, strategies, with_reference, moe):
        kinds = concessions(trainers, allowed, base_settings)
        for rollout in rollout_choices(budget, trainers, moe):
            for rank, concession in enumerate(kinds):
                for micro in MICRO_BATCHES:
                    yield Candidate(trainers, rollout, micro, concession, rank)


@dataclass
class Valid:
    """A plan preflight accepts, with its findings (warnings only) and its spec."""

    spec: RunSpec
    findings: list[Finding]
    candidate: Candidate


@dataclass
class SearchResult:
    valid: list[Valid] = field(default_factory=list)
    preflighted: int = 0
    """Candidates preflighted."""
    pruned: int = 0
    """Candidates skipped because an earlier finding ruled out their family."""
    invalid: int = 0


def preflight_candidate(base: dict[str, Any], budget: Budget, found: Candidate
                        ) -> tuple[RunSpec | None, list[Finding]]:
    document = candidate(base, budget, role_plan_of(base, found.trainers, found.rollout,
                                                    found.micro),
                         dict(found.concession.settings))
    try:
        spec = parse_spec(document, "plans")
    except SpecError:
        return None, []
    return spec, run_preflight(spec)


def search(base: dict[str, Any], budget: Budget, strategies: tuple[str, ...] = STRATEGIES,
           *, allowed: Allowed = Allowed(), prune: bool = True,
           preflight: Callable[..., tuple[RunSpec | None, list[Finding]]] = preflight_candidate,
           report: Callable[[SearchResult], None] | None = None) -> SearchResult:
    """The valid plans of the space: with `prune`, each geometry (trainers and engines) with
    its cheapest concession at the largest micro batch preflight accepts, families an error
    rules out skipped; without, every valid plan (brute force). `report(result so far)` every
    REPORT_EVERY candidates, for a progress display (a large budget searches for minutes)."""
    result = SearchResult()
    # For each set of levels, the choices at those levels that an error rules out.
    excluded: dict[tuple[int, ...], set[tuple[Any, ...]]] = {}
    # Geometries with a valid plan: concessions are tried cheapest first and micro batches
    # largest first, so the first found is the cheapest concession at its largest micro batch.
    settled: set[tuple[Any, ...]] = set()
    for seen, found in enumerate(candidates(base, budget, strategies, allowed), start=1):
        if report is not None and seen % REPORT_EVERY == 0:
            report(result)
        choices = found.choices()
        if prune and (choices[:2] in settled or any(
                tuple(choices[level] for level in levels) in ruled_out
                for levels, ruled_out in excluded.items())):
            result.pruned += 1
            continue
        spec, findings = preflight(base, budget, found)
        result.preflighted += 1
        errors = [finding for finding in findings if finding.is_error]
        if spec is None or errors:
            result.invalid += 1
            for finding in errors:
                levels = tuple(sorted(decided_by(finding)))
                excluded.setdefault(levels, set()).add(
                    tuple(choices[level] for level in levels))
            continue
        settled.add(choices[:2])
        result.valid.append(Valid(spec, findings, found))
    return result


REPORT_EVERY = 1024
"""Candidates between two of `search`'s reports."""


def largest_micro(plans: list[Valid]) -> list[Valid]:
    """Each geometry's plan with the cheapest concession, at its largest micro batch, in the
    order geometries come."""
    best: dict[tuple[Any, ...], Valid] = {}
    for valid in plans:
        key, found = valid.candidate.choices()[:2], valid.candidate
        if key not in best or (found.rank, -found.micro) < (best[key].candidate.rank,
                                                            -best[key].candidate.micro):
            best[key] = valid
    return list(best.values())


# -- ranking ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What a plan is ranked by, all from preflight's own models."""

    idle: int
    warnings: int
    crossing: int
    """Engines whose GPUs span two nodes (laid out in order over the rollout's GPUs)."""
    headroom: tuple[tuple[str, float], ...]
    """`(phase, free share of one GPU)` of every memory phase preflight estimates."""
    rollout_gpus: int
    training_gpus: int
    colocated: bool
    concession: int = 0
    """The plan's concession, by cost: 0 none, then offload (reference, policy, both), then
    LoRA (alone, then with each offload): `concessions`' order."""
    needs: str = ""
    """The concession in words; empty for none."""

    @property
    def tightest(self) -> float:
        """The free share of the trainers' tightest phase (an engine takes the share
        gpu_memory_utilization gives it whatever the plan, so it does not rank)."""
        return min((free for phase, free in self.headroom if phase != ENGINE_PHASE),
                   default=1.0)

    @property
    def key(self) -> tuple[int, int, int, int, float]:
        """Fewest idle GPUs, the cheapest concession (none before offload before LoRA: offload
        costs speed, LoRA changes what is trained), fewest warnings, fewest engines crossing
        nodes, most headroom in the tightest training phase."""
        return (self.idle, self.concession, self.warnings, self.crossing,
                -round(self.tightest, 3))


def facts_of(valid: Valid, budget: Budget) -> Facts:
    plan = valid.spec.role_plan
    rollout = plan.rollout
    training = plan.policy.world_size
    if plan.reference is not None and not plan.reference.colocated_with_policy:
        training += plan.reference.world_size
    colocated = plan.placement.colocate_all
    used = budget.gpus if colocated else training + rollout.total_gpus
    width, per_engine = budget.gpus_per_node, rollout.gpus_per_engine
    crossing = sum(1 for engine in range(rollout.num_engines)
                   if (engine * per_engine) // width != ((engine + 1) * per_engine - 1) // width)
    check = Check(valid.spec)
    gpu = memory_of(check)
    headroom: tuple[tuple[str, float], ...] = ()
    if gpu is not None:
        headroom = tuple((estimate.phase, 1 - estimate.total / gpu.gpu)
                         for estimate in memory_estimates(check))
    return Facts(
        idle=budget.gpus - used, warnings=len(valid.findings), crossing=crossing,
        headroom=headroom, rollout_gpus=rollout.total_gpus, training_gpus=training,
        colocated=colocated, concession=valid.candidate.rank,
        needs=valid.candidate.concession.words,
    )


@dataclass(frozen=True)
class Ranked:
    valid: Valid
    facts: Facts


def ranked(result: SearchResult, budget: Budget) -> list[Ranked]:
    """One plan per geometry (its largest micro batch preflight accepts), best first."""
    plans = [Ranked(valid, facts_of(valid, budget)) for valid in largest_micro(result.valid)]
    plans.sort(key=lambda plan: plan.facts.key)
    return plans


def describe(facts: Facts) -> str:
    """The facts a plan is ranked by, in one line."""
    if facts.colocated:
        gpus = f"rollout and training share all {facts.rollout_gpus} GPUs (colocated)"
    else:
        gpus = f"rollout {facts.rollout_gpus} GPUs, training {facts.training_gpus} GPUs"
    room = ", ".join(f"{phase} {100 * free:.0f}%" for phase, free in facts.headroom) or "n/a"
    needs = f"; needs {facts.needs}" if facts.needs else ""
    return (f"idle GPUs {facts.idle}{needs}; warnings {facts.warnings}; engines crossing nodes"
            f" {facts.crossing}; {gpus}; memory free per GPU: {room}")


def _value(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_value(key)}: {_value(item)}"
                               for key, item in value.items()) + "}"
    return str(value)


def _section(name: str, fields: dict[str, Any] | None) -> str:
    if fields is None:
        return f"    {name}=None,"
    inner = ", ".join(f"{key}={_value(value)}" for key, value in fields.items())
    return f"    {name}=dict({inner}),"


def settings_lines(settings: tuple[tuple[str, Any], ...]) -> str:
    """The settings a plan adds to the run's, as comment lines that are each a `settings`
    entry of an rl_run (they live on the run, not in its role_plan)."""
    if not settings:
        return ""
    entries = "".join(f"\n#     \"{name}\": {_value(value)}," for name, value in settings)
    return ("\n# and the rl_run that names this plan sets (add to its settings={...}; they are"
            " not role_plan fields):" + entries)


def build_snippet(spec: RunSpec, name: str) -> str:
    """The plan as a `role_plan(...)` target, every field written out."""
    plan = spec.role_plan.model_dump(mode="json")
    lines = ["role_plan(", f'    name="{name}",', f'    strategy="{plan["strategy"]}",']
    for section in ("policy", "reference", "critic", "rollout", "placement", "batch"):
        lines.append(_section(section, plan[section]))
    lines.append(")")
    return "\n".join(lines)


def plan_name(facts: Facts, spec: RunSpec, tag: str = "") -> str:
    plan = spec.role_plan
    policy = plan.policy
    sizes = (f"tp{policy.tensor_parallel_size}-pp{policy.pipeline_parallel_size}"
             f"-ep{policy.expert_parallel_size}" if plan.strategy == "megatron"
             else f"sp{policy.sequence_parallel_size}")
    rollout = plan.rollout
    where = "colocated" if facts.colocated else f"policy{policy.world_size}"
    return (f"{plan.strategy}-{where}-{sizes}-engines{rollout.num_engines}"
            f"x-tp{rollout.tensor_parallel_size}-dp{rollout.data_parallel_size}"
            f"-ep{rollout.expert_parallel_size}") + (f"-{tag}" if tag else "")


def same_plan(spec: RunSpec, other: dict[str, Any]) -> bool:
    """Whether a spec's role plan is `other` (a role plan document)."""
    return spec.role_plan.model_dump(mode="json") == other


def _geometry(plan: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in plan.items() if key != "batch"}


REASONS = ("fewer idle GPUs", "a cheaper concession (none, then offload, then LoRA)",
           "fewer warnings", "fewer engines crossing nodes",
           "more memory headroom in its tightest training phase")


def standing(plans: list[Ranked], own: dict[str, Any]) -> str:
    """Where a plan (a role plan document, such as an experiment's) stands among the ranked
    plans, and why the plans above it rank higher."""
    for index, plan in enumerate(plans):
        if _geometry(plan.valid.spec.role_plan.model_dump(mode="json")) == _geometry(own):
            break
    else:
        return "its own plan's geometry is not among the valid plans"
    micro = plan.valid.spec.role_plan.batch.micro_train_batch_size_per_gpu
    said = (f"its own plan is valid; its geometry ranks {index + 1} of {len(plans)} (at micro"
            f" batch {micro}, its own {own['batch']['micro_train_batch_size_per_gpu']})")
    if index == 0:
        return said + " (first)"
    mine, best = plan.facts.key, plans[0].facts.key
    reason = next(REASONS[i] for i in range(len(REASONS)) if best[i] != mine[i]) \
        if best != mine else "the same facts (ties keep the search's order)"
    return (f"{said}; the first ranks higher by {reason}: first: {describe(plans[0].facts)};"
            f" its own: {describe(plan.facts)}")

