"""What parse_spec and run_preflight reuse from plan to plan changes no result.

parse_spec validates a document's part beside the plan (`role_plan`, `execution`) and each
section of a role plan once per distinct content (rlaunch.spec.io); run_preflight runs a rule
declared `reads_plan=False` once per distinct set of the spec's other fields
(rlaunch.preflight.engine.runner). Here every plan of the throughput benchmark's generator, the
worked examples and every rule's example (each breaks its rule), plus documents that fail to
parse, go through both paths: cold (memos emptied before each document) and warm; specs, parse
errors and every finding must be equal.
"""

from __future__ import annotations

import copy
import math
import dataclasses
import functools
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rlaunch.memo import Memo, per_object
from rlaunch.preflight import Finding, all_rules, run_preflight
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine import registry
from rlaunch.preflight.engine import runner
from rlaunch.preflight.engine.runner import (
    _rules_for_release,
    forget_reused,
    plan_rules,
    rules_for,
)
from rlaunch.spec import RunSpec, SpecError, parse_spec
from rlaunch.spec.examples import WORKED_EXAMPLES, worked_example
from rlaunch.spec.io import ROLE_PLAN_SECTIONS, forget_parsed
from rlaunch.spec.roleplan import RolePlan

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "preflight_throughput.py"


def benchmark() -> ModuleType:
    found = importlib.util.spec_from_file_location("preflight_throughput", BENCHMARK)
    if found is None or found.loader is None:
        raise ImportError(BENCHMARK)
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def unparsable(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Documents that fail: in the plan, in the execution, beside the plan, and both."""
    bad = []
    for edit in (("role_plan", "policy", "tensor_parallel_size", "2"),
                 ("execution", "allocation", "num_nodes", 1.5),
                 ("lengths", "max_turns", True),
                 ("role_plan", "batch", "spare", 1)):
        document = copy.deepcopy(documents[0])
        *parents, last, value = edit
        node = document
        for part in parents:
            node = node[part]
        node[last] = value
        bad.append(document)
    both = copy.deepcopy(bad[0])
    both["seed"] = -1.0
    return [*bad, both]


def documents() -> list[dict[str, Any]]:
    found = benchmark().random_plans(300, seed=5)
    found += [worked_example(name) for name in sorted(WORKED_EXAMPLES)]
    found += [rule.example.spec_data() for rule in all_rules()]
    return found + unparsable(found)


def outcome(document: dict[str, Any]) -> tuple[Any, ...]:
    try:
        spec = parse_spec(copy.deepcopy(document), "memo")
    except SpecError as err:
        return ("refused", err.problems)
    findings: list[Finding] = run_preflight(spec)
    return (spec.model_dump(), spec.fingerprint, findings)


def test_reused_parses_and_findings_equal_fresh_ones() -> None:
    every = documents()
    fresh = []
    for document in every:
        forget_parsed()
        forget_reused()
        fresh.append(outcome(document))
    forget_parsed()
    forget_reused()
    assert [outcome(document) for document in every] == fresh  # the memos fill as they go
    assert [outcome(document) for document in every] == fresh  # and are all warm
    assert sum(result[0] == "refused" for result in fresh) >= 5


def test_the_profiles_rules_with_those_beside_the_plan_find_what_run_preflight_finds() -> None:
    """benchmarks/preflight_throughput.py times the rules `plan_rules` gives, on its Check: with
    the rules that read nothing of the plan, they are every rule run_preflight runs, and find
    what it finds."""
    for document in benchmark().random_plans(40, seed=11):
        spec = parse_spec(document, "profile")
        rules, check = plan_rules(spec)
        release = _rules_for_release("spec", spec.skyrl_release)
        assert rules == tuple(rule for rule in release if rule.reads_plan)
        beside = [rule for rule in release if not rule.reads_plan]
        found = [finding for rule in (*rules, *beside) for finding in rule.func(check)]
        assert sorted(found) == sorted(run_preflight(spec))


def test_a_warm_parse_shares_the_part_beside_the_plan() -> None:
    first, second = benchmark().random_plans(2, seed=1)
    second = {**copy.deepcopy(first), "role_plan": second["role_plan"]}
    one, two = parse_spec(first), parse_spec(second)
    assert one.model_dump(exclude={"role_plan"}) == two.model_dump(exclude={"role_plan"})
    assert two.model_dump() == RunSpec.model_validate(second).model_dump()
    assert two.model is parse_spec(copy.deepcopy(first)).model  # reused, not validated again


def test_equal_role_plan_sections_are_the_very_same_objects() -> None:
    """parse_spec validates each section of a role plan once per distinct content: plans that
    share a section share its object (what a rule may key a memo on, holding it)."""
    first, second = benchmark().random_plans(2, seed=3)
    second["role_plan"]["placement"] = copy.deepcopy(first["role_plan"]["placement"])
    second["role_plan"]["batch"] = copy.deepcopy(first["role_plan"]["batch"])
    second["role_plan"]["batch"]["eval_batch_size"] += 1
    one, two = parse_spec(first).role_plan, parse_spec(second).role_plan
    assert two.placement is one.placement
    assert two.batch is not one.batch
    assert two.batch.eval_batch_size == one.batch.eval_batch_size + 1
    assert two == RolePlan.model_validate(second["role_plan"])
    assert sorted(ROLE_PLAN_SECTIONS) == [
        "batch", "critic", "placement", "policy", "reference", "rollout"]


def test_a_checks_plan_holds_the_role_plans_fields_and_answers_as_it_does() -> None:
    """Check.plan is the plan's fields as plain attributes (rules read it ~100 times a spec):
    every field the very object the RolePlan holds, and its methods the RolePlan's answers."""
    for name in sorted(WORKED_EXAMPLES):
        spec = parse_spec(worked_example(name))
        plan = Check(spec).plan
        assert plan.model is spec.role_plan
        for field in RolePlan.model_fields:
            assert getattr(plan, field) is getattr(spec.role_plan, field), (name, field)
        for role in ("policy", "reference", "critic"):
            assert plan.parallelism(role) == spec.role_plan.parallelism(role), (name, role)
        assert plan.geometry() == spec.role_plan.geometry()


def test_a_section_equal_in_value_but_not_in_type_is_not_reused() -> None:
    """`True == 1`: a section whose count is `True` is refused, however often `1` was seen."""
    document = worked_example("colocated-1x8")
    document["role_plan"]["placement"] = {"colocate_all": True, "colocate_policy_ref": True}
    parse_spec(copy.deepcopy(document))
    document["role_plan"]["policy"]["num_nodes"] = True
    with pytest.raises(SpecError) as refused:
        parse_spec(document)
    assert refused.value.problems == [
        "role_plan.policy.num_nodes: Input should be a valid integer (got true)"]
    document["role_plan"]["placement"]["colocate_all"] = 1
    document["role_plan"]["policy"]["num_nodes"] = 1
    with pytest.raises(SpecError) as refused:
        parse_spec(document)
    assert refused.value.problems == [
        "role_plan.placement.colocate_all: Input should be a valid boolean (got 1)"]


def test_content_equal_in_value_but_not_in_type_or_sign_is_a_new_parse() -> None:
    """The part beside the plan is keyed by content of exact types: a float's sign (`-0.0 ==
    0.0`), a float against an int (`7.0 == 7`) are other content; a document holding a set is
    validated as it is."""
    forget_parsed()
    document = worked_example("colocated-1x8")
    document["algorithm"]["temperature"] = 0.0
    assert math.copysign(1.0, parse_spec(copy.deepcopy(document)).algorithm.temperature) == 1.0
    document["algorithm"]["temperature"] = -0.0
    assert math.copysign(1.0, parse_spec(copy.deepcopy(document)).algorithm.temperature) == -1.0
    document["seed"] = 7.0
    with pytest.raises(SpecError) as refused:
        parse_spec(copy.deepcopy(document))
    assert refused.value.problems == ["seed: Input should be a valid integer (got 7.0)"]
    document["seed"] = 7
    first = parse_spec(copy.deepcopy(document))
    assert parse_spec(copy.deepcopy(document)).model is first.model  # equal content: reused
    document["train_data"]["deep"] = {1, 2}
    with pytest.raises(SpecError) as refused:
        parse_spec(document)
    assert refused.value.problems == [
        "train_data.deep: unknown key (remove it or check its spelling)"]


def test_a_change_to_a_parsed_document_does_not_reach_later_specs() -> None:
    forget_parsed()
    document = worked_example("colocated-1x8")
    parse_spec(document)
    document["model"]["facts"]["num_attention_heads"] = 3
    assert parse_spec(worked_example("colocated-1x8")).model.facts.num_attention_heads == 12


def test_a_rule_that_crashes_on_a_warm_run_is_reported_as_on_a_cold_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Warm, the rules run in one loop under one try; when one raises, every rule runs again
    one by one on a fresh Check: a PRE000 naming the rule, after the findings it yielded before,
    and every other rule's findings, as on a cold run."""
    victim = next(rule for rule in rules_for("spec") if rule.reads_plan)

    def crashing(check: Check) -> Any:
        yield from victim.func(check)
        yield Finding("GEO999", "warning", (), "yielded before the crash", "none")
        if check.spec.role_plan.policy.tensor_parallel_size == 4:
            raise RuntimeError("tensor parallel 4")

    monkeypatch.setitem(registry._RULES, victim.code, dataclasses.replace(victim, func=crashing))
    plans = benchmark().random_plans(60, seed=8)
    try:
        forget_reused()
        registry_caches_clear()
        cold = []
        for document in plans:
            forget_reused()
            cold.append(outcome(document))
        warm = [outcome(document) for document in plans]
    finally:
        monkeypatch.undo()
        registry_caches_clear()
        forget_reused()
    assert warm == cold
    crashes = [finding for result in warm for finding in result[2] if finding.code == "PRE000"]
    assert 0 < len(crashes) < len(plans)
    assert {finding.message for finding in crashes} == {
        f"rule {victim.code} crashed on this spec (RuntimeError: tensor parallel 4); its check"
        " did not run"}
    assert all("GEO999" in [finding.code for finding in result[2]] for result in warm)


def registry_caches_clear() -> None:
    """The runner's rule lists, read from the registry again."""
    rules_for.cache_clear()
    _rules_for_release.cache_clear()


@functools.cache
def spec_cases() -> list[RunSpec]:
    found = []
    for document in documents():
        try:
            found.append(parse_spec(document, "case"))
        except SpecError:
            continue
    return found


@pytest.mark.parametrize("rule", [rule for rule in rules_for("spec") if not rule.reads_plan],
                         ids=lambda rule: rule.code)
def test_a_rule_beside_the_plan_reads_nothing_of_it(rule: Any) -> None:
    """Declared `reads_plan=False`: the same findings with `role_plan` taken away (a rule that
    read it would crash on None)."""
    for spec in spec_cases():
        without = spec.model_copy(update={"role_plan": None})
        assert list(rule.func(Check(without))) == list(rule.func(Check(spec))), spec.name


def test_runspec_validators_read_nothing_of_the_plan() -> None:
    """parse_spec validates role_plan and execution alone when it reuses the rest, which holds
    while RunSpec's own validators read neither: a new one must be checked, then listed here."""
    assert set(RunSpec.__pydantic_decorators__.model_validators) == {
        "_settings_exist", "_environment_data_names_a_setting"}
    assert set(RunSpec.__pydantic_decorators__.field_validators) == {"_integers_in_range"}


def test_roleplan_validators_read_nothing_beside_each_section() -> None:
    """parse_spec hands RolePlan its sections validated (kept as they are), which equals
    validating the whole plan while RolePlan has no validator of its own that would see the
    sections together: a new one must be checked, then listed here."""
    assert RolePlan.__pydantic_decorators__.model_validators == {}
    assert set(RolePlan.__pydantic_decorators__.field_validators) == {"_integers_in_range"}
    assert RolePlan.model_config.get("revalidate_instances", "never") == "never"


def test_a_memo_forgets_its_oldest_entry() -> None:
    memo: Memo[str, int] = Memo(2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1
    memo.put("c", 3)
    assert (memo.get("a"), memo.get("b"), memo.get("c"), len(memo)) == (None, 2, 3, 2)
    memo.clear()
    assert (memo.get("b"), len(memo), memo.put("d", 4), memo.get("d")) == (None, 0, 4, 4)
    with pytest.raises(ValueError, match="a memo holds at least 1 entry, got size 0"):
        Memo(0)


def test_a_full_memo_forgets_its_oldest_eighth_at_once() -> None:
    memo: Memo[int, int] = Memo(16)
    for number in range(17):
        memo.put(number, number)
    assert (len(memo), memo.get(0), memo.get(1), memo.get(2), memo.get(16)) == (
        15, None, None, 2, 16)
    for number in range(17, 19):
        memo.put(number, number)
    assert (len(memo), memo.get(2), memo.get(3), memo.get(4)) == (15, None, None, 4)



def test_per_object_computes_once_per_object_and_again_for_an_equal_copy() -> None:
    """Kept by identity, the object held: the same object is a hit, an equal copy (which a
    search never hands twice, but a caller may) is computed again, never answered wrongly."""
    calls: list[dict[str, int]] = []

    @per_object
    def total(value: dict[str, int]) -> int:
        """The sum of the values."""
        calls.append(value)
        return sum(value.values())

    first = {"a": 1, "b": 2}
    copied = dict(first)
    assert [total(first), total(first), total(copied)] == [3, 3, 3]
    assert [value is first for value in calls] == [True, False]
    assert (total.__name__, total.__doc__) == ("total", "The sum of the values.")


def test_a_spec_equals_its_reparse_whatever_the_memos_and_lookups_did() -> None:
    """A spec that asked for its settings catalog (as preflight does) and was copied from the
    memo equals one parsed fresh from its own dump."""
    for name in sorted(WORKED_EXAMPLES):
        spec = parse_spec(worked_example(name), name)
        run_preflight(spec)
        forget_parsed()
        assert parse_spec(spec.model_dump(mode="json"), name) == spec, name


def test_a_value_derived_beside_the_plan_is_derived_once_per_part_beside_it() -> None:
    """Check.shared: the Checks run_preflight makes for specs whose fields beside the plan are
    the very same objects share one dict (a search's plans; parse_spec reuses that part), a spec
    with another part beside the plan has its own, and so does a Check made on its own."""
    forget_parsed()
    forget_reused()
    derived: list[str] = []

    def policy_name(check: Check) -> str:
        derived.append(check.spec.model.name)
        return check.spec.model.name

    first, second = benchmark().random_plans(2, seed=1)
    second = {**copy.deepcopy(first), "role_plan": second["role_plan"]}
    other = copy.deepcopy(first)
    other["lengths"]["max_generate_length"] += 1
    specs = [parse_spec(document) for document in (first, second, other)]
    assert specs[1].role_plan != specs[0].role_plan

    def shared_check(spec: RunSpec) -> Check:
        run_preflight(spec)
        return Check(spec, None, runner._beside_plan_entry(spec)[4])

    answers = [shared_check(spec).shared(policy_name) for spec in specs]
    assert answers == [specs[0].model.name] * 3
    assert len(derived) == 2  # the first two specs share theirs; the third derives its own
    assert Check(specs[0]).shared(policy_name) == specs[0].model.name
    assert len(derived) == 3
