"""Megatron's optimizer dtypes: the `*_dtype` keys of `optimizer_config_kwargs` that SkyRL or
Megatron-core refuse when the policy's optimizer is built, the same in SkyRL 0.3.0 and 0.4.0.

SkyRL converts every key ending in `_dtype` (skyrl/backends/skyrl_train/distributed/megatron/
optimizer_dtype.py `coerce_optimizer_dtype_kwargs`, called by optimizer.py
`init_megatron_optim_config`); tests/contract/test_optimizer_dtypes_vs_skyrl.py runs that function
of each release on every name and key this module judges. Megatron-core's
`OptimizerConfig.__post_init__` then asserts fp32 state unless the precision-aware optimizer is
on; Megatron-core is not installed here, so that one is cited, not run. Both happen when the
policy's workers start, after the cluster is up and the engines are built."""

from __future__ import annotations

from collections.abc import Mapping

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.preflight.estimates.gpu_memory import (
    OPTIMIZER_DTYPES,
    OPTIMIZER_STATE_DTYPES,
    PRECISION_AWARE,
    optimizer_dtype,
)
from rlaunch.preflight.rules.settings import MEGATRON_OPTIMIZER_KWARGS

FP32_ONLY = ("main_grads_dtype", *OPTIMIZER_STATE_DTYPES)
"""The dtypes Megatron-core's `OptimizerConfig.__post_init__` asserts are fp32 without the
precision-aware optimizer."""
_PATHS = (f"settings.{MEGATRON_OPTIMIZER_KWARGS}", "role_plan.strategy")


@rule(
    "SET017",
    "Megatron's optimizer dtypes are names SkyRL converts, allowed for their state, and fp32"
    " unless use_precision_aware_optimizer is true.",
    example=Example(edits={"settings": {MEGATRON_OPTIMIZER_KWARGS: {"exp_avg_dtype": "bf16"}}},
                    base="megatron-moe-5x8"),
)
def optimizer_dtypes(check: Check) -> list[Finding]:
    """Error, under the Megatron strategy (FSDP does not read `megatron_config`: SET005).
    SkyRL raises ValueError for a `*_dtype` string that names no dtype it knows, and for a state
    dtype its TE FusedAdam does not keep (`main_params_dtype` fp32 or fp16; `exp_avg_dtype` and
    `exp_avg_sq_dtype` fp32, bf16, fp16 or fp8). Megatron-core asserts `main_grads_dtype`,
    `main_params_dtype`, `exp_avg_dtype` and `exp_avg_sq_dtype` are fp32 when
    `use_precision_aware_optimizer` is false (its `if`: any value Python takes as false). MEM002
    costs the state in the dtypes set."""
    return check.shared(_refused_dtypes) if check.plan.strategy == "megatron" else []


def _refused_dtypes(check: Check) -> list[Finding]:
    """SET017's findings under Megatron: of the settings alone, so once per distinct part beside
    the plan (`Check.shared`; callers copy the list, never change it)."""
    findings: list[Finding] = []
    kwargs = check.setting(MEGATRON_OPTIMIZER_KWARGS)
    if not isinstance(kwargs, Mapping):
        return findings
    release = check.spec.skyrl_release
    unaware: list[str] = []
    for key, value in kwargs.items():
        if not isinstance(key, str) or not key.endswith("_dtype") or not isinstance(value, str):
            continue
        dtype = optimizer_dtype(value)
        allowed = OPTIMIZER_STATE_DTYPES.get(key)
        if dtype is None:
            findings.append(error(
                "SET017", _PATHS,
                f"{MEGATRON_OPTIMIZER_KWARGS}.{key} is {value!r}: SkyRL {release} knows no such"
                f" dtype and refuses it (ValueError) when the policy's optimizer is built",
                f"Use one of {', '.join(sorted(OPTIMIZER_DTYPES))}"
                + (f" ({', '.join(sorted(allowed))} for {key})" if allowed else "") + ".",
            ))
        elif allowed is not None and dtype not in allowed:
            findings.append(error(
                "SET017", _PATHS,
                f"{MEGATRON_OPTIMIZER_KWARGS}.{key} is {value!r} ({dtype}): SkyRL {release}"
                f" allows only {', '.join(sorted(allowed))} for {key} (Transformer Engine's"
                f" FusedAdam) and refuses it (ValueError) when the policy's optimizer is built",
                f"Set {key} to one of {', '.join(sorted(allowed))}.",
            ))
        elif key in FP32_ONLY and dtype != "fp32":
            unaware.append(f"{key} {value!r}")
    if unaware and not kwargs.get(PRECISION_AWARE):
        findings.append(error(
            "SET017", _PATHS,
            f"{MEGATRON_OPTIMIZER_KWARGS} sets {', '.join(unaware)} without"
            f" {PRECISION_AWARE}: true; Megatron-core's OptimizerConfig asserts fp32 optimizer"
            " state otherwise, and the policy's workers fail to start",
            f"Set {PRECISION_AWARE}: true in it (Transformer Engine's FusedAdam keeps the state"
            " in those dtypes), or drop the dtypes to keep fp32 state.",
        ))
    return findings
