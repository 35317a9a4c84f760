from __future__ import annotations

import pytest
from pants.engine.fs import EMPTY_DIGEST
from pants.engine.process import Process
from pants.testutil.rule_runner import QueryRule, RuleRunner
from pants.util.frozendict import FrozenDict

from rlaunch_pants import register
from rlaunch_pants.process import RlaunchProcess
from rlaunch_pants.testutil import write_library


@pytest.fixture
def rule_runner() -> RuleRunner:
    rule_runner = RuleRunner(
        rules=[*register.rules(), QueryRule(Process, [RlaunchProcess])],
        target_types=register.target_types(),
        isolated_local_store=True,
    )
    write_library(rule_runner)
    return rule_runner


def process_env(rule_runner: RuleRunner, env: dict[str, str],
                given: dict[str, str] | None = None) -> dict[str, str]:
    rule_runner.set_options(["--rlaunch-python=/opt/runtime/bin/python"], env=env)
    process = rule_runner.request(Process, [RlaunchProcess(
        args=("check", "spec.json"), description="check", input_digest=EMPTY_DIGEST,
        env=FrozenDict(given or {}))])
    return dict(process.env)


def test_a_library_process_finds_the_users_cache_as_the_user_does(rule_runner: RuleRunner) -> None:
    env = process_env(rule_runner, {"XDG_CACHE_HOME": "/srv/cache", "HOME": "/home/ada",
                                    "UNRELATED": "1"})
    assert env == {"PYTHONPATH": "__rlaunch_library/src", "PYTHONDONTWRITEBYTECODE": "1",
                   "PYTHONNOUSERSITE": "1", "XDG_CACHE_HOME": "/srv/cache",
                   "HOME": "/home/ada"}


def test_unset_or_empty_cache_variables_are_left_out_and_a_goals_own_win(
    rule_runner: RuleRunner,
) -> None:
    env = process_env(rule_runner, {"XDG_CACHE_HOME": ""}, {"HOME": "/home/grace"})
    assert "XDG_CACHE_HOME" not in env
    assert env["HOME"] == "/home/grace"
