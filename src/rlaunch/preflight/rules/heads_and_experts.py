"""Geometry against the model: tensor parallelism vs heads, expert parallelism vs experts."""

from __future__ import annotations

from rlaunch.memo import Memo
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule


@rule(
    "GEO015",
    "Megatron: the policy TP divides the model's attention heads.",
    example=Example(
        base="megatron-moe-5x8",
        edits={"model.facts.num_attention_heads": 30, "model.facts.num_key_value_heads": 6},
    ),
)
def trainer_tp_divides_heads(check: Check) -> list[Finding]:
    """Error. Megatron-Core splits attention heads over TP when the policy model is built; a TP
    that does not divide them fails there. Beyond SkyRL's `validate_cfg`."""
    findings: list[Finding] = []
    facts = check.facts
    plan = check.plan
    if facts is None or plan.strategy != "megatron" or not check.roles_ok:
        return findings
    tp, heads = plan.policy.tensor_parallel_size, facts.num_attention_heads
    if heads % tp:
        findings.append(error(
            "GEO015",
            ("role_plan.policy.tensor_parallel_size", "model.facts.num_attention_heads"),
            f"policy TP {tp} does not divide model.facts.num_attention_heads {heads}"
            f" ({heads} % {tp} = {heads % tp})",
            f"Set role_plan.policy.tensor_parallel_size to a divisor of {heads}.",
        ))
    return findings


@rule(
    "GEO016",
    "The rollout engines' TP divides the model's attention heads.",
    example=Example(base="tp8-on-42-heads"),
)
def inference_tp_divides_heads(check: Check) -> list[Finding]:
    """Error. vLLM splits attention heads over TP when an engine loads the model and refuses a TP
    that does not divide them. Beyond SkyRL's `validate_cfg`."""
    findings: list[Finding] = []
    facts = check.facts
    if facts is None or not check.roles_ok:
        return findings
    tp, heads = check.plan.rollout.tensor_parallel_size, facts.num_attention_heads
    if heads % tp:
        findings.append(error(
            "GEO016",
            ("role_plan.rollout.tensor_parallel_size", "model.facts.num_attention_heads"),
            f"rollout TP {tp} does not divide model.facts.num_attention_heads {heads}"
            f" ({heads} % {tp} = {heads % tp})",
            f"Set role_plan.rollout.tensor_parallel_size to a divisor of {heads}.",
        ))
    return findings


@rule(
    "GEO017",
    "The rollout engines' TP and the model's KV heads divide one another.",
    example=Example(
        base="disaggregated-8x8-tp8", edits={"model.facts.num_key_value_heads": 5}
    ),
)
def inference_tp_and_kv_heads(check: Check) -> list[Finding]:
    """Error. vLLM's QKVParallelLinear splits KV heads over TP ranks when TP <= KV heads and
    replicates them when TP > KV heads; both are exact divisions that fail at load time. Beyond
    SkyRL's `validate_cfg`."""
    findings: list[Finding] = []
    facts = check.facts
    if facts is None or not check.roles_ok:
        return findings
    tp, kv = check.plan.rollout.tensor_parallel_size, facts.num_key_value_heads
    if tp <= kv and kv % tp:
        how = f"{kv} KV heads do not split over TP {tp} ({kv} % {tp} = {kv % tp})"
    elif tp > kv and tp % kv:
        how = (
            f"TP {tp} > {kv} KV heads, and {kv} KV heads cannot be replicated evenly over TP"
            f" {tp} ({tp} % {kv} = {tp % kv})"
        )
    else:
        return findings
    findings.append(error(
        "GEO017",
        ("role_plan.rollout.tensor_parallel_size", "model.facts.num_key_value_heads"),
        f"rollout TP {tp} and model.facts.num_key_value_heads {kv}: {how}",
        f"Set role_plan.rollout.tensor_parallel_size to a divisor or a multiple of {kv}.",
    ))
    return findings


@rule(
    "GEO018",
    "Expert parallelism (EP or ETP > 1) only with an MoE model, and EP divides its experts.",
    example=Example(base="megatron-moe-5x8", edits={"model.facts.num_experts": None}),
)
def expert_parallel_needs_experts(check: Check) -> list[Finding]:
    """Error. Expert parallelism on a dense model, or an EP that does not divide the experts, fails
    when Megatron-Core or vLLM shards the experts. Beyond SkyRL's `validate_cfg`."""
    findings: list[Finding] = []
    facts = check.facts
    if facts is None or not check.roles_ok:
        return findings
    plan = check.plan
    sizes = [
        ("policy EP", "role_plan.policy.expert_parallel_size", plan.policy.expert_parallel_size),
        ("rollout EP", "role_plan.rollout.expert_parallel_size", plan.rollout.expert_parallel_size),
    ]
    etp = plan.policy.expert_tensor_parallel_size
    experts = facts.num_experts
    if experts is None:
        sizes.append(("policy ETP", "role_plan.policy.expert_tensor_parallel_size", etp))
    for name, path, size in sizes:
        if size <= 1 or (experts is not None and not experts % size):
            continue
        key = (name, path, size, experts)
        found = _EXPERTS.get(key)
        findings.append(found if found is not None else _EXPERTS.put(key, _experts_finding(*key)))
    return findings


_EXPERTS: Memo[tuple[str, str, int, int | None], Finding] = Memo(256)
"""GEO018's finding by all it reads (size name, path, size, the model's experts)."""


def _experts_finding(name: str, path: str, size: int, experts: int | None) -> Finding:
    if experts is None:
        return error(
            "GEO018", (path, "model.facts.num_experts"),
            f"{name} {size} needs an MoE model, but model.facts.num_experts is null"
            " (a dense model)",
            f"Set {path} to 1 for a dense model.",
        )
    return error(
        "GEO018", (path, "model.facts.num_experts"),
        f"{name} {size} does not divide model.facts.num_experts {experts}"
        f" ({experts} % {size} = {experts % size})",
        f"Set {path} to a divisor of {experts}.",
    )
