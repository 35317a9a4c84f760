"""ART008: a SkyRL run's data is a file SkyRL 0.3.0's PromptDataset reads, not a folder it would
take for a Hub dataset name (rlaunch/preflight/rules/artifacts_format.py)."""

from __future__ import annotations

import pytest

from preflight.helpers import example, findings, messages
from rlaunch.spec.examples import GSM8K_TEST, GSM8K_TRAIN, WORKED_EXAMPLES

PROMPT_DATASET = (
    "SkyRL 0.3.0's PromptDataset (skyrl/train/dataset/dataset.py, "
    "PromptDataset._read_files_and_tokenize) reads a path ending .parquet, .json or .jsonl and "
    "takes any other for a Hugging Face dataset name, which the job would try to download "
    "(datasets.load_dataset) on the GPU cluster"
)
SMOKE_RUNTIME = {
    "name": "rlaunch-smoke-0.1.0", "profile": "smoke", "package": "rlaunch==0.1.0", "git": None,
    "entrypoint": "rlaunch.runtimes.smoke", "required_fixes": [],
}


def fix(slot: str, identity: str) -> str:
    return (
        f"Give {slot} a prompt_parquet built artifact made from {identity} "
        "(built_artifact(builder=\"prompt_parquet\", deps={\"source\": ...}, config with task, "
        "template, ground_truth, env_class, reward_method), as experiments/datasets/BUILD "
        "does): SkyRL then reads its prompts.parquet."
    )


def test_a_raw_snapshot_as_train_data_is_refused_with_the_prompt_parquet_fix() -> None:
    [finding] = findings(example(edits={"train_data": GSM8K_TRAIN}), "ART008")
    assert (finding.severity, finding.paths) == ("error", ("train_data",))
    assert finding.message == (
        "train_data gsm8k-train@2026.11.01 is a raw Hugging Face snapshot (hf_dataset of "
        "openai/gsm8k), so SkyRL's data.train_data would be its store folder "
        f"gsm8k-train/2026.11.01; {PROMPT_DATASET}"
    )
    assert finding.fix == fix("train_data", "gsm8k-train@2026.11.01")


def test_eval_data_renders_as_val_data() -> None:
    [finding] = findings(example(edits={"eval_data": GSM8K_TEST}), "ART008")
    assert finding.paths == ("eval_data",)
    assert finding.message.startswith(
        "eval_data gsm8k-test@2026.11.01 is a raw Hugging Face snapshot (hf_dataset of "
        "openai/gsm8k), so SkyRL's data.val_data would be its store folder gsm8k-test/2026.11.01;"
    )


def test_adopted_and_other_built_data_are_folders_too() -> None:
    adopted = {
        "type": "adopted", "name": "my-prompts", "version": "2026.11.30", "kind": "dataset",
        "uri": "gs://bucket/prompts.parquet", "sha256": "ab" * 32, "facts": None, "rows": 7473,
    }
    assert messages(example(edits={"train_data": adopted}), "ART008") == [
        "train_data my-prompts@2026.11.30 is an adopted artifact, stored as a folder, so "
        "SkyRL's data.train_data would be its store folder my-prompts/2026.11.30; "
        f"{PROMPT_DATASET}"
    ]
    built = {
        "type": "built", "name": "my-rows", "version": "2026.11.30", "kind": "dataset",
        "builder": "my_rows", "config": {}, "deps": {}, "facts": None, "rows": 7473,
    }
    assert messages(example(edits={"train_data": built}), "ART008") == [
        "train_data my-rows@2026.11.30 is built by 'my_rows', which writes no runtime-format "
        "prompt file (the builders that do: countdown_data, prompt_parquet), so SkyRL's "
        f"data.train_data would be its store folder my-rows/2026.11.30; {PROMPT_DATASET}"
    ]


def test_the_smoke_runtime_is_not_skyrl() -> None:
    data = example(edits={"train_data": GSM8K_TRAIN, "runtime": SMOKE_RUNTIME})
    assert messages(data, "ART008") == []


@pytest.mark.parametrize("name", sorted(WORKED_EXAMPLES))
def test_the_worked_examples_hand_skyrl_prompt_files(name: str) -> None:
    assert messages(example(name), "ART008") == []
