from __future__ import annotations

import json

import pytest
from pants.engine.addresses import Address
from pants.engine.internals.scheduler import ExecutionError
from pants.testutil.rule_runner import QueryRule, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.specs import (
    ArtifactSpec,
    ArtifactSpecRequest,
    RunSpecDocument,
    RunSpecRequest,
    artifact_identities,
    spec_file_path,
)
from rlaunch_pants.testutil import COLOCATED_BUILD, library_json, runtime_python

RUN = Address("experiments/x", target_name="run")


@pytest.fixture
def rule_runner() -> RuleRunner:
    return RuleRunner(
        rules=[
            *register.rules(),
            QueryRule(RunSpecDocument, [RunSpecRequest]),
            QueryRule(ArtifactSpec, [ArtifactSpecRequest]),
        ],
        target_types=register.target_types(),
        isolated_local_store=True,
    )


def run_spec(rule_runner: RuleRunner, address: Address = RUN) -> dict:
    return rule_runner.request(RunSpecDocument, [RunSpecRequest(address)]).data()


def test_targets_of_the_worked_example_give_exactly_its_spec(rule_runner: RuleRunner) -> None:
    python = runtime_python()
    if python is None:
        pytest.skip("no project runtime: set PANTS_RLAUNCH_PYTHON or run scripts/runtime")
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD})
    # The example as the library reads it: every key written, a default where it leaves one out.
    expected = library_json(
        python,
        "import json; from rlaunch.spec import parse_spec; "
        "from rlaunch.spec.examples import worked_example; "
        "print(json.dumps(parse_spec(worked_example('colocated-1x8')).model_dump(mode='json')))",
    )
    assert isinstance(expected, dict)
    # Names differ only where a target name is the identity (the example's names are its own).
    expected["runtime"]["name"] = "skyrl-0.3.0"
    spec = run_spec(rule_runner)
    spec.pop("build_sources")
    assert spec == expected


def _line_of(text: str, needle: str) -> int:
    (line,) = [n for n, found in enumerate(text.splitlines(), 1) if needle in found]
    return line


def test_the_spec_says_which_target_and_build_line_each_section_came_from(
    rule_runner: RuleRunner,
) -> None:
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD})
    sources = run_spec(rule_runner)["build_sources"]

    def entry(name: str, fields: dict) -> dict:
        return {
            "address": f"experiments/x:{name}",
            "build_file": "experiments/x/BUILD",
            "line": _line_of(COLOCATED_BUILD, f'name="{name}"'),
            "fields": fields,
        }

    facts: dict = {}
    assert sources == {
        "": entry("run", {"name": "run_name"}),
        "role_plan": entry("plan", {}),
        "execution": entry("cluster", {}),
        "runtime": entry("skyrl-0.3.0", {}),
        "model": entry("qwen2.5-1.5b-instruct", facts),
        "tokenizer": entry("qwen2.5-1.5b-instruct", facts),
        "train_data": entry("gsm8k-train-prompts", facts),
        "train_data.deps.source": entry("gsm8k-train", facts),
        "eval_data": entry("gsm8k-test-prompts", facts),
        "eval_data.deps.source": entry("gsm8k-test", facts),
    }


def test_every_key_is_present_and_nulls_are_explicit(rule_runner: RuleRunner) -> None:
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD})
    spec = run_spec(rule_runner)
    assert spec["schema_version"] == 1
    assert spec["reference_model"] is None and spec["critic_model"] is None
    assert spec["smoke_of"] is None
    assert spec["role_plan"]["critic"] is None
    assert spec["execution"]["wandb"] is None and spec["execution"]["cluster"] is None
    assert spec["runtime"]["git"] is None
    assert spec["model"]["facts"]["num_experts"] is None


def test_a_dataset_config_is_a_name_or_an_explicit_null_beside_a_builder_config(
    rule_runner: RuleRunner,
) -> None:
    # `config` is a string on hf_dataset and a dict on built_artifact: two field classes.
    rule_runner.write_files(
        {
            "data/BUILD": (
                'hf_dataset(name="socratic", repo_id="openai/gsm8k", revision="' + "e" * 40
                + '", config="socratic", split="train", version="2026.11.01")\n'
                'hf_dataset(name="plain", repo_id="org/plain", revision="' + "f" * 40
                + '", split="train", rows=10, version="2026.11.01")\n'
                'built_artifact(name="problems", builder="countdown_data", kind="dataset",'
                ' config={"seed": 7, "train_rows": 8, "eval_rows": 0}, version="dev")\n'
            ),
        }
    )

    def artifact(name: str) -> dict:
        address = Address("data", target_name=name)
        return rule_runner.request(ArtifactSpec, [ArtifactSpecRequest(address)]).data()

    assert artifact("socratic") == {
        "type": "hf_dataset",
        "name": "socratic",
        "version": "2026.11.01",
        "repo_id": "openai/gsm8k",
        "revision": "e" * 40,
        "config": "socratic",
        "split": "train",
        "rows": None,
    }
    assert "config" in artifact("plain") and artifact("plain")["config"] is None
    assert artifact("problems")["config"] == {"eval_rows": 0, "seed": 7, "train_rows": 8}


def test_a_separate_reference_model_is_its_own_artifact_in_the_spec(
    rule_runner: RuleRunner,
) -> None:
    base = (
        'hf_model(name="qwen2.5-1.5b", repo_id="Qwen/Qwen2.5-1.5B",'
        ' revision="8faed761d45a263340a0528343f099c05c9a4323", facts=dict(num_attention_heads=12,'
        ' num_key_value_heads=2, max_position_embeddings=131072, num_experts=None,'
        ' num_hidden_layers=28, hidden_size=1536, intermediate_size=8960, vocab_size=151936,'
        ' head_dim=None, torch_dtype="bfloat16", num_parameters=1543714304),'
        ' version="2026.11.01")\n'
    )
    build = COLOCATED_BUILD.replace(
        'model=":qwen2.5-1.5b-instruct",\n    tokenizer=":qwen2.5-1.5b-instruct",',
        'model=":qwen2.5-1.5b",\n    tokenizer=":qwen2.5-1.5b",\n'
        '    reference_model=":qwen2.5-1.5b-instruct",',
    )
    assert build != COLOCATED_BUILD
    rule_runner.write_files({"experiments/x/BUILD": base + build})
    spec = run_spec(rule_runner)
    assert (spec["model"]["name"], spec["model"]["repo_id"]) == (
        "qwen2.5-1.5b",
        "Qwen/Qwen2.5-1.5B",
    )
    assert spec["tokenizer"]["name"] == "qwen2.5-1.5b"
    reference = spec["reference_model"]
    assert (reference["name"], reference["version"], reference["repo_id"]) == (
        "qwen2.5-1.5b-instruct",
        "2026.11.01",
        "Qwen/Qwen2.5-1.5B-Instruct",
    )
    assert reference["revision"] == "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
    assert reference["facts"]["max_position_embeddings"] == 32768
    assert artifact_identities(spec)[:3] == [
        ("model", "qwen2.5-1.5b@2026.11.01"),
        ("tokenizer", "qwen2.5-1.5b@2026.11.01"),
        ("reference_model", "qwen2.5-1.5b-instruct@2026.11.01"),
    ]


def test_a_built_artifact_carries_its_deps_transitively(rule_runner: RuleRunner) -> None:
    rule_runner.write_files(
        {
            "data/BUILD": (
                'built_artifact(name="problems", builder="countdown_data", kind="dataset",'
                ' config={"seed": 7, "train_rows": 100, "eval_rows": 10}, rows=100,'
                ' version="dev")\n'
                'built_artifact(name="tok", builder="char_tokenizer", kind="tokenizer",'
                ' version="dev")\n'
            ),
            "models/BUILD": (
                'built_artifact(name="sft", builder="sft_model", kind="model",'
                ' config={"steps": 3, "d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,'
                ' "max_position_embeddings": 64, "seed": 0},'
                ' deps={"data": "data:problems", "tokenizer": "data:tok"},'
                ' facts=dict(num_attention_heads=4, num_key_value_heads=2,'
                ' max_position_embeddings=64, num_experts=None, num_hidden_layers=2,'
                ' hidden_size=64, intermediate_size=256, vocab_size=50, head_dim=None,'
                ' torch_dtype="float32", num_parameters=101888), version="sft-dev")\n'
            ),
        }
    )
    artifact = rule_runner.request(
        ArtifactSpec, [ArtifactSpecRequest(Address("models", target_name="sft"))]
    )
    assert artifact.data() == {
        "type": "built",
        "name": "sft",
        "version": "sft-dev",
        "kind": "model",
        "builder": "sft_model",
        "config": {"d_model": 64, "max_position_embeddings": 64, "n_heads": 4, "n_kv_heads": 2,
                   "n_layers": 2, "seed": 0, "steps": 3},
        "deps": {
            "data": {
                "type": "built",
                "name": "problems",
                "version": "dev",
                "kind": "dataset",
                "builder": "countdown_data",
                "config": {"eval_rows": 10, "seed": 7, "train_rows": 100},
                "deps": {},
                "facts": None,
                "rows": 100,
            },
            "tokenizer": {
                "type": "built",
                "name": "tok",
                "version": "dev",
                "kind": "tokenizer",
                "builder": "char_tokenizer",
                "config": {},
                "deps": {},
                "facts": None,
                "rows": None,
            },
        },
        "facts": {
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 64,
            "num_experts": None,
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "intermediate_size": 256,
            "vocab_size": 50,
            "head_dim": None,
            "torch_dtype": "float32",
            "num_parameters": 101888,
        },
        "rows": None,
    }


def test_smoke_of_is_filled_from_the_full_run(rule_runner: RuleRunner) -> None:
    smoke = (
        COLOCATED_BUILD.split("rl_run(")[1]
        .replace('name="run"', 'name="smoke"')
        .replace('run_name="colocated-1x8"', 'run_name="colocated-1x8-smoke", smoke_of=":run"')
        .replace('version="2026.11.29"', 'version="smoke-dev"')
    )
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD + "rl_run(" + smoke})
    full = run_spec(rule_runner)
    spec = run_spec(rule_runner, Address("experiments/x", target_name="smoke"))
    assert spec["name"] == "colocated-1x8-smoke"
    assert spec["smoke_of"] == {
        "name": "colocated-1x8",
        "version": "2026.11.29",
        "role_plan": full["role_plan"],
        "runtime": full["runtime"],
        "allocation": full["execution"]["allocation"],
        "handoff_kinds": {
            "model": "model",
            "tokenizer": "model",
            "train_data": "dataset",
            "eval_data": "dataset",
        },
        "settings": {},
    }


def test_a_reference_of_the_wrong_type_names_both_targets(rule_runner: RuleRunner) -> None:
    build = COLOCATED_BUILD.replace('runtime=":skyrl-0.3.0"', 'runtime=":gsm8k-train"')
    rule_runner.write_files({"experiments/x/BUILD": build})
    with pytest.raises(ExecutionError) as error:
        run_spec(rule_runner)
    assert str(error.value.wrapped_exceptions[0]) == (
        "The 'runtime' field in target experiments/x:run must name a target of type "
        "rl_runtime, but ':gsm8k-train' (experiments/x:gsm8k-train) is of type hf_dataset."
    )


def test_a_missing_reference_names_the_field(rule_runner: RuleRunner) -> None:
    build = COLOCATED_BUILD.replace('role_plan=":plan"', 'role_plan=":no-such-plan"')
    rule_runner.write_files({"experiments/x/BUILD": build})
    with pytest.raises(ExecutionError) as error:
        run_spec(rule_runner)
    message = str(error.value.wrapped_exceptions[0])
    assert "no-such-plan" in message and "the `role_plan` field of experiments/x:run" in message


def test_identities_and_spec_paths() -> None:
    spec = {
        "model": {
            "name": "sft",
            "version": "dev",
            "deps": {"data": {"name": "d", "version": "dev"}},
        },
        "tokenizer": {"name": "tok", "version": "dev"},
        "reference_model": None,
        "critic_model": None,
        "train_data": {"name": "d", "version": "dev"},
        "eval_data": None,
    }
    assert artifact_identities(spec) == [
        ("model", "sft@dev"),
        ("model.deps.data", "d@dev"),
        ("tokenizer", "tok@dev"),
        ("train_data", "d@dev"),
    ]
    assert spec_file_path(RUN) == "__rlaunch_specs/experiments/x/run.json"
    assert spec_file_path(Address("", target_name="run")) == "__rlaunch_specs/run.json"
    json.dumps(spec)


STAGE2 = "rl_run(" + COLOCATED_BUILD.split("rl_run(")[1].replace(
    'name="run"', 'name="stage2"'
).replace('run_name="colocated-1x8"', 'run_name="grpo-stage2"').replace(
    'model=":qwen2.5-1.5b-instruct"', 'model=":run"'
)


def test_a_run_as_a_model_is_its_export_carrying_the_runs_spec(rule_runner: RuleRunner) -> None:
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD + STAGE2})
    upstream = run_spec(rule_runner)
    spec = run_spec(rule_runner, Address("experiments/x", target_name="stage2"))
    assert spec["build_sources"]["model"]["address"] == "experiments/x:run"
    upstream.pop("build_sources")
    assert spec["model"] == {
        "type": "run_export", "name": "colocated-1x8", "version": "2026.11.29", "run": upstream,
    }
    # Everything else is the stage's own, written like any run's.
    for key in ("build_sources", "model", "name"):
        spec.pop(key)
        upstream.pop(key, None)
    assert spec == upstream


def test_runs_that_read_each_others_export_are_a_cycle(rule_runner: RuleRunner) -> None:
    first = COLOCATED_BUILD.replace('model=":qwen2.5-1.5b-instruct"', 'model=":stage2"')
    rule_runner.write_files({"experiments/x/BUILD": first + STAGE2})
    with pytest.raises(ExecutionError) as error:
        run_spec(rule_runner, Address("experiments/x", target_name="stage2"))
    assert str(error.value.wrapped_exceptions[0]) == (
        "Dependency cycle between rl_run targets: experiments/x:stage2 -> experiments/x:run -> "
        "experiments/x:stage2 (each reads the next one's export). A run cannot start from its "
        "own export; change the model field that closes the cycle (in experiments/x/BUILD)."
    )
