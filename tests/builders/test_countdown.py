"""The countdown demo builders: data, tokenizer and an SFT'd tiny model, deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlaunch.builders import BuildError, build_artifact
from rlaunch.builders.countdown import countdown_model_spec
from rlaunch.models.tiny import load_pretrained
from rlaunch.models.tokenizer import CharTokenizer
from rlaunch.spec.artifacts import BuiltArtifact
from rlaunch.tasks.countdown import make_problems, prompt_rows
from rlaunch.tasks.parquet import read_countdown, read_prompts


def quiet(message: str) -> None:
    pass


def small(version: str = "2026.01.01", **changes: object) -> dict:
    return countdown_model_spec(version, train_rows=64, eval_rows=16, sft_steps=3, **changes)


def test_the_graph_builds_a_loadable_model_with_its_data_and_tokenizer(tmp_path: Path) -> None:
    result = build_artifact(BuiltArtifact.model_validate(small()), str(tmp_path), log=quiet)
    assert result.built == ["countdown-data@2026.01.01", "countdown-tokenizer@2026.01.01",
                            "countdown-sft@2026.01.01"]
    data = tmp_path / "countdown-data" / "2026.01.01"
    problems = make_problems(0, 80)
    assert read_prompts(data / "train.parquet", "train_data") == prompt_rows(problems[:64], "train")
    assert read_countdown(data / "train.parquet", "train_data") == problems[:64]
    assert len(read_prompts(data / "eval.parquet", "eval_data")) == 16
    assert result.nodes[0].record.rows == 64
    assert CharTokenizer.load(tmp_path / "countdown-tokenizer" / "2026.01.01") == CharTokenizer()
    model, tokenizer = load_pretrained(result.local_path)
    assert model.config.n_heads == 4 and tokenizer == CharTokenizer()
    metrics = json.loads((result.local_path / "sft_metrics.json").read_text())
    assert metrics["steps"] == 3 and metrics["eval_rows"] == 16


def test_the_same_config_builds_the_same_bytes(tmp_path: Path) -> None:
    spec = BuiltArtifact.model_validate(small())
    first = build_artifact(spec, str(tmp_path / "one"), log=quiet)
    second = build_artifact(spec, str(tmp_path / "two"), log=quiet)
    for one, two in zip(first.nodes, second.nodes, strict=True):
        assert one.record.files == two.record.files


def test_declared_facts_that_the_config_contradicts_fail_before_training(tmp_path: Path) -> None:
    spec = small()
    spec["facts"]["num_attention_heads"] = 8
    lines: list[str] = []
    with pytest.raises(BuildError) as raised:
        build_artifact(BuiltArtifact.model_validate(spec), str(tmp_path), log=lines.append)
    assert str(raised.value) == (
        "countdown-sft@2026.01.01: the declared facts do not match: facts.num_attention_heads: "
        "declared 8, but the model config has num_attention_heads = 4"
    )
    assert not any("SFT for" in line for line in lines)


def test_a_bad_builder_config_names_the_field(tmp_path: Path) -> None:
    spec = small()
    spec["deps"]["data"]["config"] = {"seed": 0, "train_rows": "64", "eval_rows": 16, "x": 1}
    spec["deps"]["data"]["rows"] = None
    with pytest.raises(BuildError) as raised:
        build_artifact(BuiltArtifact.model_validate(spec), str(tmp_path), log=quiet)
    assert str(raised.value) == (
        "countdown-data@2026.01.01: invalid config for builder 'countdown_data': "
        "config.train_rows: Input should be a valid integer (got '64'); "
        "config.x: Extra inputs are not permitted (got 1). Its fields: seed, train_rows, eval_rows"
    )


def test_declared_rows_must_match_the_config(tmp_path: Path) -> None:
    spec = small()
    spec["deps"]["data"]["rows"] = 100
    with pytest.raises(BuildError, match=r"rows declares 100, but config.train_rows is 64"):
        build_artifact(BuiltArtifact.model_validate(spec), str(tmp_path), log=quiet)


def test_sft_model_needs_its_deps(tmp_path: Path) -> None:
    spec = small()
    del spec["deps"]["tokenizer"]
    with pytest.raises(BuildError, match=r"missing: tokenizer"):
        build_artifact(BuiltArtifact.model_validate(spec), str(tmp_path), log=quiet)
