from __future__ import annotations

import ast
import re

import pytest
from pants.testutil.option_util import create_goal_subsystem
from pants.testutil.rule_runner import GoalRuleResult, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.goals.plans import Plans, PlansSubsystem, one_run
from rlaunch_pants.testutil import COLOCATED_BUILD, write_library


@pytest.fixture
def rule_runner(python: str) -> RuleRunner:
    rule_runner = RuleRunner(
        rules=register.rules(),
        target_types=register.target_types(),
        isolated_local_store=True,
    )
    write_library(rule_runner)
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD})
    return rule_runner


def plans(rule_runner: RuleRunner, python: str, *args: str) -> GoalRuleResult:
    return rule_runner.run_goal_rule(
        Plans, global_args=[f"--rlaunch-python={python}"], args=list(args)
    )


def test_plans_prints_the_librarys_plans_for_the_runs_spec(
    rule_runner: RuleRunner, python: str
) -> None:
    result = plans(rule_runner, python, "--nodes=1", "--gpus-per-node=4", "--top=2",
                   "--strategy=fsdp", "experiments/x:run")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"# 29 valid plan geometries \(29 plans\) on 1 x 4 H100: \d+ preflighted,"
                        r" \d+ ruled out by an earlier finding's family, [\d.]+ CPU seconds,"
                        r" preflight (compiled|pure Python; scripts/compile runs it up to 1.5"
                        r" times as fast)", lines[0]), lines[0]
    assert lines[2] == (
        "# 1. idle GPUs 0; warnings 1; engines crossing nodes 0; rollout and training share all"
        " 4 GPUs (colocated); memory free per GPU: policy training 89%, policy forward 95%,"
        " reference forward 96%, vLLM engine 20%")
    assert lines[7] == '    name="fsdp-colocated-sp4-engines4x-tp1-dp1-ep1",'
    ast.parse(result.stdout)  # BUILD syntax, as it is
    assert result.stdout.count("\nrole_plan(\n") == 2


def test_the_budget_is_the_runs_own_allocation_unless_given(
    rule_runner: RuleRunner, python: str
) -> None:
    # `::` names every target of the directory: the one rl_run among them is planned.
    result = plans(rule_runner, python, "--top=1", "experiments/x::")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("# 221 valid plan geometries (221 plans) on 1 x 8 H100: ")


def test_the_librarys_refusal_of_an_option_is_printed_as_it_says(
    rule_runner: RuleRunner, python: str
) -> None:
    result = plans(rule_runner, python, "--allow-lora=0", "experiments/x:run")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "Error: --allow-lora 0: a LoRA rank is a positive integer (e.g. 16 or 32); leave the"
        " option out to search full fine-tuning only\n")
    result = plans(rule_runner, python, "--nodes=0", "experiments/x:run")
    assert result.exit_code == 2
    assert result.stderr == (
        "Usage: ./pants plans [OPTIONS] TARGET\n"
        "Try `./pants help plans` for help.\n"
        "\n"
        "Error: Invalid value for '--nodes': 0 is not in the range x>=1.\n")


def test_a_target_that_is_no_rl_run_is_refused(rule_runner: RuleRunner, python: str) -> None:
    result = plans(rule_runner, python, "experiments/x:qwen2.5-1.5b-instruct")
    assert result.exit_code == 1
    assert result.stderr == (
        "`./pants plans` needs one rl_run target (experiments/x:qwen2.5-1.5b-instruct is not):"
        " the plans are searched for one run's spec, e.g. `./pants plans --nodes=2"
        " --gpus-per-node=8 --accelerator=H100 experiments/x:grpo`\n")


def test_several_runs_are_refused() -> None:
    assert one_run(["a:run", "b:run"], ["a:run", "b:run", "a:model"]) == (
        "`./pants plans` takes one rl_run target, got 2: a:run, b:run; name one (the plans are"
        " searched for one run's spec)")
    assert one_run([], []) == (
        "`./pants plans` needs one rl_run target: the plans are searched for one run's spec,"
        " e.g. `./pants plans --nodes=2 --gpus-per-node=8 --accelerator=H100"
        " experiments/x:grpo`")
    assert one_run(["a:run"], ["a:run", "a:model"]) is None


def test_every_option_reaches_the_library_as_it_names_it() -> None:
    subsystem = create_goal_subsystem(
        PlansSubsystem, nodes=2, gpus_per_node=8, accelerator="H100", strategy=["fsdp",
        "megatron"], release="0.4.0", train_batch=64, samples=4, max_prompt_length=512,
        max_generate_length=1024, top=3, allow_offload=True, allow_lora=32)
    assert subsystem.library_args() == (
        "--nodes", "2", "--gpus-per-node", "8", "--accelerator", "H100", "--release", "0.4.0",
        "--train-batch", "64", "--samples", "4", "--max-prompt-length", "512",
        "--max-generate-length", "1024", "--top", "3", "--allow-lora", "32",
        "--strategy", "fsdp", "--strategy", "megatron", "--allow-offload")
    unset = create_goal_subsystem(
        PlansSubsystem, nodes=None, gpus_per_node=None, accelerator=None, strategy=[],
        release=None, train_batch=None, samples=None, max_prompt_length=None,
        max_generate_length=None, top=None, allow_offload=False, allow_lora=None)
    assert unset.library_args() == ()
