"""`rlaunch build` of an eval stage: the runs it reads come first, or it says how to launch them."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rlaunch.builders.countdown import countdown_model_spec
from rlaunch.launch_commands import launch_command
from rlaunch.pipeline.commands import build
from rlaunch.spec.catalog import SKYRL_EVAL_ENTRYPOINT
from rlaunch.spec.examples import worked_example


def eval_file(tmp_path: Path, *, run_entrypoint: str | None = None) -> Path:
    run = worked_example("colocated-1x8")
    if run_entrypoint is not None:
        run["runtime"]["entrypoint"] = run_entrypoint
    report = {
        "type": "built", "name": "stage1-eval", "version": "2026.11.29", "kind": "report",
        "builder": "greedy_eval",
        "config": {"environment": "countdown", "rows": 8, "max_new_tokens": 8},
        "deps": {"data": countdown_model_spec("2026.11.29", train_rows=20,
                                              eval_rows=8)["deps"]["data"],
                 "model": {"type": "run_export", "name": run["name"],
                           "version": run["version"], "run": run}},
        "facts": None, "rows": None,
    }
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(report))
    return path


def test_only_builds_alone_and_names_the_run_to_launch(tmp_path: Path) -> None:
    result = CliRunner().invoke(build, [str(eval_file(tmp_path)), "--only", "--store",
                                        str(tmp_path / "store")])
    assert result.exit_code == 1
    assert "error: colocated-1x8@2026.11.29 is the export of run colocated-1x8@2026.11.29, " \
        "which has not finished: never launched; launch it first" in result.output


def test_a_dry_run_prints_the_runs_it_would_launch_first(tmp_path: Path) -> None:
    result = CliRunner().invoke(build, [str(eval_file(tmp_path)), "--dry-run", "--store",
                                        str(tmp_path / "store"), "--out-dir",
                                        str(tmp_path / "dist")])
    lines = result.stdout.splitlines()
    assert lines[0] == ("pipeline of stage1-eval@2026.11.29: 1 run(s), upstream first; 1 to "
                        "launch, 0 reused")
    assert "  launch  [1/1] colocated-1x8@2026.11.29: never launched" in lines
    assert not (tmp_path / "store" / "stage1-eval").exists()


def test_a_report_on_an_eval_run_is_refused_before_any_run_launches(tmp_path: Path) -> None:
    result = CliRunner().invoke(build, [
        str(eval_file(tmp_path, run_entrypoint=SKYRL_EVAL_ENTRYPOINT)), "--dry-run", "--store",
        str(tmp_path / "store"), "--out-dir", str(tmp_path / "dist")])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: {tmp_path}/eval.json: the artifact graph breaks a rule:",
        "  - PIPE004 stage1-eval.deps.model is the export of colocated-1x8@2026.11.29, an eval "
        f"run (runtime.entrypoint {SKYRL_EVAL_ENTRYPOINT} only evaluates): that export is its "
        "report (report.json, samples.jsonl), not a model; the builder of stage1-eval would find "
        "no model to load in it. Set stage1-eval.deps.model to the model the eval scores "
        "(qwen2.5-1.5b-instruct@2026.11.01, the eval's model) instead of the eval.",
    ]
    assert not (tmp_path / "dist").exists()


def stage2_file(tmp_path: Path) -> Path:
    data = worked_example("grpo-stage2")
    for run in (data, data["model"]["run"]):
        run["version"] = "dev"
        run["execution"]["executor"] = "dry-run"
    data["model"]["version"] = "dev"
    path = tmp_path / "stage2.json"
    path.write_text(json.dumps(data))
    return path


def test_launch_only_refuses_a_stage_whose_upstream_has_not_finished(tmp_path: Path) -> None:
    result = CliRunner().invoke(launch_command, [
        str(stage2_file(tmp_path)), "--only", "--dry-run", "--store", str(tmp_path / "store"),
        "--out", str(tmp_path / "dist" / "launch.yaml")])
    assert result.exit_code == 1
    assert ("error PIPE003 model: model is the export of colocated-1x8@dev, which has not "
            "finished: never launched") in result.stderr
    assert ("fix: Launch colocated-1x8@dev first: `rlaunch launch` of this spec launches every "
            "unfinished stage before it") in result.stderr


def test_launch_of_a_stage_plans_its_upstream_first(tmp_path: Path) -> None:
    result = CliRunner().invoke(launch_command, [
        str(stage2_file(tmp_path)), "--dry-run", "--store", str(tmp_path / "store"),
        "--out", str(tmp_path / "dist" / "launch.yaml")])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == ("pipeline of grpo-stage2@dev: 2 run(s), upstream first; 2 to launch, "
                        "0 reused")
    assert lines[-3:] == [
        f"[1/2] colocated-1x8@dev: dry run, nothing submitted "
        f"({tmp_path}/dist/colocated-1x8/launch.yaml)",
        f"[2/2] grpo-stage2@dev: dry run, nothing submitted "
        f"({tmp_path}/dist/grpo-stage2/launch.yaml)",
        "pipeline: dry run; nothing submitted",
    ]
    assert ("[2/2] rlaunch: model of grpo-stage2@dev: pending on colocated-1x8@dev, which is "
            "launched before it") in result.stderr
