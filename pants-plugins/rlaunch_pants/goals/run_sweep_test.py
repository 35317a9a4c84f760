from __future__ import annotations

import json
import os

import pytest
from pants.core.goals.run import RunRequest
from pants.core.util_rules import distdir
from pants.engine.addresses import Address
from pants.engine.fs import DigestContents
from pants.engine.internals.scheduler import ExecutionError
from pants.testutil.rule_runner import QueryRule, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.goals.run_sweep import RlSweepRunFieldSet
from rlaunch_pants.testutil import COLOCATED_BUILD

PYTHON = "/opt/runtime/bin/python"


@pytest.fixture
def rule_runner() -> RuleRunner:
    rule_runner = RuleRunner(
        rules=[*register.rules(), *distdir.rules(), QueryRule(RunRequest, [RlSweepRunFieldSet])],
        target_types=register.target_types(),
        isolated_local_store=True,
    )
    second = COLOCATED_BUILD[COLOCATED_BUILD.index("rl_run(") :].replace(
        'name="run",\n    run_name="colocated-1x8"', 'name="run-2",\n    run_name="colocated-2"'
    )
    rule_runner.write_files(
        {
            "experiments/x/BUILD": COLOCATED_BUILD
            + second
            + 'rl_sweep(name="sweep", dependencies=[":run", ":run-2"], max_parallel=2)\n'
            + 'rl_sweep(name="odd", dependencies=[":run", ":plan"])\n',
        }
    )
    rule_runner.set_options([f"--rlaunch-python={PYTHON}"])
    return rule_runner


def request_for(rule_runner: RuleRunner, name: str) -> RunRequest:
    target = rule_runner.get_target(Address("experiments/x", target_name=name))
    return rule_runner.request(RunRequest, [RlSweepRunFieldSet.create(target)])


def test_run_launches_every_run_of_the_sweep(rule_runner: RuleRunner) -> None:
    request = request_for(rule_runner, "sweep")
    root = rule_runner.build_root
    assert request.args == (
        PYTHON,
        "-m",
        "rlaunch",
        "sweep",
        "{chroot}/__rlaunch_specs/experiments/x/run.json",
        "{chroot}/__rlaunch_specs/experiments/x/run-2.json",
        "--out-dir",
        os.path.join(root, "dist/experiments/x/sweep"),
        "--repo",
        root,
        "--max-parallel",
        "2",
    )
    contents = rule_runner.request(DigestContents, [request.digest])
    names = {entry.path: json.loads(entry.content)["name"] for entry in contents}
    assert names == {
        "__rlaunch_specs/experiments/x/run.json": "colocated-1x8",
        "__rlaunch_specs/experiments/x/run-2.json": "colocated-2",
    }


def test_a_sweep_of_something_else_than_runs_is_refused(rule_runner: RuleRunner) -> None:
    with pytest.raises(ExecutionError) as caught:
        request_for(rule_runner, "odd")
    assert (
        "The 'dependencies' field in target experiments/x:odd must list rl_run targets only "
        "(the points of the sweep and their smokes), but was ['experiments/x:plan']"
    ) in str(caught.value)
