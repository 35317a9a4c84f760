"""Every plan `rlaunch plans` prints, for the budgets of issue 27 and for budgets that fit only
with the offload or LoRA the user allows, is accepted by SkyRL's own
`validate_cfg` (skyrl/train/utils/utils.py) of the run's release: each printed plan's spec is
rendered to its launch YAML's `skyrl` subtree and checked in the contract env (one subprocess,
tests/contract/skyrl_harness.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contract.test_preflight_vs_skyrl import run_skyrl
from contract.test_skyrl_contract import subtree_for_skyrl
from plans.test_search import experiment
from rlaunch.plans.search import Allowed, Budget, ranked, search

TOP = 5
"""Plans `rlaunch plans` prints by default."""

BUDGETS = {
    "qwen2.5-1.5b-1x8-h100": ("qwen2.5-1.5b-gsm8k", Budget(1, 8, "H100"), ("fsdp", "megatron"),
                              Allowed()),
    "qwen3-30b-a3b-2x8-h100-fsdp": ("qwen3-30b-a3b-megatron", Budget(2, 8, "H100"), ("fsdp",),
                                    Allowed()),
    "qwen3-30b-a3b-2x8-h100-megatron": ("qwen3-30b-a3b-megatron", Budget(2, 8, "H100"),
                                        ("megatron",), Allowed()),
    "qwen2.5-14b-8x-a100-40gb": ("qwen2.5-14b-separate-ref", Budget(1, 8, "A100-40GB"),
                                 ("fsdp", "megatron"), Allowed()),
    # Budgets where no plan fits without a concession (tests/plans/test_search.py): every
    # printed plan offloads the policy (its optimizer state under Megatron), or trains LoRA
    # adapters (FSDP and Megatron).
    "qwen2.5-14b-4x-a100-40gb-offload": ("qwen2.5-14b-separate-ref", Budget(1, 4, "A100-40GB"),
                                         ("fsdp",), Allowed(offload=True)),
    "qwen2.5-14b-4x-a100-40gb-lora-fsdp": ("qwen2.5-14b-separate-ref",
                                           Budget(1, 4, "A100-40GB"), ("fsdp",),
                                           Allowed(lora_rank=32)),
    "qwen3-30b-a3b-1x4-h100-lora-megatron": ("qwen3-30b-a3b-megatron", Budget(1, 4, "H100"),
                                             ("megatron",), Allowed(lora_rank=16)),
    # Megatron's optimizer state on the CPU (optimizer_config_kwargs).
    "qwen3-30b-a3b-1x8-a100-40gb-offload-megatron": ("qwen3-30b-a3b-megatron",
                                                     Budget(1, 8, "A100-40GB"), ("megatron",),
                                                     Allowed(offload=True)),
}


def dotted(tree: dict[str, Any], name: str) -> Any:
    for part in name.split("."):
        tree = tree[part]
    return tree


def printed_cases() -> dict[str, dict[str, Any]]:
    cases = {}
    for label, (name, budget, strategies, allowed) in BUDGETS.items():
        plans = ranked(search(experiment(name), budget, strategies, allowed=allowed),
                       budget)[:TOP]
        assert len(plans) == TOP, f"{label}: fewer than {TOP} valid plans"
        if allowed != Allowed():
            assert all(plan.valid.candidate.concession.settings for plan in plans), label
        for index, plan in enumerate(plans, start=1):
            skyrl = subtree_for_skyrl(plan.valid.spec)
            for name, value in plan.valid.candidate.concession.settings:
                assert dotted(skyrl, name) == value, (label, name)  # SkyRL is given them
            cases[f"{label}-{index}"] = {"skyrl": skyrl,
                                         "plan": plan.valid.spec.role_plan.model_dump(),
                                         "settings": plan.valid.candidate.concession.settings}
    return cases


def test_skyrl_validate_cfg_accepts_every_printed_plan(tmp_path: Path) -> None:
    cases = printed_cases()
    report = run_skyrl(cases, tmp_path, "0.3.0")
    refused = {case_id: (outcome["error"], cases[case_id]["plan"], cases[case_id]["settings"])
               for case_id, outcome in report["results"].items() if not outcome["accepted"]}
    assert report["skyrl_version"] == "0.3.0"
    assert len(report["results"]) == TOP * len(BUDGETS) == 40
    assert refused == {}, "SkyRL's validate_cfg refuses printed plans"
