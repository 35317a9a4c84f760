"""Geometry of the auxiliary roles: which roles exist, and where they are placed."""

from __future__ import annotations

from typing import Any

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.preflight.rules.geometry import divisors
from rlaunch.spec.examples import QWEN25_1_5B


def _kl_fields(check: Check) -> str:
    kl = check.spec.algorithm.kl
    return (
        f"algorithm.kl.use_kl_loss {str(kl.use_kl_loss).lower()},"
        f" use_kl_in_reward {str(kl.use_kl_in_reward).lower()}"
    )


@rule(
    "GEO010",
    "A reference role exists when KL is used (and only then).",
    example=Example(edits={"role_plan.reference": None}),
)
def reference_when_kl(check: Check) -> list[Finding]:
    """Error without a reference when KL is on (SkyRL would build a reference from a role the plan
    does not place); warning for a reference or reference model that nothing uses
    (skyrl/train/trainer.py `build_models` builds the reference only when `use_kl_loss` or
    `use_kl_in_reward`)."""
    findings: list[Finding] = []
    spec = check.spec
    reference = check.plan.reference
    if check.use_kl and reference is None:
        findings.append(error(
            "GEO010", ("role_plan.reference", "algorithm.kl"),
            f"KL is used ({_kl_fields(check)}) but role_plan.reference is null",
            "Add a role_plan.reference (colocated_with_policy true shares the policy's GPUs),"
            " or turn KL off.",
        ))
    if not check.use_kl:
        for path, value in (("role_plan.reference", reference),
                            ("reference_model", spec.reference_model)):
            if value is not None:
                findings.append(warning(
                    "GEO010", (path, "algorithm.kl"),
                    f"{path} is set but KL is off ({_kl_fields(check)}), so it is never used",
                    f"Set {path} to null, or turn KL on.",
                ))
    return findings


@rule(
    "GEO011",
    "The reference's colocated_with_policy agrees with the placement.",
    example=Example(
        base="disaggregated-8x8-tp8", edits={"role_plan.placement.colocate_policy_ref": False}
    ),
)
def reference_placement(check: Check) -> list[Finding]:
    """Error. rlaunch renders the reference's placement from `placement`; a `colocated_with_policy`
    that disagrees means the plan says two things. Goes beyond SkyRL (consistency of the plan)."""
    findings: list[Finding] = []
    plan = check.plan
    if plan.reference is None:
        return findings
    placement = plan.placement
    expected = placement.colocate_all or placement.colocate_policy_ref
    if plan.reference.colocated_with_policy != expected:
        findings.append(error(
            "GEO011",
            (
                "role_plan.reference.colocated_with_policy", "role_plan.placement.colocate_all",
                "role_plan.placement.colocate_policy_ref",
            ),
            "role_plan.reference.colocated_with_policy is"
            f" {str(plan.reference.colocated_with_policy).lower()} but placement.colocate_all"
            f" {str(placement.colocate_all).lower()} and colocate_policy_ref"
            f" {str(placement.colocate_policy_ref).lower()} place the reference"
            f" {'on the policy GPUs' if expected else 'on its own GPUs'}",
            "Make role_plan.reference.colocated_with_policy equal"
            " (placement.colocate_all or placement.colocate_policy_ref).",
        ))
    return findings


def _with_critic(colocated: bool) -> Any:
    def edit(data: dict[str, Any]) -> None:
        data["algorithm"]["advantage_estimator"] = "gae"
        data["critic_model"] = dict(QWEN25_1_5B, name="qwen2.5-1.5b-critic")
        data["role_plan"]["critic"] = {
            "colocated_with_policy": colocated, "num_nodes": 1, "num_gpus_per_node": 8,
        }
        data["role_plan"]["batch"]["critic_mini_batch_size"] = 64

    edit.__doc__ = (
        "advantage estimator `gae` with a `critic_model` and a critic role of 1 x 8 GPUs,"
        f" `colocated_with_policy: {str(colocated).lower()}`"
    )
    return edit


@rule(
    "GEO012",
    "A critic role exists exactly when the advantage estimator is gae.",
    example=Example(edits={"algorithm.advantage_estimator": "gae"}),
)
def critic_when_gae(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_cfg` (gae needs `critic.model.path`); a
    critic without gae is never trained, so it is refused as a plan that does not mean what it
    says."""
    findings: list[Finding] = []
    spec = check.spec
    estimator = spec.algorithm.advantage_estimator
    critic = check.plan.critic
    if estimator == "gae" and critic is None:
        findings.append(error(
            "GEO012", ("role_plan.critic", "algorithm.advantage_estimator"),
            "algorithm.advantage_estimator gae trains a value model, but role_plan.critic is null",
            "Add a role_plan.critic (and a critic_model), or use grpo, rloo or reinforce++.",
        ))
    elif estimator != "gae" and critic is not None:
        findings.append(error(
            "GEO012", ("role_plan.critic", "algorithm.advantage_estimator"),
            f"role_plan.critic is set but algorithm.advantage_estimator {estimator} uses no"
            " critic",
            "Set role_plan.critic to null, or use advantage_estimator gae.",
        ))
    return findings


@rule(
    "GEO013",
    "The critic's colocated_with_policy equals placement.colocate_all.",
    example=Example(edits=_with_critic(colocated=False)),
)
def critic_placement(check: Check) -> list[Finding]:
    """Error. skyrl/train/trainer.py `build_models` shares the policy's GPUs with the critic
    exactly under colocate_all and gives it its own otherwise; the plan must say the same."""
    findings: list[Finding] = []
    plan = check.plan
    if plan.critic is None:
        return findings
    if plan.critic.colocated_with_policy != plan.placement.colocate_all:
        findings.append(error(
            "GEO013",
            ("role_plan.critic.colocated_with_policy", "role_plan.placement.colocate_all"),
            "role_plan.critic.colocated_with_policy is"
            f" {str(plan.critic.colocated_with_policy).lower()} but placement.colocate_all is"
            f" {str(plan.placement.colocate_all).lower()}; the critic shares the policy's GPUs"
            " exactly when everything is colocated",
            "Set role_plan.critic.colocated_with_policy to"
            f" {str(plan.placement.colocate_all).lower()}.",
        ))
    return findings


@rule(
    "GEO014",
    "A colocated reference or critic uses the policy's GPU count (colocate_all) or its nodes and"
    " GPUs per node (colocate_policy_ref).",
    example=Example(edits={"role_plan.reference.num_nodes": 2}),
)
def colocated_footprint(check: Check) -> list[Finding]:
    """Error. Under colocate_all skyrl/train/trainer.py `RayPPOTrainer.build_models` asserts
    num_policy_gpus == num_ref_gpus (and the critic's): totals only, so another shape of the same
    total passes; a different total crashes at start-up after the placement group is reserved.
    Under colocate_policy_ref skyrl/train/utils/utils.py `validate_cfg` asserts equal nodes and
    GPUs per node (the pair shares whole-node bundles)."""
    findings: list[Finding] = []
    plan = check.plan
    if not check.roles_ok:
        return findings
    policy = check.parallelism("policy")
    for name, role in (("reference", plan.reference), ("critic", plan.critic)):
        if role is None or not role.colocated_with_policy:
            continue
        layout = check.parallelism(name)
        paths = (f"role_plan.{name}.num_nodes", f"role_plan.{name}.num_gpus_per_node")
        if plan.placement.colocate_all:
            # trainer.build_models asserts num_policy_gpus == num_ref_gpus (and the critic's)
            # after main_base has reserved the shared placement group: a start-up crash.
            if layout.world != policy.world:
                findings.append(error(
                    "GEO014", paths,
                    f"role_plan.{name} shares the policy's GPUs under placement.colocate_all but"
                    f" uses {layout.footprint_equation()} GPUs, the policy"
                    f" {policy.footprint_equation()};"
                    " SkyRL's trainer.build_models asserts they are equal at start-up",
                    f"Give role_plan.{name} {policy.world} GPUs (num_nodes x"
                    " num_gpus_per_node), or set placement.colocate_all to false.",
                ))
        elif name == "reference" and check.use_kl and (
            (layout.nodes, layout.gpus_per_node) != (policy.nodes, policy.gpus_per_node)
        ):
            # utils.validate_cfg: colocate_policy_ref asserts equal nodes and GPUs per node,
            # since the pair shares one placement group of whole-node bundles.
            findings.append(error(
                "GEO014", paths,
                f"role_plan.reference shares the policy's GPUs under"
                f" placement.colocate_policy_ref but uses {layout.footprint_equation()}, the"
                f" policy {policy.footprint_equation()}; SkyRL's validate_cfg needs the same"
                " nodes and GPUs per node",
                f"Set role_plan.reference.num_nodes to {policy.nodes} and num_gpus_per_node"
                f" to {policy.gpus_per_node}, or give it GPUs of its own.",
            ))
    return findings


@rule(
    "GEO019",
    "The reference's world is a whole number (at least 1) of its own TP x PP x CP (Megatron) or"
    " SP (FSDP) replicas.",
    example=Example(
        base="megatron-moe-5x8",
        edits={
            "role_plan.placement.colocate_policy_ref": False,
            "role_plan.reference.colocated_with_policy": False,
            "role_plan.reference.num_nodes": 1,
            "role_plan.reference.num_gpus_per_node": 2,
        },
    ),
)
def reference_world_divisible(check: Check) -> list[Finding]:
    """Error. Megatron: mirrors skyrl/train/utils/utils.py `validate_batch_sizes` (`ref_world_size
    % (pp * cp * tp) == 0`, on `trainer.ref`'s own sizes). FSDP: validate_batch_sizes floors
    ref_world // SP, then skyrl/backends/skyrl_train/workers/worker.py
    `Worker.init_worker_process_group` fails to build the (world // SP, SP) mesh at start-up:
    beyond `validate_cfg`."""
    findings: list[Finding] = []
    plan = check.plan
    if plan.reference is None or not check.use_kl or not check.roles_ok:
        return findings
    reference = check.parallelism("reference")
    if reference.data_parallel is not None:
        return findings
    world, divisor = reference.world, reference.replica
    fields = (
        ("tensor_parallel_size", "pipeline_parallel_size", "context_parallel_size")
        if plan.strategy == "megatron" else ("sequence_parallel_size",)
    )
    # Below one replica, SkyRL's validate_batch_sizes floors the DP to 0.
    findings.append(error(
        "GEO019",
        ("role_plan.reference.num_nodes", "role_plan.reference.num_gpus_per_node",
         *(f"role_plan.reference.{field}" for field in fields)),
        f"reference world {reference.footprint_equation()} is not divisible by its"
        f" {reference.replica_equation()}"
        + (f" (reference DP {world // divisor})" if world < divisor else
           f" ({world} % {divisor} = {world % divisor})"),
        f"Make the reference's {'TP x PP x CP' if plan.strategy == 'megatron' else 'SP'}"
        f" (now {divisor}) a divisor of {world}"
        f" ({divisors(world)}), or give the"
        f" reference a multiple of {divisor} GPUs.",
    ))
    return findings
