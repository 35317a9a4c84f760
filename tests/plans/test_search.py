"""`rlaunch plans`: the search agrees with preflight on every plan, misses none that brute force
finds, prints plans that preflight accepts as written, and finds each GPU experiment's plan."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rlaunch.cli import main
from rlaunch.plans.search import (
    Budget,
    candidate,
    largest_micro,
    ranked,
    same_plan,
    search,
    standing,
)
from rlaunch.preflight import run_preflight
from rlaunch.spec import parse_spec

GOLDEN = Path(__file__).resolve().parents[1] / "render" / "golden" / "experiments"
GPU_EXPERIMENTS = ("qwen2.5-1.5b-gsm8k", "qwen2.5-1.5b-instruct-ref-2x8",
                   "qwen2.5-14b-separate-ref", "qwen3-30b-a3b-megatron")


def experiment(name: str) -> dict[str, Any]:
    """The spec `./pants package` wrote for the experiment's `grpo` run (tests/render/golden)."""
    data = json.loads((GOLDEN / name / "grpo" / "spec.json").read_text())
    if any(f.code == "EXEC010" for f in run_preflight(parse_spec(data))):
        # The golden spec predates Iris priority bands; the BUILD file says production.
        data["execution"]["priority"] = "production"
    return data


def plan_texts(plans: list[Any]) -> list[str]:
    return sorted(json.dumps(v.spec.role_plan.model_dump(mode="json"), sort_keys=True)
                  for v in plans)


@pytest.mark.parametrize(("name", "budget", "strategies"), [
    ("qwen2.5-1.5b-gsm8k", Budget(1, 4, "H100"), ("fsdp", "megatron")),
    ("qwen2.5-14b-separate-ref", Budget(1, 8, "A100-40GB"), ("fsdp",)),
    ("qwen3-30b-a3b-megatron", Budget(1, 8, "H100"), ("megatron",)),
])
def test_the_pruned_search_finds_every_plan_brute_force_finds(
    name: str, budget: Budget, strategies: tuple[str, ...]
) -> None:
    base = experiment(name)
    if name == "qwen3-30b-a3b-megatron":  # shorter sequences, so that one node has valid plans
        base["lengths"].update(max_prompt_length=256, max_input_length=256,
                               max_generate_length=256)
    pruned = search(base, budget, strategies)
    brute = search(base, budget, strategies, prune=False)
    assert brute.pruned == 0
    assert pruned.preflighted + pruned.pruned == brute.preflighted
    # Every geometry brute force finds valid, at the same largest micro batch.
    assert plan_texts(pruned.valid) == plan_texts(largest_micro(brute.valid))
    assert len(pruned.valid) > 0
    for valid in pruned.valid:  # the search and preflight agree on every plan it keeps
        assert not [f for f in run_preflight(valid.spec) if f.is_error]


def snippet_plans(output: str) -> list[dict[str, Any]]:
    """The role plans of every printed role_plan(...) snippet, read as BUILD syntax."""
    plans = []
    for node in ast.walk(ast.parse(output)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "role_plan":
            fields = {kw.arg: literal(kw.value) for kw in node.keywords}
            fields.pop("name")
            plans.append(fields)
    return plans


def literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
        return {kw.arg: literal(kw.value) for kw in node.keywords}
    return ast.literal_eval(node)


@pytest.mark.parametrize(("name", "args"), [
    ("qwen2.5-1.5b-gsm8k", ["--nodes", "1", "--gpus-per-node", "8", "--accelerator", "H100"]),
    ("qwen3-30b-a3b-megatron", ["--nodes", "2", "--gpus-per-node", "8", "--accelerator", "H100",
                                "--strategy", "fsdp"]),
    ("qwen2.5-14b-separate-ref", ["--nodes", "1", "--gpus-per-node", "8", "--accelerator",
                                  "A100-40GB"]),
])
def test_every_printed_plan_passes_preflight_as_written(
    tmp_path: Path, name: str, args: list[str]
) -> None:
    spec_file = tmp_path / "spec.json"
    base = experiment(name)
    spec_file.write_text(json.dumps(base))
    result = CliRunner().invoke(main, ["plans", str(spec_file), *args, "--top", "3"])
    assert result.exit_code == 0, result.output
    assert " valid plan geometries " in result.output.splitlines()[0]
    printed = snippet_plans(result.output)
    assert len(printed) == 3
    budget = Budget(int(args[1]), int(args[3]), args[5])
    for plan in printed:
        findings = run_preflight(parse_spec(candidate(base, budget, plan)))
        assert [f.code for f in findings if f.is_error] == []


def test_the_plans_without_any_valid_plan_say_so(tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(experiment("qwen2.5-14b-separate-ref")))
    result = CliRunner().invoke(main, ["plans", str(spec_file), "--nodes", "1",
                                       "--gpus-per-node", "1", "--accelerator", "L4"])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "Error: no role plan of this budget passes preflight; preflight SPEC itself (`rlaunch"
        " preflight SPEC`) for errors no plan can fix, or give a larger budget")


def test_an_unreadable_spec_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "spec.json"
    result = CliRunner().invoke(main, ["plans", str(missing), "--nodes", "1",
                                       "--gpus-per-node", "8", "--accelerator", "H100"])
    assert result.exit_code == 1
    assert result.output == (f"Error: SPEC {missing}: cannot read the file: No such file or"
                             " directory\n")


def test_a_model_that_is_no_hf_model_is_refused(tmp_path: Path) -> None:
    spec_file, model_file = tmp_path / "spec.json", tmp_path / "model.json"
    base = experiment("qwen2.5-1.5b-gsm8k")
    spec_file.write_text(json.dumps(base))
    model_file.write_text(json.dumps(base["train_data"]))
    result = CliRunner().invoke(main, ["plans", str(spec_file), "--model", str(model_file),
                                       "--nodes", "1", "--gpus-per-node", "8",
                                       "--accelerator", "H100"])
    assert result.exit_code == 1
    assert result.output == (f"Error: --model {model_file}: not an hf_model document (its"
                             " `type` must be hf_model, with its facts)\n")


@pytest.mark.parametrize("name", GPU_EXPERIMENTS)
def test_the_search_finds_each_gpu_experiments_own_plan(name: str) -> None:
    base = experiment(name)
    allocation = base["execution"]["allocation"]
    budget = Budget(allocation["num_nodes"], allocation["gpus_per_node"],
                    allocation["accelerator"])
    own = base["role_plan"]
    assert [f.code for f in run_preflight(parse_spec(base)) if f.is_error] == []
    result = search(base, budget, (own["strategy"],))
    found = [v for v in result.valid if same_plan(v.spec, {**own, "batch": v.spec.role_plan.batch
                                                          .model_dump(mode="json")})]
    assert len(found) == 1  # its geometry, at the largest micro batch preflight accepts
    assert found[0].candidate.micro >= own["batch"]["micro_train_batch_size_per_gpu"]
    plans = ranked(result, budget)
    said = standing(plans, own)
    print(f"\n{name}: {said}")
    assert said.startswith("its own plan is valid; its geometry ranks ")


def test_a_spec_that_is_no_runspec_is_refused_before_the_search(tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.json"
    base = experiment("qwen2.5-1.5b-gsm8k")
    base["execution"]["priority"] = 5
    spec_file.write_text(json.dumps(base))
    result = CliRunner().invoke(main, ["plans", str(spec_file), "--nodes", "1",
                                       "--gpus-per-node", "8", "--accelerator", "H100"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    # The spec `./pants package` wrote names its BUILD target.
    assert lines[0] == ("Error: experiments/qwen2.5-1.5b-gsm8k:grpo"
                        " (experiments/qwen2.5-1.5b-gsm8k/BUILD:84): not a valid RunSpec"
                        " (1 problem(s))")
    assert lines[1].startswith("  - execution.priority: "), lines
