"""Rules for the weight-sync settings SkyRL 0.4.0 added (rlaunch/preflight/rules/
settings_weight_sync.py): they run for 0.4.0 runs only."""

from __future__ import annotations

from typing import Any

from preflight.helpers import example, findings, messages

from rlaunch.preflight import run_preflight
from rlaunch.preflight.engine.registry import registered_rules
from rlaunch.spec import parse_spec

OFFLOAD_KV = "generator.inference_engine.offload_kv_for_weight_sync"
SYNC_MODE = "trainer.policy.model.lora.sync_mode"


def on(release: str, base: str = "colocated-1x8", **settings: Any) -> dict[str, Any]:
    data = example(base)
    data["runtime"]["package"] = f"skyrl=={release}"
    data["settings"] = {name.replace("__", "."): value for name, value in settings.items()}
    return data


def test_the_rules_say_they_mirror_skyrl_0_4_0_only() -> None:
    by_code = {rule.code: rule for rule in registered_rules()}
    assert by_code["SET015"].releases == ("0.4.0",)
    assert by_code["SET016"].releases == ("0.4.0",)
    assert by_code["SET001"].releases is None
    assert by_code["SET015"].describe_releases() == "SkyRL 0.4.0 only"


def test_set015_offload_kv_with_colocate_all_is_refused_on_0_4_0() -> None:
    data = on("0.4.0", **{OFFLOAD_KV: True})
    [finding] = findings(data, "SET015")
    assert finding.paths == (f"settings.{OFFLOAD_KV}", "role_plan.placement.colocate_all")
    assert finding.message == (
        f"{OFFLOAD_KV} with role_plan.placement.colocate_all: SkyRL 0.4.0 offloads the KV cache"
        " during weight sync for disaggregated engines only (colocated engines already sleep"
        " around the sync) and refuses the pair in validate_cfg")
    assert finding.fix == (
        f"Drop the {OFFLOAD_KV} setting, or place the engines apart"
        " (role_plan.placement.colocate_all: false).")


def test_set015_passes_disaggregated_engines_and_refuses_lora() -> None:
    assert messages(on("0.4.0", "disaggregated-8x8-tp8", **{OFFLOAD_KV: True}), "SET015") == []
    lora = on("0.4.0", "disaggregated-8x8-tp8",
              **{OFFLOAD_KV: True, "trainer.policy.model.lora.rank": 16})
    assert messages(lora, "SET015") == [
        f"{OFFLOAD_KV} with LoRA rank 16: SkyRL 0.4.0's LoRA adapter swap does not go through the"
        " sleep/wake broadcast, and validate_cfg refuses the pair"]


def test_set016_sync_mode_values_and_what_memory_needs() -> None:
    assert messages(on("0.4.0", **{SYNC_MODE: "ram"}), "SET016") == [
        f"{SYNC_MODE} is 'ram': SkyRL 0.4.0 takes 'disk' or 'memory'"]
    assert messages(on("0.4.0", **{SYNC_MODE: "disk"}), "SET016") == []
    assert messages(on("0.4.0", **{SYNC_MODE: "memory"}), "SET016") == [
        f"{SYNC_MODE} 'memory' ships Megatron LoRA adapters over the NCCL weight sync in SkyRL"
        " 0.4.0, and this run has strategy fsdp (needs megatron), LoRA rank 0 (needs > 0)"]
    megatron = on("0.4.0", "megatron-moe-5x8", **{
        SYNC_MODE: "memory", "trainer.policy.model.lora.rank": 16,
        "trainer.policy.megatron_config.lora_config.merge_lora": False})
    assert messages(megatron, "SET016") == []


def test_a_0_3_0_run_never_runs_a_0_4_0_rule() -> None:
    """On 0.3.0 the rules would read names 0.3.0 does not have (a KeyError, PRE000): the runner
    skips them, and every 0.3.0 worked example is clean of them."""
    for base in ("colocated-1x8", "disaggregated-8x8-tp8", "megatron-moe-5x8"):
        found = run_preflight(parse_spec(on("0.3.0", base)))
        assert {f.code for f in found} & {"SET015", "SET016", "PRE000"} == set()
        upgraded = run_preflight(parse_spec(on("0.4.0", base)))
        assert {f.code for f in upgraded} & {"SET015", "SET016", "PRE000"} == set()
