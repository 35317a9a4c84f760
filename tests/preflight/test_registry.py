"""The rule registry: stable codes, families, scopes, and an example that breaks each rule."""

from __future__ import annotations

import inspect
import re

import pytest

from rlaunch.preflight import all_rules, run_preflight
from rlaunch.preflight.registry import FAMILIES, Example, Rule, rule
from rlaunch.spec import parse_spec

RULES = all_rules()
WORLD_RULES = {"VER002", "VER003", "VER004", "VER005", "EXEC004", "PIPE003"}


def test_codes_are_unique_stable_and_grouped_by_family() -> None:
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes)) == 104
    prefixes = {
        "geometry": "GEO", "allocation": "ALLOC", "batch": "BATCH", "context": "CTX",
        "algorithm": "ALGO", "artifacts": "ART", "versions": "VER", "paths": "PATH",
        "runtime": "RT", "execution": "EXEC", "smoke": "SMOKE", "settings": "SET", "memory": "MEM",
        "pipeline": "PIPE",
    }
    assert set(prefixes) == set(FAMILIES)
    for r in RULES:
        assert re.fullmatch(rf"{prefixes[r.family]}\d{{3}}", r.code), r.code
    assert [r.family for r in RULES] == sorted(
        (r.family for r in RULES), key=FAMILIES.index
    )


def test_world_scope_is_declared_for_exactly_the_world_rules() -> None:
    assert {r.code for r in RULES if r.scope == "world"} == WORLD_RULES


@pytest.mark.parametrize("rule_", RULES, ids=[r.code for r in RULES])
def test_every_example_breaks_its_rule(rule_: Rule) -> None:
    spec = parse_spec(rule_.example.spec_data(), rule_.code)
    found = run_preflight(spec, scope="all", world=rule_.example.build_world())
    assert rule_.code in {finding.code for finding in found}
    assert "PRE000" not in {finding.code for finding in found}


@pytest.mark.parametrize("rule_", RULES, ids=[r.code for r in RULES])
def test_a_rule_reports_only_its_own_code(rule_: Rule) -> None:
    source = inspect.getsource(rule_.func)
    body = source[source.index("def "):]
    assert set(re.findall(r'"([A-Z]+\d{3})"', body)) <= {rule_.code}


def test_a_code_cannot_be_registered_twice() -> None:
    def again(check: object) -> tuple[()]:
        return ()

    again.__module__ = "rlaunch.preflight.geometry"
    with pytest.raises(ValueError, match="rule code GEO001 is registered twice"):
        rule("GEO001", "again", example=Example())(again)
    not_a_family = rule("GEO999", "nowhere", example=Example())
    with pytest.raises(ValueError, match="module preflight.test_registry is not a rule family"):
        not_a_family(test_a_code_cannot_be_registered_twice)
