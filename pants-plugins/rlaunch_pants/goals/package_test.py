from __future__ import annotations

import pytest
from pants.core.goals.package import BuiltPackage
from pants.engine.addresses import Address
from pants.engine.fs import DigestContents
from pants.testutil.rule_runner import QueryRule, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.goals.package import RlRunPackageFieldSet, RlSweepPackageFieldSet
from rlaunch_pants.specs import RunSpecDocument, RunSpecRequest
from rlaunch_pants.testutil import COLOCATED_BUILD, write_library

RUN = Address("experiments/x", target_name="run")


@pytest.fixture
def rule_runner(python: str) -> RuleRunner:
    rule_runner = RuleRunner(
        rules=[
            *register.rules(),
            QueryRule(BuiltPackage, [RlRunPackageFieldSet]),
            QueryRule(BuiltPackage, [RlSweepPackageFieldSet]),
            QueryRule(RunSpecDocument, [RunSpecRequest]),
        ],
        target_types=register.target_types(),
        isolated_local_store=True,
    )
    write_library(rule_runner)
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD})
    rule_runner.set_options([f"--rlaunch-python={python}"])
    return rule_runner


def package(rule_runner: RuleRunner) -> dict[str, bytes]:
    field_set = RlRunPackageFieldSet.create(rule_runner.get_target(RUN))
    built = rule_runner.request(BuiltPackage, [field_set])
    assert [artifact.relpath for artifact in built.artifacts] == [
        "experiments/x/run/launch.yaml",
        "experiments/x/run/spec.json",
        "experiments/x/run/identities.txt",
    ]
    contents = rule_runner.request(DigestContents, [built.digest])
    return {entry.path: entry.content for entry in contents}


def test_package_writes_the_launch_yaml_the_spec_and_the_identities(
    rule_runner: RuleRunner,
) -> None:
    files = package(rule_runner)
    assert sorted(files) == [
        "experiments/x/run/identities.txt",
        "experiments/x/run/launch.yaml",
        "experiments/x/run/spec.json",
    ]
    launch = files["experiments/x/run/launch.yaml"].decode()
    assert "\nschema_version: 1\n" in launch
    assert "  id: colocated-1x8@2026.11.29\n" in launch
    # The spec's own store prefix: the option is unset.
    assert "  store_prefix: gs://rlaunch-example/store\n" in launch
    spec = rule_runner.request(RunSpecDocument, [RunSpecRequest(RUN)])
    assert files["experiments/x/run/spec.json"].decode() == spec.json
    assert files["experiments/x/run/identities.txt"].decode() == (
        "run  colocated-1x8@2026.11.29\n"
        "model  qwen2.5-1.5b-instruct@2026.11.01\n"
        "tokenizer  qwen2.5-1.5b-instruct@2026.11.01\n"
        "train_data  gsm8k-train-prompts@2026.11.30\n"
        "train_data.deps.source  gsm8k-train@2026.11.01\n"
        "eval_data  gsm8k-test-prompts@2026.11.30\n"
        "eval_data.deps.source  gsm8k-test@2026.11.01\n"
    )


def test_the_store_option_wins_over_the_spec(rule_runner: RuleRunner, python: str) -> None:
    rule_runner.set_options([f"--rlaunch-python={python}", "--rlaunch-store=s3://other/store"])
    launch = package(rule_runner)["experiments/x/run/launch.yaml"].decode()
    assert "  store_prefix: s3://other/store\n" in launch
    assert "  checkpoint_root: s3://other/store/colocated-1x8/2026.11.29/checkpoints\n" in launch


def test_packaging_is_deterministic(rule_runner: RuleRunner, python: str) -> None:
    first = package(rule_runner)
    # A fresh engine session: nothing memoized, the process runs again.
    rule_runner.set_options([f"--rlaunch-python={python}"], env={"UNRELATED": "1"})
    assert package(rule_runner) == first


def test_a_sweep_packages_each_of_its_runs_as_itself(rule_runner: RuleRunner) -> None:
    second = COLOCATED_BUILD[COLOCATED_BUILD.index("rl_run(") :].replace(
        'name="run",\n    run_name="colocated-1x8"', 'name="run-2",\n    run_name="colocated-2"'
    )
    rule_runner.write_files(
        {
            "experiments/x/BUILD": COLOCATED_BUILD
            + second
            + 'rl_sweep(name="sweep", dependencies=[":run", ":run-2"])\n'
        }
    )
    sweep = RlSweepPackageFieldSet.create(
        rule_runner.get_target(Address("experiments/x", target_name="sweep"))
    )
    built = rule_runner.request(BuiltPackage, [sweep])
    assert [artifact.relpath for artifact in built.artifacts] == [
        f"experiments/x/{name}/{file}"
        for name in ("run", "run-2")
        for file in ("launch.yaml", "spec.json", "identities.txt")
    ]
    files = {
        entry.path: entry.content
        for entry in rule_runner.request(DigestContents, [built.digest])
    }
    # Each run's folder holds exactly what packaging that run alone writes.
    assert {path: content for path, content in files.items() if "/run/" in path} == package(
        rule_runner
    )
    assert b"colocated-2" in files["experiments/x/run-2/launch.yaml"]
