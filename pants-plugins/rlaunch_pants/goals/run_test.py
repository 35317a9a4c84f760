from __future__ import annotations

import json
import os

import pytest
from pants.core.goals.run import RunRequest
from pants.core.util_rules import distdir
from pants.engine.addresses import Address
from pants.engine.fs import DigestContents
from pants.testutil.rule_runner import QueryRule, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.goals.run import BuiltArtifactRunFieldSet, RlRunLaunchFieldSet
from rlaunch_pants.testutil import COLOCATED_BUILD

PYTHON = "/opt/runtime/bin/python"


@pytest.fixture
def rule_runner() -> RuleRunner:
    rule_runner = RuleRunner(
        rules=[
            *register.rules(),
            # Part of Pants' core in a real run; a RuleRunner installs only what it is given.
            *distdir.rules(),
            QueryRule(RunRequest, [RlRunLaunchFieldSet]),
            QueryRule(RunRequest, [BuiltArtifactRunFieldSet]),
        ],
        target_types=register.target_types(),
        isolated_local_store=True,
    )
    rule_runner.write_files(
        {
            "experiments/x/BUILD": COLOCATED_BUILD,
            "c/BUILD": (
                'built_artifact(name="data", builder="countdown_data", kind="dataset",'
                ' config={"seed": 7, "train_rows": 100, "eval_rows": 10}, rows=100,'
                ' version="2026.11.29")\n'
            ),
        }
    )
    rule_runner.set_options([f"--rlaunch-python={PYTHON}"])
    return rule_runner


def files_of(rule_runner: RuleRunner, request: RunRequest) -> dict[str, str]:
    contents = rule_runner.request(DigestContents, [request.digest])
    return {entry.path: entry.content.decode() for entry in contents}


def test_run_launches_the_spec_with_the_library_of_this_repo(rule_runner: RuleRunner) -> None:
    field_set = RlRunLaunchFieldSet.create(
        rule_runner.get_target(Address("experiments/x", target_name="run"))
    )
    request = rule_runner.request(RunRequest, [field_set])
    root = rule_runner.build_root
    assert request.args == (
        PYTHON,
        "-m",
        "rlaunch",
        "launch",
        "{chroot}/__rlaunch_specs/experiments/x/run.json",
        "--out",
        os.path.join(root, "dist/experiments/x/run/launch.yaml"),
        "--repo",
        root,
    )
    assert request.extra_env["PYTHONPATH"] == os.path.join(root, "src")
    spec = json.loads(files_of(rule_runner, request)["__rlaunch_specs/experiments/x/run.json"])
    assert spec["name"] == "colocated-1x8"


def test_the_store_option_reaches_launch_and_build(rule_runner: RuleRunner) -> None:
    rule_runner.set_options([f"--rlaunch-python={PYTHON}", "--rlaunch-store=/data/store"])
    launch = rule_runner.request(
        RunRequest,
        [
            RlRunLaunchFieldSet.create(
                rule_runner.get_target(Address("experiments/x", target_name="run"))
            )
        ],
    )
    assert launch.args[-2:] == ("--store", "/data/store")
    build = rule_runner.request(
        RunRequest,
        [BuiltArtifactRunFieldSet.create(rule_runner.get_target(Address("c", target_name="data")))],
    )
    assert build.args == (
        PYTHON,
        "-m",
        "rlaunch",
        "build",
        "{chroot}/__rlaunch_specs/c/data.artifact.json",
        "--out-dir",
        os.path.join(rule_runner.build_root, "dist/c/data"),
        "--store",
        "/data/store",
    )
    artifact = json.loads(files_of(rule_runner, build)["__rlaunch_specs/c/data.artifact.json"])
    assert artifact["name"] == "data" and artifact["type"] == "built"
