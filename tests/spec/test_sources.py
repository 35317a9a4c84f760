"""A spec the Pants plugin wrote names its BUILD targets: titles, findings and spec problems."""

from __future__ import annotations

import pytest

from rlaunch.preflight import format_text, run_preflight
from rlaunch.spec import SpecError, parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.spec.sources import BuildSources


def _entry(address: str, line: int | None, fields: dict[str, str] | None = None) -> dict:
    package = address.split(":")[0]
    return {"address": address, "build_file": f"{package}/BUILD", "line": line,
            "fields": fields or {}}


SOURCES = {
    "": _entry("exp/x:grpo", 40, {"name": "run_name"}),
    "role_plan": _entry("exp/x:plan", 10),
    "execution": _entry("exp/x:h100", 25),
    "model": _entry("exp/models:qwen", None, {"facts.num_attention_heads": "attention_heads"}),
    "model.deps.data": _entry("exp/data:mix", 3),
}


def test_the_sources_ride_along_without_changing_the_spec() -> None:
    plain = parse_spec(worked_example("tp8-on-42-heads"))
    spec = parse_spec({**worked_example("tp8-on-42-heads"), "build_sources": SOURCES})
    assert plain.build_sources is None
    assert spec.build_sources is not None
    assert spec.model_dump() == plain.model_dump() and spec.fingerprint == plain.fingerprint
    assert "build_sources" not in spec.model_dump()


def test_a_finding_names_each_target_its_build_line_and_the_field_as_written() -> None:
    spec = parse_spec({**worked_example("tp8-on-42-heads"), "build_sources": SOURCES})
    findings = [f for f in run_preflight(spec) if f.code == "GEO016"]
    text = format_text(findings, "/tmp/sandbox/x.json", spec.identity, spec.build_sources)
    assert text.splitlines()[0] == (
        "exp/x:grpo (exp/x/BUILD:40) (tp8-on-42-heads@2026.11.29): refused, 1 error, 0 warnings"
    )
    assert "/tmp/sandbox" not in text
    assert text.splitlines()[2:4] == [
        "    in exp/x/BUILD:10 (exp/x:plan): rollout.tensor_parallel_size",
        "    in exp/models/BUILD (exp/models:qwen): attention_heads",
    ]


def test_the_longest_section_names_a_dependency_and_a_whole_section_is_the_runs_field() -> None:
    sources = BuildSources.from_data(SOURCES)
    assert sources.describe(["model.deps.data.rows", "model", "name", "role_plan.policy"]) == [
        "exp/data/BUILD:3 (exp/data:mix): rows",
        "exp/x/BUILD:40 (exp/x:grpo): model, run_name",
        "exp/x/BUILD:10 (exp/x:plan): policy",
    ]


def test_a_spec_problem_names_the_build_target_and_field() -> None:
    data = worked_example("colocated-1x8")
    data["role_plan"]["policy"]["num_nodes"] = "two"
    with pytest.raises(SpecError) as caught:
        parse_spec({**data, "build_sources": SOURCES}, "/tmp/sandbox/x.json")
    assert caught.value.render().splitlines()[:3] == [
        "exp/x:grpo (exp/x/BUILD:40): not a valid RunSpec (1 problem(s))",
        '  - role_plan.policy.num_nodes: Input should be a valid integer (got "two")',
        "      in exp/x/BUILD:10 (exp/x:plan): policy.num_nodes",
    ]


def test_malformed_sources_are_a_spec_error() -> None:
    with pytest.raises(SpecError, match="build_sources must map spec sections to targets"):
        parse_spec({**worked_example("colocated-1x8"), "build_sources": {"role_plan": {}}})
    with pytest.raises(SpecError, match=r"build_sources.role_plan must have address"):
        parse_spec({**worked_example("colocated-1x8"),
                    "build_sources": {"": SOURCES[""], "role_plan": {"address": "x"}}})
