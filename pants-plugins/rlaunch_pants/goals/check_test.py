from __future__ import annotations

import json
import re

import pytest
from pants.core.goals.check import CheckResults
from pants.engine.addresses import Address
from pants.engine.internals.scheduler import ExecutionError
from pants.testutil.rule_runner import QueryRule, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.goals.check import (
    RlaunchPreflightRequest,
    RlaunchPreflightSubsystem,
    RlRunPreflightFieldSet,
    format_spec_report,
    split_report,
)
from rlaunch_pants.subsystem import RlaunchPythonNotSet
from rlaunch_pants.testutil import COLOCATED_BUILD, library_json, write_library


def _section(build: str, start: str, end: str) -> str:
    return build[build.index(start) : build.index(end)]


# A second run whose plan has one rollout engine of TP 8 on a model with 12 attention heads.
TP8_ON_12_HEADS = (
    _section(COLOCATED_BUILD, "role_plan(", "rl_execution(")
    .replace('name="plan"', 'name="tp8-plan"')
    .replace("num_engines=8, tensor_parallel_size=1,", "num_engines=1, tensor_parallel_size=8,")
    + "rl_run("
    + COLOCATED_BUILD.split("rl_run(")[1]
    .replace('name="run"', 'name="tp8"')
    .replace('"colocated-1x8"', '"tp8-on-12-heads"')
    .replace('role_plan=":plan"', 'role_plan=":tp8-plan"')
)


@pytest.fixture
def rule_runner(python: str) -> RuleRunner:
    rule_runner = RuleRunner(
        rules=[*register.rules(), QueryRule(CheckResults, [RlaunchPreflightRequest])],
        target_types=register.target_types(),
        isolated_local_store=True,
    )
    write_library(rule_runner)
    rule_runner.set_options([f"--rlaunch-python={python}"], env_inherit={"PATH"})
    return rule_runner


def _line_of(text: str, needle: str) -> int:
    (line,) = [n for n, found in enumerate(text.splitlines(), 1) if needle in found]
    return line


def check(rule_runner: RuleRunner, *addresses: Address) -> CheckResults:
    field_sets = [
        RlRunPreflightFieldSet.create(rule_runner.get_target(address)) for address in addresses
    ]
    return rule_runner.request(CheckResults, [RlaunchPreflightRequest(field_sets)])


def test_a_sound_run_passes(rule_runner: RuleRunner) -> None:
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD})
    results = check(rule_runner, Address("experiments/x", target_name="run"))
    assert results.checker_name == "rlaunch-preflight"
    (result,) = results.results
    assert result.exit_code == 0
    assert result.partition_description == "experiments/x:run"
    heading, warning, *where, fix = result.stdout.splitlines()
    run_line, data_line, plan_line = (
        _line_of(COLOCATED_BUILD, f'name="{name}"')
        for name in ("run", "gsm8k-train-prompts", "plan")
    )
    assert heading == (
        f"experiments/x:run (experiments/x/BUILD:{run_line}) (colocated-1x8@2026.11.29): ok, "
        "0 errors, 1 warning"
    )
    # 7473 GSM8K rows are 29 batches of 256 and 49 more: a dropped tail warns, never refuses.
    assert warning.startswith("warning BATCH010 train_data.rows, role_plan.batch.train_batch_size:")
    assert where == [
        f"    in experiments/x/BUILD:{data_line} (experiments/x:gsm8k-train-prompts): rows",
        f"    in experiments/x/BUILD:{plan_line} (experiments/x:plan): batch.train_batch_size",
    ]
    assert fix.startswith("    fix: ")


def test_one_result_per_run_with_the_findings_of_each(rule_runner: RuleRunner) -> None:
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD + TP8_ON_12_HEADS})
    results = check(
        rule_runner,
        Address("experiments/x", target_name="tp8"),
        Address("experiments/x", target_name="run"),
    )
    by_address = {result.partition_description: result for result in results.results}
    assert sorted(by_address) == ["experiments/x:run", "experiments/x:tp8"]
    assert by_address["experiments/x:run"].exit_code == 0
    refused = by_address["experiments/x:tp8"]
    assert refused.exit_code == 1
    heading, *lines = refused.stdout.splitlines()
    build = COLOCATED_BUILD + TP8_ON_12_HEADS
    run_line, plan_line = (_line_of(build, f'name="{name}"') for name in ("tp8", "tp8-plan"))
    assert heading.startswith(
        f"experiments/x:tp8 (experiments/x/BUILD:{run_line}) (tp8-on-12-heads@2026.11.29): "
        "refused, "
    )
    codes = [line.split()[1] for line in lines if line.startswith("error ")]
    # TP 8 does not divide 12 heads; 1 engine x TP 8 = 8 GPUs still matches the policy's 8.
    assert codes == ["GEO016"], refused.stdout
    # The finding names the role plan's target, its BUILD line and the key as written there.
    assert lines[1] == (
        f"    in experiments/x/BUILD:{plan_line} (experiments/x:tp8-plan): "
        "rollout.tensor_parallel_size"
    )
    assert results.exit_code == 1


SWEEP = 'rl_sweep(name="sweep", dependencies=[":run", ":tp8"])\n'


def test_a_runtime_pinned_two_ways_is_rt001(rule_runner: RuleRunner) -> None:
    """The BUILD file parses; the library's RT001 refuses it, naming the fields as written."""
    pinned = 'package="skyrl==0.3.0",'
    build = COLOCATED_BUILD.replace(pinned, pinned + ' git=dict(repo="o/n", commit="main"),')
    rule_runner.write_files({"experiments/x/BUILD": build})
    (result,) = check(rule_runner, Address("experiments/x", target_name="run")).results
    assert result.exit_code == 1
    line = _line_of(build, 'name="skyrl-0.3.0"')
    errors = result.stdout.split("warning ")[0].splitlines()[1:]
    assert errors == [
        "error RT001 runtime.package, runtime.git: runtime.package and runtime.git are both "
        "set; exactly one pins the runtime",
        f"    in experiments/x/BUILD:{line} (experiments/x:skyrl-0.3.0): package, git",
        "    fix: Set exactly one of runtime.package (name==X.Y.Z) or runtime.git (repo and "
        "commit).",
        "error RT001 runtime.git.commit: runtime.git.commit 'main' is not a 40-hex commit sha",
        f"    in experiments/x/BUILD:{line} (experiments/x:skyrl-0.3.0): git.commit",
        "    fix: Pin runtime.git.commit to the full commit sha (git rev-parse <ref>).",
    ], result.stdout


def test_a_sweep_is_checked_as_its_runs_each_once(rule_runner: RuleRunner) -> None:
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD + TP8_ON_12_HEADS + SWEEP})
    sweep = Address("experiments/x", target_name="sweep")
    assert RlRunPreflightFieldSet.is_applicable(rule_runner.get_target(sweep))
    alone = check(rule_runner, sweep)
    # The sweep and one of its runs asked for together: that run is still checked once.
    together = check(rule_runner, sweep, Address("experiments/x", target_name="run"))
    for results in (alone, together):
        codes = {result.partition_description: result.exit_code for result in results.results}
        assert codes == {"experiments/x:run": 0, "experiments/x:tp8": 1}
        assert results.exit_code == 1
    refused = {r.partition_description: r for r in alone.results}["experiments/x:tp8"]
    assert "error GEO016 " in refused.stdout


def test_a_sweep_of_something_else_than_runs_is_not_checked(rule_runner: RuleRunner) -> None:
    rule_runner.write_files(
        {"experiments/x/BUILD": COLOCATED_BUILD + 'rl_sweep(name="odd", dependencies=[":plan"])\n'}
    )
    with pytest.raises(ExecutionError) as caught:
        check(rule_runner, Address("experiments/x", target_name="odd"))
    assert (
        "The 'dependencies' field in target experiments/x:odd must list rl_run targets only "
        "(the points of the sweep and their smokes), but was ['experiments/x:plan']"
    ) in str(caught.value)


def test_skip_reports_nothing(rule_runner: RuleRunner, python: str) -> None:
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD})
    rule_runner.set_options(
        [f"--rlaunch-python={python}", "--rlaunch-preflight-skip"], env_inherit={"PATH"}
    )
    results = check(rule_runner, Address("experiments/x", target_name="run"))
    assert results.skipped


def test_no_interpreter_is_a_clear_error(rule_runner: RuleRunner) -> None:
    rule_runner.write_files({"experiments/x/BUILD": COLOCATED_BUILD})
    rule_runner.set_options([], env={})
    with pytest.raises(ExecutionError) as error:
        check(rule_runner, Address("experiments/x", target_name="run"))
    (wrapped,) = error.value.wrapped_exceptions
    assert isinstance(wrapped, RlaunchPythonNotSet)
    assert str(wrapped).startswith("[rlaunch].python is empty")


def test_the_text_is_the_librarys_own_naming_the_build_targets(python: str) -> None:
    """The plugin prints the library's `--format text` output, which names the run's target
    and, for every finding, the targets and BUILD fields it is about."""
    # Runs on the project runtime in a subprocess: the plugin's own process never imports the
    # library, so the library is only named here, inside the program text.
    code = """
import importlib, json
finding = importlib.import_module("rlaunch.preflight.engine.finding")
report = importlib.import_module("rlaunch.preflight.engine.report")
sources = importlib.import_module("rlaunch.spec.sources")
build_sources = sources.BuildSources.from_data({
    "": {"address": "x:run", "build_file": "x/BUILD", "line": 30, "fields": {}},
    "role_plan": {"address": "x:plan", "build_file": "x/BUILD", "line": 3, "fields": {}},
})
findings = [
    finding.error("GEO003", ("role_plan.policy", "role_plan.rollout"), "world 12", "Fix."),
]
text = report.format_text(findings, "a/spec.json", "run@dev", build_sources)
entry = report.spec_report("a/spec.json", "run@dev", findings, text=text)
print(json.dumps({"text": text, "report": json.loads(report.format_json([entry]))}))
"""
    data = library_json(python, code)
    assert isinstance(data, dict)
    assert data["text"] == (
        "x:run (x/BUILD:30) (run@dev): refused, 1 error, 0 warnings\n"
        "error GEO003 role_plan.policy, role_plan.rollout: world 12\n"
        "    in x/BUILD:3 (x:plan): policy, rollout\n"
        "    fix: Fix.\n"
    )
    entry = data["report"]["specs"][0]
    assert format_spec_report(entry, "x:run") == data["text"]
    with pytest.raises(ValueError, match="the preflight report for x:run has no text"):
        format_spec_report({"source": "a/spec.json"}, "x:run")


def test_split_report_maps_sources_to_addresses() -> None:
    sources = {"a.json": "x:a", "b.json": "x:b"}
    report = {
        "specs": [
            {
                "source": "a.json",
                "identity": "a@dev",
                "valid": True,
                "findings": [],
                "text": "a.json (a@dev): ok, 0 errors, 0 warnings\n",
            },
            {
                "source": "b.json",
                "identity": None,
                "valid": False,
                "findings": [],
                "problems": ["seed: required key is missing"],
                "text": "b.json: not a valid RunSpec (1 problem(s))\n"
                "  - seed: required key is missing\n"
                "  The format is documented in docs/spec-format.md.\n",
            },
        ]
    }
    split = split_report(json.dumps(report).encode(), sources)
    assert split == {
        "a.json": (0, report["specs"][0]["text"]),
        "b.json": (2, report["specs"][1]["text"]),
    }
    assert split_report(b"Traceback (most recent call last):", sources) is None
    assert split_report(json.dumps({"specs": report["specs"][:1]}).encode(), sources) is None


def test_the_help_names_every_rule_that_check_does_not_run(python: str) -> None:
    """The world-scope rules run only at launch: the help of `check`'s options lists exactly
    the library's, so a new world rule cannot be forgotten there."""
    world = library_json(
        python,
        "import json, rlaunch.preflight; "
        "from rlaunch.preflight.engine.registry import registered_rules; "
        "print(json.dumps(sorted(r.code for r in registered_rules() if r.scope == 'world')))",
    )
    assert world == ["EXEC004", "EXEC009", "PIPE003", "RES001", "RES002", "RES003", "RES004",
                     "VER002", "VER003", "VER004", "VER005", "VER006"]
    help_text = RlaunchPreflightSubsystem.help
    assert isinstance(help_text, str)
    assert "NOT run by `check`" in help_text
    listed = sorted(re.findall(r"^    ([A-Z]+[0-9]{3}): ", help_text, flags=re.MULTILINE))
    assert listed == world
