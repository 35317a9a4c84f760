"""`@rl_build_options`: plan without --run, dry run, and --run through the one launch path."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from executors.support import (
    HeadWatch,
    clean_git_repo,
    echo_profiles,
    echo_spec,
    job_env,
    shared_store,
)
from rlaunch.executors.local_head import STATE_DIR_ENV
from rlaunch.experiment import rl_build_options
from rlaunch.ledger import Ledger
from rlaunch.spec import RunSpec, catalog, parse_spec

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "click_experiment.py"


def load_example():
    spec = importlib.util.spec_from_file_location("click_experiment", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def in_clean_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The experiment runs from a clean launcher checkout (calendar versions need one)."""
    repo = clean_git_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    return repo


def test_without_run_it_prints_the_plan_and_submits_nothing(
    tmp_path: Path, in_clean_checkout: Path
) -> None:
    store = tmp_path / "store"
    outcome = CliRunner().invoke(load_example().main, ["--version", "dev", "--store", str(store)])
    assert outcome.exit_code == 0, outcome.output
    lines = outcome.stdout.splitlines()
    assert lines[0].startswith("countdown-click-smoke@dev: fingerprint sha256:")
    assert lines[0].endswith("; smoke of countdown-click@dev")
    assert "  policy     fsdp 1 node(s) x 2 GPU(s) = 2 GPU(s), SP 1 -> DP 2" in lines
    assert ("  rollout    2 engine(s) x (TP 1 x PP 1 x DP 1) = 2 GPU(s), EP 1, vllm; "
            "colocate_all true") in lines
    assert f"  checkpoint {store}/countdown-click/dev/checkpoints" in lines
    assert f"  ledger     {store}/_ledger/countdown-click/dev.json" in lines
    assert lines[-1] == "preflight passed; nothing was submitted (add --run to launch)"
    assert not store.exists() or not (store / "_ledger").exists()
    assert not (in_clean_checkout / "dist").exists()


def test_a_calendar_plan_counts_on_the_smoke_returned_before_the_full_run(
    tmp_path: Path, in_clean_checkout: Path
) -> None:
    main = load_example().main
    args = ["--version", "2026.11.29", "--store", str(tmp_path / "store")]
    outcome = CliRunner().invoke(main, args)
    assert outcome.exit_code == 0, outcome.output
    assert ("rlaunch: smoke gate of countdown-click@2026.11.29: pending on "
            "countdown-click-smoke@2026.11.29, which is launched before it") in outcome.stderr
    alone = CliRunner().invoke(main, [*args, "--no-smoke"])
    assert alone.exit_code == 1
    assert "rlaunch: countdown-click@2026.11.29 refused" in alone.stderr
    assert "error LAUNCH001 version, smoke_of: calendar version countdown-click@2026.11.29" in (
        alone.stderr)


def test_dry_run_writes_each_launch_yaml(tmp_path: Path, in_clean_checkout: Path) -> None:
    outcome = CliRunner().invoke(
        load_example().main, ["--version", "dev", "--dry-run", "--store", str(tmp_path / "s")]
    )
    assert outcome.exit_code == 0, outcome.output
    for name in ("countdown-click-smoke", "countdown-click"):
        path = in_clean_checkout / "dist" / name / "launch.yaml"
        assert path.exists()
        assert f"-m rlaunch.runtimes.smoke {path.resolve()}" in outcome.stderr
    assert Ledger(str(tmp_path / "s")).read("countdown-click", "dev") is None


def test_the_decorator_goes_on_the_function() -> None:
    with pytest.raises(TypeError, match="@rl_build_options goes below @click.command()"):
        rl_build_options(click.command()(lambda version: None))


def test_a_main_that_returns_nothing_is_a_usage_error() -> None:
    @click.command()
    @rl_build_options
    def empty(version: str) -> list[RunSpec]:
        return []

    outcome = CliRunner().invoke(empty, ["--version", "dev"])
    assert outcome.exit_code == 2
    assert "returned no run handle; return the RunSpec(s) to launch" in outcome.output


@pytest.fixture(scope="module")
def head(echo_head: HeadWatch, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The session's echo head (tests/conftest.py; shared with test_launch) for the launches of
    the module, their environment a test launcher's."""
    root = tmp_path_factory.mktemp("experiment")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(catalog, "PROFILES", echo_profiles())
        for name, value in job_env(**{STATE_DIR_ENV: str(echo_head.state_dir)}).items():
            patch.setenv(name, value)
        yield root
        echo_head.snapshot()


def test_run_launches_the_handles_in_order_through_the_launch_path(
    head: Path, tmp_path_factory: pytest.TempPathFactory, in_clean_checkout: Path
) -> None:
    store = shared_store(tmp_path_factory.getbasetemp())

    @click.command()
    @rl_build_options
    def experiment(version: str) -> list[RunSpec]:
        full = echo_spec(store, name="echo-exp", version=version)
        smoke = echo_spec(store, name="echo-exp-smoke", version=version,
                          smoke_of=f"echo-exp@{version}")
        return [parse_spec(smoke), full]

    outcome = CliRunner().invoke(experiment, ["--version", "2026.11.29", "--run"])
    assert outcome.exit_code == 0, outcome.output
    assert outcome.stdout.count("echo-runtime: done") == 2
    assert ("rlaunch: recorded echo-exp-smoke@2026.11.29 as a successful smoke of "
            "echo-exp@2026.11.29") in outcome.stderr
    ledger = Ledger(str(store))
    full = ledger.read("echo-exp", "2026.11.29")
    assert full["status"] == "SUCCEEDED" and full["skip_smoke_gate"] is None
    assert [r["smoke"] for r in full["smoke_results"]] == ["echo-exp-smoke@2026.11.29"]
    assert (in_clean_checkout / "dist" / "echo-exp" / "launch.yaml").exists()


def test_a_pipeline_main_plans_its_upstream_stage_first(
    tmp_path: Path, in_clean_checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    spec = importlib.util.spec_from_file_location("click_pipeline",
                                                  EXAMPLE.with_name("click_pipeline.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    store = tmp_path / "store"
    outcome = CliRunner().invoke(module.main, ["--version", "dev", "--store", str(store)])
    assert outcome.exit_code == 0, outcome.output
    lines = outcome.stdout.splitlines()
    assert lines[:6] == [
        "pipeline of countdown-click-stage2@dev: 2 run(s), upstream first; 2 to launch, 0 "
        "reused",
        "  build   countdown-data@2026.11.01: not in the store",
        "  build   countdown-tokenizer@2026.11.01: not in the store",
        "  build   countdown-sft@2026.11.01: not in the store",
        "  launch  [1/2] countdown-click-stage1@dev: never launched",
        "  launch  [2/2] countdown-click-stage2@dev: never launched",
    ]
    assert "  inputs     model countdown-click-stage1@dev, tokenizer countdown-sft@2026.11.01, " \
        "train_data countdown-data@2026.11.01, eval_data countdown-data@2026.11.01" in lines
    assert ("rlaunch: model of countdown-click-stage2@dev: pending on "
            "countdown-click-stage1@dev, which is launched before it") in outcome.stderr
    assert lines[-1] == "preflight passed; nothing was submitted (add --run to launch)"
    assert not (store / "_ledger").exists()
