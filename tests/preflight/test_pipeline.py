"""PIPE004: an eval run's export (its report) is never read as a model."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from preflight.helpers import example, findings, messages
from rlaunch.spec.catalog import SKYRL_EVAL_ENTRYPOINT

TRAINING_RUN = "colocated-1x8@2026.11.29"


def eval_export(name: str = "stage1-eval") -> dict[str, Any]:
    """The export of an eval run that scores the training run `colocated-1x8`'s export."""
    scored = example("grpo-stage2")
    scored.update(name=name, runtime=dict(scored["runtime"], entrypoint=SKYRL_EVAL_ENTRYPOINT))
    return {"type": "run_export", "name": name, "version": scored["version"], "run": scored}


def reads_as_model(path: str) -> str:
    return (
        f"{path} is the export of stage1-eval@2026.11.29, an eval run (runtime.entrypoint "
        f"{SKYRL_EVAL_ENTRYPOINT} only evaluates): that export is its report (report.json, "
        "samples.jsonl), not a model; the run would find no model to load in it"
    )


@pytest.mark.parametrize("slot", ["model", "reference_model", "critic_model"])
def test_a_model_slot_may_not_name_an_eval_run(slot: str) -> None:
    found = findings(example("grpo-stage2", {slot: eval_export()}), "PIPE004")
    assert [(f.paths, f.message, f.fix) for f in found] == [(
        (slot, f"{slot}.name"), reads_as_model(slot),
        f"Set {slot} to the training run the eval scores ({TRAINING_RUN}, the eval's model) "
        "instead of the eval.",
    )]


def test_an_eval_of_an_eval_is_refused_and_names_the_model_the_first_eval_scores() -> None:
    data = example("colocated-1x8", {"model": eval_export(),
                                     "runtime.entrypoint": SKYRL_EVAL_ENTRYPOINT})
    # The inner eval scores a Hugging Face model, not a run: the fix names that model.
    data["model"]["run"]["model"] = example("colocated-1x8")["model"]
    [found] = findings(data, "PIPE004")
    assert found.message == reads_as_model("model")
    assert found.fix == ("Set model to the model the eval scores (qwen2.5-1.5b-instruct@"
                         "2026.11.01, the eval's model) instead of the eval.")


def test_a_built_model_may_not_depend_on_an_eval_run() -> None:
    data = example("colocated-1x8")
    data["model"] = {
        "type": "built", "name": "merged", "version": "2026.11.29", "kind": "model",
        "builder": "sft_model", "config": {}, "deps": {"base": eval_export()},
        "facts": copy.deepcopy(data["model"]["facts"]), "rows": None,
    }
    assert messages(data, "PIPE004") == [
        "model.deps.base is the export of stage1-eval@2026.11.29, an eval run "
        f"(runtime.entrypoint {SKYRL_EVAL_ENTRYPOINT} only evaluates): that export is its report "
        "(report.json, samples.jsonl), not a model; the builder of model would find no model to "
        "load in it"
    ]


def test_a_training_run_upstream_and_an_eval_of_it_pass() -> None:
    assert findings(example("grpo-stage2"), "PIPE004") == []
    evaluation = example("grpo-stage2")
    # A fresh runtime: the worked example's stages share one runtime dict.
    evaluation["runtime"] = dict(evaluation["runtime"], entrypoint=SKYRL_EVAL_ENTRYPOINT)
    assert findings(evaluation, "PIPE004") == []
