"""Artifact rules (rlaunch/preflight/rules/artifacts.py, artifacts_ambient.py)."""

from __future__ import annotations

from typing import Any

import pytest

from preflight.helpers import example, findings, messages
from rlaunch.spec import parse_spec
from rlaunch.spec.artifacts import fingerprint
from rlaunch.spec.examples import (
    GSM8K_PROMPTS_CONFIG,
    GSM8K_TRAIN,
    GSM8K_TRAIN_PROMPTS,
    QWEN25_1_5B,
)

ADOPTED_MODEL = {
    "type": "adopted", "name": "qwen-sft", "version": "2026.11.01", "kind": "model",
    "uri": "gs://rlaunch-example/models/qwen-sft", "sha256": "ab" * 32,
    "facts": QWEN25_1_5B["facts"], "rows": None,
}


def built_model(base: dict[str, Any], version: str = "2026.11.02", **config: Any) -> dict:
    return {
        "type": "built", "name": "qwen-sft", "version": version, "kind": "model",
        "builder": "sft_model", "config": {"steps": 10, **config}, "deps": {"base": base},
        "facts": QWEN25_1_5B["facts"], "rows": None,
    }


@pytest.mark.parametrize(
    ("revision", "problem"),
    [
        ("main", "is a branch or tag name, not a commit: it moves"),
        ("v1.0", "is a branch or tag name, not a commit: it moves"),
        ("989aa79", "is not a full commit sha (7 hex characters, 40 needed)"),
        ("989AA7980E4CF806F80C7FEF2B1ADB7BC71AA306", "has upper-case hex; write the sha in"
                                                     " lower case"),
    ],
)
def test_art001_hf_revisions_are_commits(revision: str, problem: str) -> None:
    data = example(edits={"train_data.deps.source.revision": revision})
    [finding] = findings(data, "ART001")
    assert finding.message == f"train_data.deps.source.revision {revision!r} {problem}"
    assert finding.fix == (
        "Pin train_data.deps.source.revision to the 40-hex commit sha of openai/gsm8k you mean "
        "(the Hub shows it under 'Files and versions' > 'History')."
    )


def test_art001_checks_tokenizer_revisions_and_passes_real_pins() -> None:
    model = dict(QWEN25_1_5B, tokenizer_revision="main")
    data = example(edits={"model": model})
    assert messages(data, "ART001") == ["model.tokenizer_revision 'main' is a branch or tag name,"
                                        " not a commit: it moves"]
    for name in ("colocated-1x8", "megatron-moe-5x8"):
        assert messages(example(name), "ART001") == []


def test_art002_adopted_sha256_and_uri() -> None:
    adopted = dict(ADOPTED_MODEL, sha256="sha256:abc", uri="models/qwen-sft")
    assert messages(example(edits={"model": adopted}), "ART002") == [
        "model.sha256 'sha256:abc' is not a sha256 digest (64 lower-case hex)",
        "model.uri 'models/qwen-sft' has no scheme (gs://, s3://, file://, hf://)",
    ]
    assert messages(example(edits={"model": ADOPTED_MODEL}), "ART002") == []


def test_art003_typed_handoffs() -> None:
    data = example(edits={"eval_data": ADOPTED_MODEL, "model": GSM8K_TRAIN})
    assert messages(data, "ART003") == [
        "model takes a model, but gsm8k-train@2026.11.01 is a dataset",
        "eval_data takes a dataset, but qwen-sft@2026.11.01 is a model",
    ]
    tokenizer = dict(ADOPTED_MODEL, kind="tokenizer", name="qwen-tok", facts=None)
    assert messages(example(edits={"tokenizer": tokenizer}), "ART003") == []
    assert messages(example(), "ART003") == []


def test_art004_model_facts_present_and_consistent() -> None:
    no_facts = example(edits={"model": dict(ADOPTED_MODEL, facts=None)})
    assert messages(no_facts, "ART004") == [
        "model qwen-sft@2026.11.01 is a model but model.facts is null"
    ]
    bad = dict(QWEN25_1_5B, facts={**QWEN25_1_5B["facts"], "num_key_value_heads": 5,
                                   "max_position_embeddings": 0})
    assert messages(example(edits={"model": bad, "tokenizer": QWEN25_1_5B}), "ART004") == [
        "model.facts.max_position_embeddings is 0; model facts must be at least 1",
    ]
    groups = dict(QWEN25_1_5B, facts=dict(QWEN25_1_5B["facts"], num_key_value_heads=5))
    assert messages(example(edits={"model": groups, "tokenizer": QWEN25_1_5B}), "ART004") == [
        "model.facts.num_attention_heads 12 is not a multiple of num_key_value_heads 5"
        " (12 % 5 = 2)"
    ]
    assert messages(example("megatron-moe-5x8"), "ART004") == []


def test_art005_one_identity_one_artifact() -> None:
    data = example(edits={"eval_data.name": "gsm8k-train-prompts"})
    [finding] = findings(data, "ART005")
    spec = parse_spec(data)
    train, test = fingerprint(spec.train_data), fingerprint(spec.eval_data)
    assert finding.paths == ("train_data", "eval_data")
    assert finding.message == (
        f"gsm8k-train-prompts@2026.11.30 names two different artifacts: train_data ({train})"
        f" and eval_data ({test})"
    )
    assert finding.fix == (
        "Give one of them another name or version; gsm8k-train-prompts@2026.11.30 must always"
        " mean the same content."
    )
    # Each further distinct artifact is reported against the first; repeats of one are not.
    other = dict(GSM8K_TRAIN_PROMPTS, config=dict(GSM8K_PROMPTS_CONFIG, env_class="other"))
    thrice = example(edits={"eval_data.name": "gsm8k-train-prompts",
                            "reference_model": other, "critic_model": other})
    assert [f.paths for f in findings(thrice, "ART005")] == [
        ("reference_model", "train_data"), ("reference_model", "eval_data"),
    ]
    # The same artifact in two slots (model and tokenizer) is one identity, not a clash.
    assert messages(example(), "ART005") == []


def test_art006_no_dev_under_calendar() -> None:
    assert messages(example(edits={"train_data.version": "dev"}), "ART006") == [
        "the run colocated-1x8@2026.11.29 is calendar-versioned (immutable) but train_data"
        " gsm8k-train-prompts@dev is a dev version that changes under it"
    ]
    dev_base = dict(QWEN25_1_5B, version="base-dev")
    built = example(edits={"model": built_model(dev_base), "tokenizer": QWEN25_1_5B})
    assert messages(built, "ART006") == [
        "model qwen-sft@2026.11.02 is calendar-versioned but depends on model.deps.base"
        " qwen2.5-1.5b-instruct@base-dev, a dev version"
    ]
    dev_everything = example(edits={"version": "dev", "model": built_model(dev_base, "dev"),
                                    "tokenizer": QWEN25_1_5B})
    assert messages(dev_everything, "ART006") == []
    assert messages(example(edits={"model": built_model(QWEN25_1_5B)}), "ART006") == []


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("/home/me/models/qwen", "it is in a home directory"),
        ("~/models/qwen", "it is relative to a home directory"),
        ("$MODELS/qwen", "it expands an environment variable"),
        ("gs://bucket/$USER/qwen", "it expands an environment variable"),
        ("/data/models/qwen", "it is a local path outside the store gs://rlaunch-example/store"),
        ("file:///data/models/qwen",
         "it is a local path outside the store gs://rlaunch-example/store"),
    ],
)
def test_art007_ambient_paths_in_any_string_field(value: str, reason: str) -> None:
    data = example(edits={"train_data.deps.source.repo_id": value})
    [finding] = findings(data, "ART007")
    assert finding.message == (
        f"train_data.deps.source.repo_id {value!r} is an ambient path: {reason}"
    )
    assert finding.paths == ("train_data.deps.source.repo_id",)


def test_art007_scans_builder_configs_lists_and_smoke_sections() -> None:
    built = built_model(QWEN25_1_5B, out="/scratch/sft", extra=["ok", "~/x"])
    data = example(edits={"model": built, "tokenizer": QWEN25_1_5B,
                          "execution.allocation.accelerator": "$GPU"})
    assert messages(data, "ART007") == [
        "model.config.out '/scratch/sft' is an ambient path: it is a local path outside the"
        " store gs://rlaunch-example/store",
        "model.config.extra.1 '~/x' is an ambient path: it is relative to a home directory",
        "execution.allocation.accelerator '$GPU' is an ambient path: it expands an environment"
        " variable",
    ]


def test_art007_local_paths_inside_a_local_store_are_fine() -> None:
    inside = example(edits={"execution.store_prefix": "/srv/rlaunch",
                            "train_data.deps.source.repo_id": "/srv/rlaunch/gsm8k/raw"})
    assert messages(inside, "ART007") == []
    no_store = example(edits={"execution.store_prefix": None,
                              "train_data.deps.source.repo_id": "/srv/rlaunch/gsm8k/raw"})
    assert messages(no_store, "ART007") == [
        "train_data.deps.source.repo_id '/srv/rlaunch/gsm8k/raw' is an ambient path: it is a"
        " local path, and execution.store_prefix is null"
    ]
    for name in ("colocated-1x8", "disaggregated-8x8-tp8", "megatron-moe-5x8"):
        assert messages(example(name), "ART007") == []
    # An Iris cluster config file is the launcher's, as `iris --config` reads it: not ambient.
    iris = example(edits={"execution.executor": "iris", "execution.store_prefix": None,
                          "execution.cluster": "/home/me/iris/local.yaml"})
    assert messages(iris, "ART007") == []


def test_art009_a_built_artifact_names_a_registered_builder() -> None:
    [finding] = findings(example(edits={"train_data.builder": "2"}), "ART009")
    assert finding.paths == ("train_data.builder",)
    assert finding.message == (
        "train_data.builder '2' of gsm8k-train-prompts@2026.11.30 is not a registered builder"
        " (adopt, char_tokenizer, countdown_data, greedy_eval, hf_snapshot, prompt_parquet,"
        " sft_model)"
    )
    assert finding.fix == (
        "Use a registered builder, install the plugin that provides it (entry point group"
        " rlaunch.builders), or give a module:Class."
    )
    # A module:Class builder is imported where it builds, not by preflight.
    assert messages(example(edits={"train_data.builder": "mine.builders:Rows"}), "ART009") == []
    assert messages(example(), "ART009") == []


FULL_SFT = {"d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
            "max_position_embeddings": 64, "steps": 10, "seed": 0}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda config: config.__setitem__("tmplate", config.pop("template")),
         "train_data.config.template of gsm8k-train-prompts@2026.11.30 (builder prompt_parquet): "
         "Field required"),
        (lambda config: config.__setitem__("tmplate", config.pop("template")),
         "train_data.config.tmplate of gsm8k-train-prompts@2026.11.30 (builder prompt_parquet): "
         "Extra inputs are not permitted (got '{question} Let\\'s think step by step and output "
         "the final answer after \"####\".'); did you mean 'template'?"),
        (lambda config: config["ground_truth"].__setitem__("column", ["answer"]),
         "train_data.config.ground_truth.column of gsm8k-train-prompts@2026.11.30 (builder "
         "prompt_parquet): Input should be a valid string (got ['answer'])"),
        (lambda config: config.pop("ground_truth"),
         "train_data.config.ground_truth of gsm8k-train-prompts@2026.11.30 (builder "
         "prompt_parquet): Field required"),
        (lambda config: config.__setitem__("task", "aime"),
         "train_data.config.task of gsm8k-train-prompts@2026.11.30 (builder prompt_parquet): "
         "'aime' is not a task of rlaunch.tasks (it has gsm8k, math)"),
        (lambda config: config["ground_truth"].__setitem__("extract", "last"),
         "train_data.config.ground_truth.extract of gsm8k-train-prompts@2026.11.30 (builder "
         "prompt_parquet): 'last' is not an extractor of task 'gsm8k' (it has verbatim, "
         "final_answer, number)"),
        # The builder writes the ground truth where skyrl-gym's env reads it; text2sql's rows
        # it cannot write.
        (lambda config: config.__setitem__("env_class", "text2sql"),
         "train_data.config.env_class of gsm8k-train-prompts@2026.11.30 (builder "
         "prompt_parquet): 'text2sql' is not an env whose rows prompt_parquet writes: each "
         "skyrl-gym 0.4.0 env reads the ground truth from its own column of the row (aime reads "
         "reward_model; gsm8k reads reward_spec: GSM8kEnv.__init__ and AIMEEnv.__init__ assert "
         "it); set config.env_class to one of aime, gsm8k, and algorithm.environment to the "
         "same"),
        # Every env it feeds scores each answer against the row's ground truth.
        (lambda config: config.__setitem__("ground_truth", None),
         "train_data.config.ground_truth of gsm8k-train-prompts@2026.11.30 (builder "
         "prompt_parquet): is null, so every row's reward_spec.ground_truth would be None, and "
         "env 'gsm8k' (skyrl-gym 0.4.0) scores every answer against it: no answer could earn "
         "the reward. Set config.ground_truth to {column, extract}: the source column that "
         "holds the answer and how to take it from there"),
    ],
    ids=["typo-missing", "typo-extra", "column-list", "ground_truth-deleted", "task-unknown",
         "extract-unknown", "env-class-unfed", "no-ground-truth"],
)
def test_a_prompt_parquet_config_is_checked_before_it_builds(mutate, message) -> None:
    data = example()
    mutate(data["train_data"]["config"])
    assert message in messages(data, "ART010")


def test_the_math_env_is_one_prompt_parquet_feeds() -> None:
    data = example()
    data["train_data"]["config"].update(env_class="aime", task="math",
                                        ground_truth={"column": "answer", "extract": "number"})
    assert messages(data, "ART010") == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"n_layers": 10**30}, "config.n_layers of qwen-sft@2026.11.02 (builder sft_model): "
         "Value error, integers must lie within +-2**53 (got 10000000000000000000000000000"
         "00)"),
        ({"d_model": -1}, "config.d_model of qwen-sft@2026.11.02 (builder sft_model): Input "
         "should be greater than 0 (got -1)"),
        ({"seed": "1"}, "config.seed of qwen-sft@2026.11.02 (builder sft_model): Input should "
         "be a valid integer (got '1')"),
        ({"n_heads": 3}, "config of qwen-sft@2026.11.02 (builder sft_model): Value error, "
         "n_heads 3 does not divide d_model 64 (64 % 3 = 1)"),
    ],
    ids=["n_layers-huge", "d_model-negative", "seed-str", "heads-do-not-divide"],
)
def test_an_sft_config_is_checked_before_it_builds(edit, message) -> None:
    data = example()
    data["model"] = built_model(data["model"], **{**FULL_SFT, **edit})
    assert [f"model.{message}"] == messages(data, "ART010")


def test_a_valid_builder_config_and_a_third_party_builder_pass() -> None:
    data = example()
    data["model"] = built_model(data["model"], **FULL_SFT)
    data["train_data"]["builder"] = "mypackage.builders:MyBuilder"
    data["train_data"]["config"] = {"anything": [1, 2]}
    assert messages(data, "ART010") == []


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ({"model.repo_id": "a\nb"},
         "model.repo_id 'a\\nb' is not a Hugging Face repo id: Repo id must use alphanumeric "
         "chars, '-', '_' or '.'. The name cannot start or end with '-' or '.' and the maximum "
         "length is 96"),
        ({"model.repo_id": "Qwen/Qwen2.5--1.5B"},
         "model.repo_id 'Qwen/Qwen2.5--1.5B' is not a Hugging Face repo id: Cannot have -- or .. "
         "in repo_id"),
        ({"model.tokenizer_repo_id": "a/b/c"},
         "model.tokenizer_repo_id 'a/b/c' is not a Hugging Face repo id: Repo id must be in the "
         "form 'repo_name' or 'namespace/repo_name'"),
    ],
    ids=["newline", "double-dash", "three-parts"],
)
def test_a_repo_id_the_hub_refuses_is_refused(edits, message) -> None:
    # The Hub's own validator (huggingface_hub.utils.validate_repo_id) decides.
    assert messages(example(edits=edits), "ART011") == [message]
