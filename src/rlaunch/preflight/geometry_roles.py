"""Geometry of the auxiliary roles: which roles exist, and where they are placed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rlaunch.preflight.check import Check
from rlaunch.preflight.finding import Finding, error, warning
from rlaunch.preflight.registry import Example, rule
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
def reference_when_kl(check: Check) -> Iterator[Finding]:
    spec = check.spec
    reference = spec.role_plan.reference
    if check.use_kl and reference is None:
        yield error(
            "GEO010", ("role_plan.reference", "algorithm.kl"),
            f"KL is used ({_kl_fields(check)}) but role_plan.reference is null",
            "Add a role_plan.reference (colocated_with_policy true shares the policy's GPUs),"
            " or turn KL off.",
        )
    if not check.use_kl:
        for path, value in (("role_plan.reference", reference),
                            ("reference_model", spec.reference_model)):
            if value is not None:
                yield warning(
                    "GEO010", (path, "algorithm.kl"),
                    f"{path} is set but KL is off ({_kl_fields(check)}), so it is never used",
                    f"Set {path} to null, or turn KL on.",
                )


@rule(
    "GEO011",
    "The reference's colocated_with_policy agrees with the placement.",
    example=Example(
        base="disaggregated-8x8-tp8", edits={"role_plan.placement.colocate_policy_ref": False}
    ),
)
def reference_placement(check: Check) -> Iterator[Finding]:
    plan = check.spec.role_plan
    if plan.reference is None:
        return
    placement = plan.placement
    expected = placement.colocate_all or placement.colocate_policy_ref
    if plan.reference.colocated_with_policy != expected:
        yield error(
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
        )


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
def critic_when_gae(check: Check) -> Iterator[Finding]:
    spec = check.spec
    estimator = spec.algorithm.advantage_estimator
    critic = spec.role_plan.critic
    if estimator == "gae" and critic is None:
        yield error(
            "GEO012", ("role_plan.critic", "algorithm.advantage_estimator"),
            "algorithm.advantage_estimator gae trains a value model, but role_plan.critic is null",
            "Add a role_plan.critic (and a critic_model), or use grpo, rloo or reinforce++.",
        )
    elif estimator != "gae" and critic is not None:
        yield error(
            "GEO012", ("role_plan.critic", "algorithm.advantage_estimator"),
            f"role_plan.critic is set but algorithm.advantage_estimator {estimator} uses no"
            " critic",
            "Set role_plan.critic to null, or use advantage_estimator gae.",
        )


@rule(
    "GEO013",
    "The critic's colocated_with_policy equals placement.colocate_all.",
    example=Example(edits=_with_critic(colocated=False)),
)
def critic_placement(check: Check) -> Iterator[Finding]:
    plan = check.spec.role_plan
    if plan.critic is None:
        return
    if plan.critic.colocated_with_policy != plan.placement.colocate_all:
        yield error(
            "GEO013",
            ("role_plan.critic.colocated_with_policy", "role_plan.placement.colocate_all"),
            "role_plan.critic.colocated_with_policy is"
            f" {str(plan.critic.colocated_with_policy).lower()} but placement.colocate_all is"
            f" {str(plan.placement.colocate_all).lower()}; the critic shares the policy's GPUs"
            " exactly when everything is colocated",
            "Set role_plan.critic.colocated_with_policy to"
            f" {str(plan.placement.colocate_all).lower()}.",
        )


@rule(
    "GEO014",
    "A colocated reference or critic has the policy's footprint (nodes and GPUs per node).",
    example=Example(edits={"role_plan.reference.num_nodes": 2}),
)
def colocated_footprint(check: Check) -> Iterator[Finding]:
    plan = check.spec.role_plan
    policy = plan.policy
    for name, role in (("reference", plan.reference), ("critic", plan.critic)):
        if role is None or not role.colocated_with_policy:
            continue
        if (role.num_nodes, role.num_gpus_per_node) != (policy.num_nodes,
                                                         policy.num_gpus_per_node):
            yield error(
                "GEO014",
                (f"role_plan.{name}.num_nodes", f"role_plan.{name}.num_gpus_per_node"),
                f"role_plan.{name} is colocated with the policy but uses {name}.num_nodes"
                f" {role.num_nodes} x {name}.num_gpus_per_node {role.num_gpus_per_node}, the"
                f" policy policy.num_nodes {policy.num_nodes} x policy.num_gpus_per_node"
                f" {policy.num_gpus_per_node}",
                f"Set role_plan.{name}.num_nodes to {policy.num_nodes} and num_gpus_per_node to"
                f" {policy.num_gpus_per_node}, or give it GPUs of its own.",
            )
