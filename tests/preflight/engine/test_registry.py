"""The rule registry: stable codes, families, scopes, and an example that breaks each rule."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import rlaunch.preflight.rules as rules_package
from rlaunch.compiled import SOURCE_ROOT
from rlaunch.preflight import all_rules, run_preflight
from rlaunch.preflight.docs import rules_markdown
from rlaunch.preflight.engine import registry
from rlaunch.preflight.engine.registry import (
    FAMILIES,
    RULES_PACKAGE,
    Example,
    Rule,
    RuleFunc,
    rule,
)
from rlaunch.spec import parse_spec

RULES = all_rules()
WORLD_RULES = {"VER002", "VER003", "VER004", "VER005", "VER006", "EXEC004", "EXEC009",
               "PIPE003", "RES001", "RES002", "RES003", "RES004"}


def test_codes_are_unique_stable_and_grouped_by_family() -> None:
    codes = [r.code for r in RULES]
    assert len(codes) == len(set(codes)) == 116
    prefixes = {
        "geometry": "GEO", "allocation": "ALLOC", "batch": "BATCH", "context": "CTX",
        "algorithm": "ALGO", "artifacts": "ART", "versions": "VER", "paths": "PATH",
        "runtime": "RT", "execution": "EXEC", "smoke": "SMOKE", "settings": "SET", "memory": "MEM",
        "pipeline": "PIPE", "resume": "RES",
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


def source_of(function: RuleFunc) -> str:
    """A module-level function's source from `def` on, read from its module's .py file: a
    compiled module (rlaunch.compiled) keeps no code object for inspect.getsource."""
    path = SOURCE_ROOT.joinpath(*function.__module__.split(".")).with_suffix(".py")
    text = path.read_text()
    node = next(node for node in ast.parse(text).body
                if isinstance(node, ast.FunctionDef) and node.name == function.__name__)
    return ast.get_source_segment(text, node) or ""


@pytest.mark.parametrize("rule_", RULES, ids=[r.code for r in RULES])
def test_a_rule_reports_only_its_own_code(rule_: Rule) -> None:
    body = source_of(rule_.func)
    assert body.startswith("def ")
    assert set(re.findall(r'"([A-Z]+\d{3})"', body)) <= {rule_.code}


def test_a_code_cannot_be_registered_twice() -> None:
    def again(check: object) -> tuple[()]:
        return ()

    again.__module__ = "rlaunch.preflight.rules.geometry"
    with pytest.raises(ValueError, match="rule code GEO001 is registered twice"):
        rule("GEO001", "again", example=Example())(again)
    not_a_family = rule("GEO999", "nowhere", example=Example())
    with pytest.raises(ValueError) as refused:
        not_a_family(test_a_code_cannot_be_registered_twice)
    assert str(refused.value) == (
        "rule GEO999: module preflight.engine.test_registry is declared in no family; add it to"
        " RULE_MODULES in rlaunch.preflight.engine.registry"
    )


def probe(module: str) -> RuleFunc:
    """A rule function that seems to live in `module`."""

    def probe_rule(check: object) -> tuple[()]:
        return ()

    probe_rule.__module__ = module
    return probe_rule


def test_a_file_name_does_not_decide_a_family(monkeypatch: pytest.MonkeyPatch) -> None:
    # A new module named like a family is not in that family: it is refused until declared.
    with pytest.raises(ValueError, match="module rlaunch.preflight.rules.geometry_new is declared"
                       " in no family"):
        rule("GEO998", "nowhere", example=Example())(probe("rlaunch.preflight.rules.geometry_new"))
    # Declared under another family, the same module's rules belong to that family.
    declared = {**registry.RULE_MODULES, "memory": ("memory", "geometry_new")}
    monkeypatch.setattr(registry, "RULE_MODULES", declared)
    monkeypatch.setattr(registry, "_RULES", dict(registry._RULES))
    rule("GEO998", "somewhere", example=Example())(probe("rlaunch.preflight.rules.geometry_new"))
    assert registry._RULES["GEO998"].family == "memory"


def test_every_rule_module_is_declared_in_one_family_and_every_declared_one_exists() -> None:
    folder = Path(rules_package.__file__).parent  # the package's own file is never compiled
    on_disk = sorted(path.stem for path in folder.glob("*.py") if path.stem != "__init__")
    declared = [name for names in registry.RULE_MODULES.values() for name in names]
    assert sorted(declared) == on_disk
    assert len(declared) == len(set(declared))


def test_each_rule_has_the_family_its_module_is_declared_in() -> None:
    by_module = {
        f"{RULES_PACKAGE}.{name}": family
        for family, names in registry.RULE_MODULES.items() for name in names
    }
    assert {r.code: r.family for r in RULES} == {
        r.code: by_module[r.func.__module__] for r in RULES
    }
    # The family of these is not their module's name (nor its prefix).
    assert {r.family for r in RULES if r.func.__module__.endswith(".heads_and_experts")} == {
        "geometry"
    }
    assert {r.family for r in RULES if r.func.__module__.endswith(".context_window")} == {
        "context"
    }


def test_docs_name_each_rule_s_module() -> None:
    geo016 = next(r for r in RULES if r.code == "GEO016")
    assert geo016.implementation == (
        "rlaunch.preflight.rules.heads_and_experts.inference_tp_divides_heads"
    )
    assert f"implemented in `{geo016.implementation}`." in rules_markdown()
