"""The runner: every rule, every finding, errors first; the worked examples come out right."""

from __future__ import annotations

import pytest

from preflight.helpers import example
from rlaunch.preflight import INTERNAL_CODE, World, all_rules, run_preflight
from rlaunch.preflight.engine.registry import Rule
from rlaunch.preflight.engine.runner import STORE_CODE, rules_for
from rlaunch.spec import parse_spec


def errors(name: str, **edits: object) -> list[str]:
    spec = parse_spec(example(name, edits), name)
    return [f.code for f in run_preflight(spec) if f.is_error]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("colocated-1x8", []),
        ("disaggregated-8x8-tp8", []),
        ("megatron-moe-5x8", []),
        ("disaggregated-8x8-tp1", []),  # 28 idle GPUs: an ALLOC001 warning
        ("tp8-on-42-heads", ["GEO016", "GEO017"]),
    ],
)
def test_worked_examples(name: str, expected: list[str]) -> None:
    assert errors(name) == expected


def test_disaggregated_tp1_message_shows_the_sum_and_the_allocation() -> None:
    spec = parse_spec(example("disaggregated-8x8-tp1"), "tp1")
    [alloc] = [f for f in run_preflight(spec) if f.code == "ALLOC001"]
    assert "32 + 4 = 36" in alloc.message and "64" in alloc.message


def test_worked_examples_are_clean_in_a_clean_world() -> None:
    world = World(env={}, git_dirty=False, launcher_commit="a" * 40, store_prefix="/srv/s")
    for name in ("colocated-1x8", "disaggregated-8x8-tp8", "megatron-moe-5x8"):
        spec = parse_spec(example(name), name)
        assert [f.code for f in run_preflight(spec, scope="all", world=world)
                if f.is_error] == []


def test_every_problem_is_reported_at_once_errors_first() -> None:
    data = example(edits={
        "role_plan.policy.sequence_parallel_size": 3,
        "checkpoint.export_final": False,
        "model.revision": "main",
        "version": "2026.13.01",
        "execution.executor": "slurm",
    })
    found = run_preflight(parse_spec(data, "many"))
    assert [(f.severity, f.code) for f in found] == [
        ("error", "GEO005"), ("error", "ART001"), ("error", "ART001"), ("error", "VER001"),
        ("error", "EXEC001"), ("error", "EXEC007"), ("warning", "BATCH010"),
    ]


def test_spec_scope_runs_no_world_rule_and_all_scope_needs_a_world() -> None:
    assert {r.scope for r in rules_for("spec")} == {"spec"}
    assert len(rules_for("all")) == len(all_rules())
    spec = parse_spec(example(), "x")
    with pytest.raises(ValueError, match="scope 'all' needs a world"):
        run_preflight(spec, scope="all")
    with pytest.raises(ValueError, match="scope must be 'spec' or 'all', got 'world'"):
        run_preflight(spec, scope="world")  # type: ignore[arg-type]


def test_a_failing_store_read_is_the_store_s_and_the_other_rules_still_run() -> None:
    def broken_ledger(name: str, version: str) -> None:
        raise OSError("ledger unreachable")

    world = World(ledger=broken_ledger, git_dirty=True, store_prefix="/srv/s")
    found = run_preflight(parse_spec(example(), "x"), scope="all", world=world)
    # The network is not a bug in rlaunch: no PRE000, a store finding per rule that could not read.
    assert [f.code for f in found if f.code == INTERNAL_CODE] == []
    assert [f.message for f in found if f.code == STORE_CODE] == [
        f"rule {code} could not read the store (OSError: ledger unreachable); its check did not"
        " run"
        for code in ("VER002", "VER005", "VER006")
    ]
    assert "VER004" in {f.code for f in found}


def test_a_crashing_world_rule_is_still_a_bug_in_rlaunch() -> None:
    def broken_ledger(name: str, version: str) -> None:
        raise KeyError("status")

    world = World(ledger=broken_ledger, git_dirty=False, store_prefix="/srv/s")
    found = run_preflight(parse_spec(example(), "x"), scope="all", world=world)
    assert [f.message for f in found if f.code == INTERNAL_CODE] == [
        f"rule {code} crashed on this spec (KeyError: 'status'); its check did not run"
        for code in ("VER002", "VER005", "VER006")
    ]


def test_rule_objects_describe_themselves() -> None:
    first: Rule = all_rules()[0]
    assert (first.code, first.family, first.scope) == ("GEO001", "geometry", "spec")
    assert first.summary == "Every count in the role plan and the allocation is at least 1."
