from __future__ import annotations

import pytest
from pants.testutil.rule_runner import QueryRule, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.subsystem import RlaunchPythonNotSet, RlaunchSubsystem


@pytest.fixture
def rule_runner() -> RuleRunner:
    return RuleRunner(
        rules=[*register.rules(), QueryRule(RlaunchSubsystem, [])],
        target_types=register.target_types(),
        isolated_local_store=True,
    )


def test_python_is_read_from_the_environment_variable(rule_runner: RuleRunner) -> None:
    rule_runner.set_options([], env={"PANTS_RLAUNCH_PYTHON": "/opt/runtime/bin/python"})
    subsystem = rule_runner.request(RlaunchSubsystem, [])
    assert subsystem.python == "/opt/runtime/bin/python"
    assert subsystem.runtime_python() == "/opt/runtime/bin/python"
    assert subsystem.store == ""


def test_flags_override_the_environment(rule_runner: RuleRunner) -> None:
    rule_runner.set_options(
        ["--rlaunch-python=/other/bin/python", "--rlaunch-store=gs://bucket/rlaunch"],
        env={"PANTS_RLAUNCH_PYTHON": "/opt/runtime/bin/python"},
    )
    subsystem = rule_runner.request(RlaunchSubsystem, [])
    assert subsystem.runtime_python() == "/other/bin/python"
    assert subsystem.store == "gs://bucket/rlaunch"


def test_empty_python_fails_at_use_with_how_to_set_it(rule_runner: RuleRunner) -> None:
    rule_runner.set_options([], env={})
    subsystem = rule_runner.request(RlaunchSubsystem, [])
    assert subsystem.python == ""
    with pytest.raises(RlaunchPythonNotSet) as error:
        subsystem.runtime_python()
    assert str(error.value) == (
        "[rlaunch].python is empty, so there is no interpreter to run the rlaunch library on. "
        "Run Pants through the repo's `./pants` script (it builds the project runtime and exports "
        "PANTS_RLAUNCH_PYTHON), or set PANTS_RLAUNCH_PYTHON (or --rlaunch-python) to the absolute "
        "path of a CPython 3.11 interpreter that has 3rdparty/requirements.lock installed; "
        "`scripts/runtime` prints one."
    )


def test_relative_python_is_refused(rule_runner: RuleRunner) -> None:
    rule_runner.set_options(["--rlaunch-python=python3.11"], env={})
    subsystem = rule_runner.request(RlaunchSubsystem, [])
    with pytest.raises(RlaunchPythonNotSet) as error:
        subsystem.runtime_python()
    assert str(error.value) == (
        "[rlaunch].python must be an absolute path (Pants runs processes with no PATH), "
        "but was 'python3.11'. `scripts/runtime` prints the project runtime's path."
    )
