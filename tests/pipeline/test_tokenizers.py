"""A pipeline compares each stage's tokenizer with the one its upstream trained with before it
launches any stage: a stage whose ids would mean other strings stops it before stage 1 trains
(a real store, the countdown builders' tokenizers, `rlaunch launch` of stage 2's spec)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pipeline.tokenizer_stages import (
    STAGE1,
    SWAPPED,
    parsed,
    second_stage,
    swapped_finding,
    write_spec,
)
from rlaunch.builders import materialize_artifacts
from rlaunch.executors.local_head import STATE_DIR_ENV
from rlaunch.launch_commands import launch_command
from rlaunch.ledger import Ledger

PLAN = [
    "pipeline of tok-stage2@dev: 2 run(s), upstream first; 2 to launch, 0 reused",
    "  build   chain-data@dev: a dev version is rebuilt by each launch",
    "  build   chain-tokenizer@dev: a dev version is rebuilt by each launch",
    "  build   chain-sft@dev: a dev version is rebuilt by each launch",
    "  build   chain-tokenizer-swapped@dev: a dev version is rebuilt by each launch",
    "  launch  [1/2] tok-stage1@dev: never launched",
    "  launch  [2/2] tok-stage2@dev: never launched",
]


@pytest.fixture(autouse=True)
def own_heads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "heads"))


def launch(tmp_path: Path, *extra: str) -> Result:
    spec = write_spec(tmp_path, second_stage("chain-tokenizer-swapped", SWAPPED))
    return CliRunner().invoke(launch_command, [
        str(spec), "--store", str(tmp_path / "store"), "--out",
        str(tmp_path / "dist" / "launch.yaml"), *extra])


def refusal() -> list[str]:
    return [
        "pipeline of tok-stage2@dev: refused",
        "[2/2] tok-stage2@dev: refused before any stage launches",
        "the tokenizers in the store (tok-stage2@dev): refused, 1 error, 0 warnings",
        *swapped_finding(),
    ]


def test_a_stage_whose_tokenizer_means_other_ids_stops_the_pipeline_before_stage_1(
    tmp_path: Path,
) -> None:
    result = launch(tmp_path)
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [*PLAN, *refusal(), ""]
    # Only the two tokenizers were built; stage 1 never launched, no head was started.
    assert "built chain-tokenizer-swapped@dev" in result.stderr
    assert "chain-sft@dev" not in result.stderr
    assert Ledger(str(tmp_path / "store")).read(STAGE1, "dev") is None
    assert not (tmp_path / "heads").exists()


def test_a_dry_run_compares_the_tokenizers_the_store_holds_and_builds_none(
    tmp_path: Path,
) -> None:
    first = launch(tmp_path, "--dry-run")
    assert first.exit_code == 0, first.output
    assert first.stderr.splitlines()[0] == (
        "rlaunch: [2/2] tok-stage2@dev: its tokenizer and the one tok-stage1@dev trained with "
        "are not both in the store; they are compared when it launches (LAUNCH002)")
    assert not (tmp_path / "store" / "chain-tokenizer-swapped").exists()

    spec = parsed(second_stage("chain-tokenizer-swapped", SWAPPED))
    materialize_artifacts({"tokenizer": spec.tokenizer, "upstream": spec.model.run.tokenizer},
                          str(tmp_path / "store"), log=lambda _: None)
    again = launch(tmp_path, "--dry-run")
    assert again.exit_code == 1, again.output
    assert again.stdout.splitlines() == [*PLAN, *refusal(), ""]
