"""Geometry: counts, parallelism divisibility and colocation of the policy and the rollout.

The family's other modules: heads_and_experts.py (tensor and expert parallelism against the
model's heads and experts) and geometry_roles.py (the auxiliary roles and their placement)."""

from __future__ import annotations

import math

from rlaunch.memo import Memo
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.parallelism import dimensions
from rlaunch.spec.roleplan import RolloutRole

MEGATRON_ONLY = tuple((name, size.short) for name, size in dimensions() if size.megatron_only)
"""`(field, short name)` of the parallel sizes only Megatron has (rlaunch.spec.parallelism)."""


LISTED_DIVISORS = 10**6
"""`divisors` looks for divisors up to this (and their cofactors): no parallel size is larger,
and a world of more GPUs than its square is a typo whose every divisor no one reads."""


def divisors(number: int) -> str:
    """`number`'s divisors, ascending: all of them up to LISTED_DIVISORS squared (found in pairs
    up to its square root), else those up to LISTED_DIVISORS and their cofactors, the ones
    between left out (`...`)."""
    root = math.isqrt(number)
    small = [d for d in range(1, min(root, LISTED_DIVISORS) + 1) if number % d == 0]
    large = [number // d for d in reversed(small) if number // d != d]
    gap = ", ..." if root > LISTED_DIVISORS else ""
    return ", ".join(map(str, small)) + gap + "".join(f", {d}" for d in large)


def rollout_gpus(rollout: RolloutRole) -> str:
    return (
        f"rollout.num_engines {rollout.num_engines} x TP {rollout.tensor_parallel_size}"
        f" x PP {rollout.pipeline_parallel_size} x DP {rollout.data_parallel_size}"
    )


@rule(
    "GEO001",
    "Every count in the role plan and the allocation is at least 1.",
    example=Example(edits={"role_plan.policy.num_nodes": 0}),
)
def positive_counts(check: Check) -> list[Finding]:
    """Error. A count below 1 has no meaning; SkyRL would divide by it or build empty groups. Goes
    beyond SkyRL, which does not check most counts."""
    findings: list[Finding] = []
    for path, value in check.nonpositive_role_counts:
        findings.append(error(
            "GEO001", (path,),
            f"{path} is {value}; every count in the role plan and the allocation must be"
            " at least 1",
            f"Set {path} to a positive integer (1 when that dimension is unused).",
        ))
    return findings


@rule(
    "GEO002",
    "With strategy fsdp the Megatron sizes (TP, PP, CP, EP, ETP) of the policy and the reference"
    " are 1.",
    example=Example(edits={"role_plan.policy.tensor_parallel_size": 2}),
)
def fsdp_has_no_megatron_sizes(check: Check) -> list[Finding]:
    """Error. Under strategy fsdp SkyRL never reads `megatron_config`
    (skyrl/train/entrypoints/main_base.py `_setup_trainer` picks the FSDP workers), so a
    TP/PP/CP/EP/ETP above 1 would be silently ignored: the plan would not run as written. Goes
    beyond SkyRL."""
    findings: list[Finding] = []
    plan = check.plan
    if plan.strategy != "fsdp":
        return findings
    for name, role in (("policy", plan.policy), ("reference", plan.reference)):
        if role is None:
            continue
        for field, short in MEGATRON_ONLY:
            value = getattr(role, field)
            if value > 1:
                key = (name, field, short, value)
                found = _MEGATRON_SIZE.get(key)
                findings.append(found if found is not None else _MEGATRON_SIZE.put(key, error(
                    "GEO002", (f"role_plan.{name}.{field}", "role_plan.strategy"),
                    f"strategy fsdp has no Megatron {short}, but role_plan.{name}.{field} is"
                    f" {value}",
                    f"Set role_plan.{name}.{field} to 1, or use strategy megatron for {short}.",
                )))
    return findings


_MEGATRON_SIZE: Memo[tuple[str, str, str, int], Finding] = Memo(256)
"""GEO002's finding by all it reads (role, field, size name, value): frozen, shared."""


@rule(
    "GEO003",
    "Megatron: the policy world is divisible by TP x PP x CP.",
    example=Example(
        base="megatron-moe-5x8",
        edits={
            "role_plan.policy.num_nodes": 3,
            "role_plan.policy.num_gpus_per_node": 4,
            "role_plan.policy.tensor_parallel_size": 8,
        },
    ),
)
def megatron_world_divisible(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_batch_sizes`: `policy_world_size % (pp *
    cp * tp) == 0`."""
    findings: list[Finding] = []
    plan = check.plan
    if plan.strategy != "megatron" or not check.roles_ok:
        return findings
    policy = check.parallelism("policy")
    if policy.data_parallel is None:
        findings.append(error(
            "GEO003",
            (
                "role_plan.policy.num_nodes", "role_plan.policy.num_gpus_per_node",
                "role_plan.policy.tensor_parallel_size", "role_plan.policy.pipeline_parallel_size",
                "role_plan.policy.context_parallel_size",
            ),
            f"{policy.world_equation()} is not divisible by {policy.replica_equation()}",
            f"Make TP x PP x CP a divisor of {policy.world} ({divisors(policy.world)}),"
            f" or give the policy a multiple of {policy.replica} GPUs.",
        ))
    return findings


@rule(
    "GEO004",
    "Megatron experts: the policy world is divisible by ETP x EP x PP.",
    example=Example(
        base="megatron-moe-5x8",
        edits={"role_plan.policy.num_nodes": 3, "role_plan.policy.expert_parallel_size": 16},
    ),
)
def megatron_expert_world_divisible(check: Check) -> list[Finding]:
    """Error. Megatron-Core builds expert groups of ETP x EP x PP ranks when the policy workers
    start; a world it does not divide fails there. Goes beyond SkyRL's `validate_cfg`."""
    findings: list[Finding] = []
    plan = check.plan
    if plan.strategy != "megatron" or not check.roles_ok:
        return findings
    policy = check.parallelism("policy")
    if policy.world % policy.expert_group:
        findings.append(error(
            "GEO004",
            (
                "role_plan.policy.num_nodes", "role_plan.policy.num_gpus_per_node",
                "role_plan.policy.expert_tensor_parallel_size",
                "role_plan.policy.expert_parallel_size", "role_plan.policy.pipeline_parallel_size",
            ),
            f"{policy.world_equation()} is not divisible by {policy.expert_equation()}",
            f"Make ETP x EP x PP a divisor of {policy.world} ({divisors(policy.world)}),"
            f" or give the policy a multiple of {policy.expert_group} GPUs.",
        ))
    return findings


@rule(
    "GEO005",
    "FSDP: the policy world, and a critic's, is divisible by the sequence parallel size.",
    example=Example(edits={"role_plan.policy.sequence_parallel_size": 3}),
)
def fsdp_world_divisible(check: Check) -> list[Finding]:
    """Error. skyrl/backends/skyrl_train/workers/worker.py `Worker.init_worker_process_group`
    builds a (world // SP, SP) device mesh, which fails at worker start-up unless SP divides the
    world; skyrl/train/utils/utils.py `validate_batch_sizes` divides by world // SP (a
    ZeroDivisionError when SP exceeds it). The critic runs the policy's SP."""
    findings: list[Finding] = []
    plan = check.plan
    if plan.strategy != "fsdp" or not check.roles_ok:
        return findings
    policy = check.parallelism("policy")
    if policy.data_parallel is None:
        findings.append(error(
            "GEO005",
            (
                "role_plan.policy.num_nodes", "role_plan.policy.num_gpus_per_node",
                "role_plan.policy.sequence_parallel_size",
            ),
            f"{policy.world_equation()} is not divisible by {policy.replica_equation()}",
            f"Set role_plan.policy.sequence_parallel_size to a divisor of {policy.world}"
            f" ({divisors(policy.world)}).",
        ))
    critic = check.parallelism("critic") if plan.critic is not None else None
    if critic is not None and critic.data_parallel is None:
        findings.append(error(
            "GEO005",
            (
                "role_plan.critic.num_nodes", "role_plan.critic.num_gpus_per_node",
                "role_plan.policy.sequence_parallel_size",
            ),
            f"{critic.world_equation()} is not divisible by the {critic.replica_equation()} it"
            " runs (the policy's)",
            f"Give the critic a multiple of {critic.replica} GPUs, or a policy SP that divides"
            f" {critic.world} ({divisors(critic.world)}).",
        ))
    return findings


@rule(
    "GEO006",
    "Inference expert parallelism (EP > 1) needs engine DP x TP == EP.",
    example=Example(base="megatron-moe-5x8", edits={"role_plan.rollout.data_parallel_size": 4}),
)
def inference_expert_parallel(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_inference_engine_cfg`: with EP > 1, DP x
    TP == EP."""
    findings: list[Finding] = []
    rollout = check.plan.rollout
    if not check.roles_ok or rollout.expert_parallel_size <= 1:
        return findings
    dp_tp = rollout.data_parallel_size * rollout.tensor_parallel_size
    if dp_tp != rollout.expert_parallel_size:
        findings.append(error(
            "GEO006",
            (
                "role_plan.rollout.expert_parallel_size", "role_plan.rollout.data_parallel_size",
                "role_plan.rollout.tensor_parallel_size",
            ),
            f"rollout EP {rollout.expert_parallel_size} needs rollout DP x TP == EP, but DP"
            f" {rollout.data_parallel_size} x TP {rollout.tensor_parallel_size} = {dp_tp}",
            f"Make rollout DP x TP equal {rollout.expert_parallel_size}, or set"
            f" role_plan.rollout.expert_parallel_size to {dp_tp}.",
        ))
    return findings


@rule(
    "GEO007",
    "colocate_all: the policy and the rollout engines use the same number of GPUs.",
    example=Example(edits={"role_plan.rollout.num_engines": 4}),
)
def colocated_gpus_match(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_cfg` (placement): under colocate_all,
    policy GPUs == rollout GPUs."""
    findings: list[Finding] = []
    plan = check.plan
    if not plan.placement.colocate_all or not check.roles_ok:
        return findings
    policy, rollout = check.parallelism("policy"), plan.rollout
    if policy.world != rollout.total_gpus:
        findings.append(error(
            "GEO007",
            ("role_plan.placement.colocate_all", "role_plan.policy", "role_plan.rollout"),
            f"placement.colocate_all shares GPUs, but the {policy.world_equation()} differs from"
            f" the rollout's {rollout_gpus(rollout)} = {rollout.total_gpus} GPUs",
            f"Make rollout engines x TP x PP x DP equal {policy.world}, or set"
            " role_plan.placement.colocate_all to false.",
        ))
    return findings


@rule(
    "GEO008",
    "A rollout engine's TP group within one node (warning: across nodes it runs, slowly).",
    example=Example(
        edits={
            "role_plan.rollout.tensor_parallel_size": 16,
            "role_plan.rollout.num_engines": 1,
            "role_plan.policy.num_nodes": 2,
            "role_plan.reference.num_nodes": 2,
            "execution.allocation.num_nodes": 2,
        }
    ),
)
def engine_tp_within_node(check: Check) -> list[Finding]:
    """Warning. SkyRL places every engine in 1-GPU bundles of one PACK placement group
    (skyrl/train/entrypoints/main_base.py `get_colocate_pg`;
    skyrl/backends/skyrl_train/inference_servers/setup.py `create_inference_servers`) and starts
    vLLM with its default `ray` executor, which runs a TP or PP group across nodes. Only the `mp`
    executor under colocate_all needs TP x PP on one node (utils.py
    `validate_inference_engine_cfg`), and rlaunch never selects it. Engine DP ranks are separate
    servers and a pipeline stage boundary sends one activation per step, so only TP, which
    all-reduces in every layer, pays for crossing nodes: slow, not a failure."""
    findings: list[Finding] = []
    if not check.roles_ok:
        return findings
    rollout, width = check.plan.rollout, check.spec.execution.allocation.gpus_per_node
    tp = rollout.tensor_parallel_size
    if tp <= width and width % tp == 0:
        return findings
    if tp > width:
        how = f"is wider than a node of execution.allocation.gpus_per_node {width}"
    else:
        how = (
            f"does not divide execution.allocation.gpus_per_node {width} ({width} % {tp} ="
            f" {width % tp}), so engines packed node by node put some TP groups across two nodes"
        )
    findings.append(warning(
        "GEO008",
        ("role_plan.rollout.tensor_parallel_size", "execution.allocation.gpus_per_node"),
        f"rollout TP {tp} {how}: such an engine all-reduces over the network in every layer."
        " SkyRL runs it (vLLM's ray executor spans nodes), but generation is slow",
        f"Prefer rollout TP a divisor of {width} ({divisors(width)}), with more engines, DP or"
        " PP for the rest.",
    ))
    return findings
