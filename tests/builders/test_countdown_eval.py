"""The `greedy_eval` builder: a report of each model's greedy reward, cached by fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builders.helpers import ADAPTER
from rlaunch.builders import BuildError, build_artifact
from rlaunch.builders.countdown import countdown_model_spec
from rlaunch.models.sft import mean_reward
from rlaunch.models.tiny import load_pretrained
from rlaunch.tasks.parquet import read_countdown


def eval_spec(models: dict, *, rows: int = 40, version: str = "2026.11.30") -> dict:
    data = next(iter(models.values()))["deps"]["data"]
    return {
        "type": "built", "name": "countdown-eval", "version": version, "kind": "report",
        "builder": "greedy_eval",
        "config": {"environment": "countdown", "rows": rows, "max_new_tokens": 8},
        "deps": {"data": data, **models}, "facts": None, "rows": None,
    }


def test_the_report_scores_each_model_with_the_tasks_reward(tmp_path: Path) -> None:
    short = countdown_model_spec("2026.11.30", train_rows=200, eval_rows=60, sft_steps=5)
    longer = dict(short, name="countdown-sft-longer",
                  config=dict(short["config"], steps=60))
    artifact = ADAPTER.validate_python(eval_spec({"early": short, "late": longer}))
    logs: list[str] = []
    result = build_artifact(artifact, str(tmp_path), log=logs.append)
    report = json.loads((result.local_path / "report.json").read_text())
    assert (report["data"], report["rows"], report["temperature"]) == (
        "countdown-data@2026.11.30", 40, 0.0)
    assert list(report["models"]) == ["early", "late"]
    # The same number the SFT builder's own greedy eval computes for the same model and rows.
    store = tmp_path
    problems = read_countdown(store / "countdown-data/2026.11.30/eval.parquet", "data")[:40]
    model, tokenizer = load_pretrained(store / "countdown-sft-longer/2026.11.30")
    assert report["models"]["late"]["model"] == "countdown-sft-longer@2026.11.30"
    assert report["models"]["late"]["mean_reward"] == pytest.approx(
        mean_reward(model, tokenizer, problems))
    samples = [json.loads(line) for line in
               (result.local_path / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 80 and {s["model"] for s in samples} == {"early", "late"}
    late = [s["reward"] for s in samples if s["model"] == "late"]
    assert sum(late) / 40 == pytest.approx(report["models"]["late"]["mean_reward"])
    assert any(line.startswith("countdown-eval@2026.11.30: late countdown-sft-longer@"
                               "2026.11.30 on 40 problems of countdown-data@2026.11.30: mean "
                               "reward ") for line in logs)
    # Cached by fingerprint: the same eval again is reused, not evaluated again.
    logs.clear()
    again = build_artifact(artifact, str(tmp_path), log=logs.append)
    assert again.reused == [node.identity for node in again.nodes]


def test_an_eval_without_a_model_says_what_it_needs(tmp_path: Path) -> None:
    spec = eval_spec({"model": countdown_model_spec("2026.11.30", train_rows=50,
                                                    eval_rows=10, sft_steps=1)})
    del spec["deps"]["model"]
    with pytest.raises(BuildError) as error:
        build_artifact(ADAPTER.validate_python(spec), str(tmp_path), log=lambda text: None)
    assert str(error.value) == (
        "countdown-eval@2026.11.30: greedy_eval needs deps `data` (a countdown_data dataset) "
        "and at least one model slot (a model or an rl_run's export, e.g. model=\":grpo\"); "
        "it has data"
    )
