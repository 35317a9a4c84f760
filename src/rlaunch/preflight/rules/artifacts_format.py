"""Artifacts in the runtime's format: the data a SkyRL run hands PromptDataset."""

from __future__ import annotations

from collections.abc import Iterator

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.artifacts import AdoptedArtifact, BuiltArtifact, HFDataset
from rlaunch.spec.examples import GSM8K_TRAIN
from rlaunch.spec.skyrl_mapping import data_slots
from rlaunch.tasks.prompts import DATA_FILES, data_file

SKYRL_PROFILE = "skyrl"
DATA_SLOTS = data_slots()
"""The run's data slots and the SkyRL setting each renders into (the SkyRL mapping table)."""


def _what(artifact: object) -> str:
    if isinstance(artifact, HFDataset):
        return f"a raw Hugging Face snapshot (hf_dataset of {artifact.repo_id})"
    if isinstance(artifact, AdoptedArtifact):
        return "an adopted artifact, stored as a folder"
    if isinstance(artifact, BuiltArtifact):
        makers = ", ".join(sorted(DATA_FILES))
        return (f"built by {artifact.builder!r}, which writes no runtime-format prompt file (the "
                f"builders that do: {makers})")
    return f"a {type(artifact).__name__}, stored as a folder"


@rule(
    "ART008",
    "A SkyRL run's train and eval data are files PromptDataset reads (.parquet), not folders "
    "it would take for Hub dataset names.",
    example=Example(edits={"train_data": GSM8K_TRAIN}),
    reads_plan=False,
)
def skyrl_data_is_a_prompt_file(check: Check) -> Iterator[Finding]:
    spec = check.spec
    if spec.runtime.profile != SKYRL_PROFILE:
        return
    for slot, setting in DATA_SLOTS.items():
        artifact = getattr(spec, slot)
        if artifact is None:
            continue
        builder = artifact.builder if isinstance(artifact, BuiltArtifact) else None
        if data_file(builder, slot) is not None:
            continue
        identity = f"{artifact.name}@{artifact.version}"
        yield error(
            "ART008", (slot,),
            f"{slot} {identity} is {_what(artifact)}, so SkyRL's {setting} would be its store "
            f"folder {artifact.name}/{artifact.version}; SkyRL 0.3.0's PromptDataset "
            "(skyrl/train/dataset/dataset.py, PromptDataset._read_files_and_tokenize) reads a "
            "path ending .parquet, .json or .jsonl and takes any other for a Hugging Face "
            "dataset name, which the job would try to download (datasets.load_dataset) on the "
            "GPU cluster",
            f"Give {slot} a prompt_parquet built artifact made from {identity} "
            "(built_artifact(builder=\"prompt_parquet\", deps={\"source\": ...}, config with "
            "task, template, ground_truth, env_class, reward_method), as "
            "experiments/datasets/BUILD does): SkyRL then reads its prompts.parquet.",
        )
