from __future__ import annotations

import pytest
from pants.engine.addresses import Address, Addresses
from pants.engine.target import Dependencies, DependenciesRequest
from pants.testutil.rule_runner import QueryRule, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.testutil import COLOCATED_BUILD


@pytest.fixture
def rule_runner() -> RuleRunner:
    return RuleRunner(
        rules=[*register.rules(), QueryRule(Addresses, [DependenciesRequest])],
        target_types=register.target_types(),
        isolated_local_store=True,
    )


def dependencies(rule_runner: RuleRunner, address: Address) -> list[str]:
    target = rule_runner.get_target(address)
    found = rule_runner.request(Addresses, [DependenciesRequest(target[Dependencies])])
    return sorted(str(a) for a in found)


def test_every_address_field_of_a_run_is_a_dependency(rule_runner: RuleRunner) -> None:
    smoke = "rl_run(" + COLOCATED_BUILD.split("rl_run(")[1].replace(
        'name="run"', 'name="smoke", smoke_of=":run"'
    ).replace('run_name="colocated-1x8"', 'run_name="smoke"')
    run = COLOCATED_BUILD.replace(
        'eval_data=":gsm8k-test-prompts",',
        'eval_data=":gsm8k-test-prompts", reference_model="models:ref",'
    )
    rule_runner.write_files(
        {
            "experiments/x/BUILD": run + smoke,
            "models/BUILD": (
                'hf_model(name="ref", repo_id="Qwen/Qwen2.5-14B-Instruct", revision="'
                + "c" * 40
                + '", facts=dict(num_attention_heads=40, num_key_value_heads=8,'
                ' max_position_embeddings=32768, num_experts=None, num_hidden_layers=48,'
                ' hidden_size=5120, intermediate_size=13824, vocab_size=152064, head_dim=None,'
                ' torch_dtype="bfloat16", num_parameters=14770033664), version="dev")'
            ),
        }
    )
    assert dependencies(rule_runner, Address("experiments/x", target_name="run")) == [
        "experiments/x:cluster",
        "experiments/x:gsm8k-test-prompts",
        "experiments/x:gsm8k-train-prompts",
        "experiments/x:plan",
        "experiments/x:qwen2.5-1.5b-instruct",
        "experiments/x:skyrl-0.3.0",
        "models:ref",
    ]
    assert "experiments/x:run" in dependencies(
        rule_runner, Address("experiments/x", target_name="smoke")
    )


def test_built_artifact_deps_are_dependencies(rule_runner: RuleRunner) -> None:
    rule_runner.write_files(
        {
            "c/BUILD": (
                # module:Class builders read configs of their own (rlaunch's are checked).
                'built_artifact(name="data", builder="lab.builders:Data", kind="dataset",'
                ' version="dev")\n'
                'built_artifact(name="tok", builder="lab.builders:Tokenizer", kind="tokenizer",'
                ' version="dev")\n'
                'built_artifact(name="sft", builder="lab.builders:SFT", kind="model",'
                ' deps={"data": ":data", "tokenizer": ":tok"}, version="dev")\n'
            )
        }
    )
    assert dependencies(rule_runner, Address("c", target_name="sft")) == ["c:data", "c:tok"]
    assert dependencies(rule_runner, Address("c", target_name="data")) == []


def test_a_run_naming_another_run_as_its_model_depends_on_it(rule_runner: RuleRunner) -> None:
    stage2 = "rl_run(" + COLOCATED_BUILD.split("rl_run(")[1].replace(
        'name="run"', 'name="stage2"'
    ).replace('run_name="colocated-1x8"', 'run_name="grpo-stage2"').replace(
        'model=":qwen2.5-1.5b-instruct"', 'model=":run"'
    )
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD + stage2})
    assert "experiments/x:run" in dependencies(
        rule_runner, Address("experiments/x", target_name="stage2")
    )
