"""Every plan `rlaunch plans` prints, for the budgets of issue 27, is accepted by SkyRL's own
`validate_cfg` (skyrl/train/utils/utils.py) of the run's release: each printed plan's spec is
rendered to its launch YAML's `skyrl` subtree and checked in the contract env (one CPython 3.12
subprocess, tests/contract/skyrl_harness.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contract.test_preflight_vs_skyrl import run_skyrl
from contract.test_skyrl_contract import subtree_for_skyrl
from plans.test_search import experiment
from rlaunch.plans.search import Budget, ranked, search

TOP = 5
"""Plans `rlaunch plans` prints by default."""

BUDGETS = {
    "qwen2.5-1.5b-1x8-h100": ("qwen2.5-1.5b-gsm8k", Budget(1, 8, "H100"), ("fsdp", "megatron")),
    "qwen3-30b-a3b-2x8-h100-fsdp": ("qwen3-30b-a3b-megatron", Budget(2, 8, "H100"), ("fsdp",)),
    "qwen3-30b-a3b-2x8-h100-megatron": ("qwen3-30b-a3b-megatron", Budget(2, 8, "H100"),
                                        ("megatron",)),
    "qwen2.5-14b-8x-a100-40gb": ("qwen2.5-14b-separate-ref", Budget(1, 8, "A100-40GB"),
                                 ("fsdp", "megatron")),
}


def printed_cases() -> dict[str, dict[str, Any]]:
    cases = {}
    for label, (name, budget, strategies) in BUDGETS.items():
        plans = ranked(search(experiment(name), budget, strategies), budget)[:TOP]
        assert len(plans) == TOP, f"{label}: fewer than {TOP} valid plans"
        for index, plan in enumerate(plans, start=1):
            cases[f"{label}-{index}"] = {"skyrl": subtree_for_skyrl(plan.valid.spec),
                                         "plan": plan.valid.spec.role_plan.model_dump()}
    return cases


def test_skyrl_validate_cfg_accepts_every_printed_plan(tmp_path: Path) -> None:
    cases = printed_cases()
    report = run_skyrl(cases, tmp_path, "0.3.0")
    refused = {case_id: (outcome["error"], cases[case_id]["plan"])
               for case_id, outcome in report["results"].items() if not outcome["accepted"]}
    assert report["skyrl_version"] == "0.3.0"
    assert len(report["results"]) == TOP * len(BUDGETS)
    assert refused == {}, "SkyRL's validate_cfg refuses printed plans"
