"""Weight-sync settings SkyRL 0.4.0 added and refuses in combination: rules that apply to runs
pinned to SkyRL 0.4.0 only (a 0.3.0 run cannot set these names at all: its catalog refuses them,
naming 0.4.0).

Each rule cites the 0.4.0 code it mirrors, skyrl/train/utils/utils.py
`validate_inference_engine_cfg` (called by `validate_cfg`); tests/contract/test_skyrl_contract.py
runs a case of each through SkyRL 0.4.0's own `validate_cfg` in its contract env, and
tests/contract/test_settings_vs_skyrl.py draws these settings for 0.4.0 runs."""

from __future__ import annotations

from typing import Any

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule

SKYRL_0_4_0 = ("0.4.0",)
OFFLOAD_KV = "generator.inference_engine.offload_kv_for_weight_sync"
LORA_RANK = "trainer.policy.model.lora.rank"
SYNC_MODE = "trainer.policy.model.lora.sync_mode"
MERGE_LORA = "trainer.policy.megatron_config.lora_config.merge_lora"
SYNC_MODES = ("disk", "memory")


def _set(name: str) -> str:
    return f"settings.{name}"


def _on_0_4_0(settings: dict[str, Any]) -> Any:
    def edit(data: dict[str, Any]) -> None:
        data["runtime"]["package"] = "skyrl==0.4.0"
        data["runtime"]["name"] = "skyrl-0.4.0"
        data["settings"] = dict(settings)
    edit.__doc__ = (f"`runtime.package: \"skyrl==0.4.0\"`, `settings: "
                    f"{ {name: value for name, value in settings.items()} }`")
    return edit


@rule(
    "SET015",
    "offload_kv_for_weight_sync is for disaggregated engines without LoRA.",
    example=Example(edits=_on_0_4_0({OFFLOAD_KV: True})),
    releases=SKYRL_0_4_0,
)
def offload_kv_needs_disaggregated_full_weights(check: Check) -> list[Finding]:
    """Error. Mirrors SkyRL 0.4.0's skyrl/train/utils/utils.py `validate_inference_engine_cfg`:
    with `generator.inference_engine.offload_kv_for_weight_sync`, it asserts `not
    trainer.placement.colocate_all` ("colocated mode already sleeps the engines and wakes
    weights/KV cache around sync"), `trainer.policy.model.lora.rank == 0` (the LoRA adapter swap
    does not go through the sleep/wake broadcast) and a weight sync backend other than delta."""
    findings: list[Finding] = []
    if not check.setting(OFFLOAD_KV):
        return findings
    if check.plan.placement.colocate_all:
        findings.append(error(
            "SET015", (_set(OFFLOAD_KV), "role_plan.placement.colocate_all"),
            f"{OFFLOAD_KV} with role_plan.placement.colocate_all: SkyRL 0.4.0 offloads the KV "
            f"cache during weight sync for disaggregated engines only (colocated engines "
            f"already sleep around the sync) and refuses the pair in validate_cfg",
            f"Drop the {OFFLOAD_KV} setting, or place the engines apart "
            f"(role_plan.placement.colocate_all: false).",
        ))
    rank = check.setting(LORA_RANK)
    if rank > 0:
        findings.append(error(
            "SET015", (_set(OFFLOAD_KV), _set(LORA_RANK)),
            f"{OFFLOAD_KV} with LoRA rank {rank}: SkyRL 0.4.0's LoRA adapter swap does not go "
            f"through the sleep/wake broadcast, and validate_cfg refuses the pair",
            f"Drop the {OFFLOAD_KV} setting, or train without LoRA ({LORA_RANK}: 0).",
        ))
    return findings


@rule(
    "SET016",
    "lora.sync_mode is disk or memory; memory is Megatron LoRA adapters over NCCL.",
    example=Example(edits=_on_0_4_0({SYNC_MODE: "memory"})),
    releases=SKYRL_0_4_0,
)
def lora_sync_mode(check: Check) -> list[Finding]:
    """Error. Mirrors SkyRL 0.4.0's skyrl/train/utils/utils.py `validate_inference_engine_cfg`:
    `trainer.policy.model.lora.sync_mode` must be `disk` or `memory`; `memory` requires
    `trainer.strategy` megatron, `lora.rank > 0` with `megatron_config.lora_config.merge_lora`
    false, and `generator.inference_engine.weight_sync_backend` nccl (it ships the adapter
    tensors over the base model's transport)."""
    findings: list[Finding] = []
    mode = check.setting(SYNC_MODE)
    if mode not in SYNC_MODES:
        findings.append(error(
            "SET016", (_set(SYNC_MODE),),
            f"{SYNC_MODE} is {mode!r}: SkyRL 0.4.0 takes 'disk' or 'memory'",
            f"Set {SYNC_MODE} to 'disk' (SkyRL's default) or 'memory'.",
        ))
        return findings
    if mode != "memory":
        return findings
    strategy, rank = check.plan.strategy, check.setting(LORA_RANK)
    merge = check.setting(MERGE_LORA)
    backend = check.plan.rollout.weight_sync_backend
    unmet = []
    if strategy != "megatron":
        unmet.append(("role_plan.strategy", f"strategy {strategy} (needs megatron)"))
    if rank <= 0:
        unmet.append((_set(LORA_RANK), f"LoRA rank {rank} (needs > 0)"))
    elif merge:
        unmet.append((_set(MERGE_LORA), "merge_lora true (needs false: adapters only)"))
    if backend != "nccl":
        unmet.append(("role_plan.rollout.weight_sync_backend",
                      f"weight sync {backend} (needs nccl)"))
    if unmet:
        findings.append(error(
            "SET016", (_set(SYNC_MODE), *(path for path, _ in unmet)),
            f"{SYNC_MODE} 'memory' ships Megatron LoRA adapters over the NCCL weight sync in "
            f"SkyRL 0.4.0, and this run has " + ", ".join(what for _, what in unmet),
            f"Set {SYNC_MODE} to 'disk', or run Megatron with a LoRA rank > 0, {MERGE_LORA} "
            f"false and role_plan.rollout.weight_sync_backend nccl.",
        ))
    return findings
