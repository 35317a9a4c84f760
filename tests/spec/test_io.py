"""The RunSpec file format: parsing, errors, round trips."""

from __future__ import annotations

import json

import pytest

from rlaunch.spec import SpecError, dump_spec, dumps_spec, load_spec, loads_spec, parse_spec
from rlaunch.spec.examples import WORKED_EXAMPLES, worked_example


@pytest.mark.parametrize("name", sorted(WORKED_EXAMPLES))
def test_worked_examples_parse_and_round_trip_through_yaml_and_json(name, tmp_path):
    spec = parse_spec(worked_example(name), name)
    for suffix in ("yaml", "json"):
        path = tmp_path / f"spec.{suffix}"
        dump_spec(spec, path)
        assert load_spec(path) == spec
    assert dumps_spec(loads_spec(dumps_spec(spec))) == dumps_spec(spec)


def test_every_problem_is_reported_at_once_with_the_path_a_person_writes():
    data = worked_example("colocated-1x8")
    data["bogus"] = 1
    del data["seed"]
    data["role_plan"]["policy"]["num_nodes"] = "two"
    data["model"]["typo"] = 2  # the example's tokenizer is the same model mapping
    with pytest.raises(SpecError) as caught:
        parse_spec(data, "run.yaml")
    assert caught.value.problems == [
        "seed: required key is missing (a run spec has no silent defaults)",
        "model.typo: unknown key (remove it or check its spelling)",
        "tokenizer.typo: unknown key (remove it or check its spelling)",
        'role_plan.policy.num_nodes: Input should be a valid integer (got "two")',
        "bogus: unknown key (remove it or check its spelling)",
    ]
    rendered = caught.value.render()
    assert rendered.startswith("run.yaml: not a valid RunSpec (5 problem(s))\n")
    assert rendered.endswith("The format is documented in docs/spec-format.md.")


def test_role_plan_has_no_silent_defaults():
    data = worked_example("colocated-1x8")
    del data["role_plan"]["batch"]["micro_forward_batch_size_per_gpu"]
    data["role_plan"]["reference"].pop("colocated_with_policy")
    with pytest.raises(SpecError) as caught:
        parse_spec(data)
    assert caught.value.problems == [
        "role_plan.reference.colocated_with_policy: required key is missing "
        "(a run spec has no silent defaults)",
        "role_plan.batch.micro_forward_batch_size_per_gpu: required key is missing "
        "(a run spec has no silent defaults)",
    ]


def test_unknown_artifact_type_names_the_allowed_tags():
    data = worked_example("colocated-1x8")
    data["train_data"]["type"] = "hf_datasett"
    with pytest.raises(SpecError) as caught:
        parse_spec(data)
    (problem,) = caught.value.problems
    assert problem.startswith("train_data.type: Input tag 'hf_datasett' found using 'type' does")
    assert "'hf_model', 'hf_dataset', 'adopted', 'built'" in problem


def test_unreadable_files_are_spec_errors(tmp_path):
    with pytest.raises(SpecError, match="cannot read the file"):
        load_spec(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML: while parsing a flow sequence"):
        load_spec(bad)
    bad.write_text("- a list\n")
    with pytest.raises(SpecError, match="the document must be a mapping, got list"):
        load_spec(bad)


def test_json_dump_is_sorted_and_stable():
    spec = parse_spec(worked_example("megatron-moe-5x8"))
    text = dumps_spec(spec, "json")
    assert text == dumps_spec(spec, "json")
    assert list(json.loads(text)) == sorted(json.loads(text))


@pytest.mark.parametrize("accelerator", ["0E0", "1e-6", "2.5E+3"])
def test_a_string_that_reads_as_a_number_survives_the_spec_and_launch_round_trips(accelerator):
    # The loader reads `1e-6` as the number a person means (YAML 1.2, JSON), so the writers
    # must quote a string of that shape; hypothesis found accelerator `0E0` read back as 0.0.
    from rlaunch.render import render_launch
    from rlaunch.render.output import loads_launch

    data = worked_example("colocated-1x8")
    data["execution"]["allocation"]["accelerator"] = accelerator
    spec = parse_spec(data, "run.yaml")
    assert loads_spec(dumps_spec(spec)) == spec
    text = render_launch(spec, store_prefix="/tmp/store", launcher_commit=None)
    assert f"'{accelerator}'" in text
    assert loads_launch(text, "launch.yaml").execution.allocation.accelerator == accelerator
