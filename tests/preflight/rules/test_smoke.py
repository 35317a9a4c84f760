"""Smoke rules (rlaunch/preflight/rules/smoke.py): what a smoke run shares with its full run."""

from __future__ import annotations

from preflight.helpers import example, findings, messages
from rlaunch.preflight.rules.smoke import smoke_of
from rlaunch.spec import parse_spec

FULL = "the full run example-full@2026.11.29"
SMOKE_CODES = ("SMOKE001", "SMOKE002", "SMOKE003", "SMOKE004", "SMOKE005")


def test_a_faithful_smoke_and_a_run_without_smoke_of_pass() -> None:
    for edits in (smoke_of(), None):
        for code in SMOKE_CODES:
            assert messages(example(edits=edits), code) == [], code


def test_a_smoke_may_shrink_batches_and_data() -> None:
    def smaller(data: dict) -> None:
        smoke_of()(data)
        data["role_plan"]["batch"]["train_batch_size"] = 64
        data["train_data"]["rows"] = 640

    for code in SMOKE_CODES:
        assert messages(example(edits=smaller), code) == [], code


def test_smoke001_same_strategy() -> None:
    data = example(edits=smoke_of("role_plan.strategy", "megatron"))
    assert messages(data, "SMOKE001") == [
        f"smoke role_plan.strategy fsdp differs from {FULL}'s megatron"
    ]


def test_smoke002_every_geometry_difference_with_both_values() -> None:
    def edits(data: dict) -> None:
        smoke_of("role_plan.rollout.num_engines", 4)(data)
        data["smoke_of"]["role_plan"]["placement"]["colocate_all"] = False
        data["smoke_of"]["role_plan"]["critic"] = None

    data = example(edits=edits)
    found = findings(data, "SMOKE002")
    assert [f.message for f in found] == [
        f"smoke role_plan.placement.colocate_all true differs from {FULL}'s false",
        f"smoke role_plan.rollout.num_engines 8 differs from {FULL}'s 4",
    ]
    assert found[1].fix == (
        "Set role_plan.rollout.num_engines to 4: a smoke proves only the geometry it shares"
        " (shrink batch sizes, steps and data instead)."
    )
    geometry = parse_spec(data).role_plan.geometry()
    assert "batch" not in geometry


def test_smoke003_same_allocation_shape_but_not_the_accelerator() -> None:
    data = example(edits=smoke_of("allocation.num_nodes", 2))
    assert messages(data, "SMOKE003") == [
        f"smoke execution.allocation.num_nodes 1 differs from {FULL}'s 2"
    ]
    other_chip = example(edits=smoke_of("allocation.accelerator", "A100"))
    assert messages(other_chip, "SMOKE003") == []


def test_smoke004_same_runtime_pin() -> None:
    data = example(edits=smoke_of("runtime.entrypoint", "skyrl.train.entrypoints.main_generate"))
    [finding] = findings(data, "SMOKE004")
    spec = parse_spec(data)
    assert finding.message == (
        f"smoke runtime {spec.runtime_fingerprint} (skyrl skyrl==0.3.0"
        f" skyrl.train.entrypoints.main_base) differs from {FULL}'s"
        " sha256:902d7e3656b259d4116e0aa4a505f7af51d7697c9fe8501befcfe73962f2cd5d (skyrl"
        " skyrl==0.3.0 skyrl.train.entrypoints.main_generate)"
    )
    # The runtime target's name and its required fixes are not part of the pin.
    renamed = example(edits=smoke_of("runtime.name", "skyrl"))
    assert messages(renamed, "SMOKE004") == []


def test_smoke005_same_handoff_kinds() -> None:
    data = example(edits=smoke_of("handoff_kinds.tokenizer", "tokenizer"))
    assert messages(data, "SMOKE005") == [
        f"smoke tokenizer takes model but {FULL}'s takes tokenizer"
    ]
    missing = example(edits=smoke_of("handoff_kinds.reference_model", "model"))
    assert messages(missing, "SMOKE005") == [
        f"smoke reference_model takes nothing but {FULL}'s takes model"
    ]
