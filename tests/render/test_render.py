"""The launch document, section by section, as docs/launch-yaml.md says (worked examples)."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from rlaunch.paths import artifact_root, run_paths
from rlaunch.render import (
    SECTIONS,
    RenderError,
    launch_document,
    render_launch,
)
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import (
    GSM8K_PROMPTS_CONFIG,
    QWEN25_1_5B,
    reference_role,
    worked_example,
)

PREFIX = "/srv/rlaunch-store"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def document(name: str = "colocated-1x8", edit=None, **kwargs):
    data = worked_example(name)
    if edit is not None:
        edit(data)
    spec = parse_spec(data, name)
    kwargs.setdefault("store_prefix", PREFIX)
    kwargs.setdefault("launcher_commit", COMMIT)
    return spec, launch_document(spec, **kwargs)


def test_rendering_twice_gives_identical_bytes():
    spec = parse_spec(worked_example("megatron-moe-5x8"))
    first = render_launch(spec, store_prefix=PREFIX, launcher_commit=COMMIT)
    second = render_launch(
        parse_spec(worked_example("megatron-moe-5x8")), store_prefix=PREFIX, launcher_commit=COMMIT
    )
    assert first.encode() == second.encode()


def test_the_yaml_is_the_document_in_documented_order_under_a_header():
    spec, doc = document()
    text = render_launch(spec, store_prefix=PREFIX, launcher_commit=COMMIT)
    assert text.startswith(
        "# rlaunch launch YAML (schema_version 1), rendered from a RunSpec by rlaunch.render.\n"
        "# Do not edit: change the spec and render again. Format: docs/launch-yaml.md\n"
        "schema_version: 1\nrun:\n  id: colocated-1x8@2026.11.29\n"
    )
    loaded = yaml.safe_load(text)
    assert loaded == doc
    assert list(loaded) == list(SECTIONS)
    assert "&id" not in text and "*id" not in text  # no YAML aliases: the file reads on its own


def test_run_runtime_execution_resume_sections_of_colocated_1x8():
    spec, doc = document()
    assert doc["schema_version"] == 1
    assert doc["run"] == {
        "id": "colocated-1x8@2026.11.29",
        "name": "colocated-1x8",
        "version": "2026.11.29",
        "seed": 42,
        "fingerprint": spec.fingerprint,
    }
    assert doc["runtime"] == {
        "name": "skyrl-0.3.0",
        "profile": "skyrl",
        "package": "skyrl==0.3.0",
        "git": None,
        "entrypoint": "skyrl.train.entrypoints.main_base",
        "required_fixes": [],
        "fingerprint": spec.runtime_fingerprint,
        "launcher_commit": COMMIT,
    }
    assert doc["execution"] == {
        "executor": "ray",
        "address": "http://127.0.0.1:8265",
        "cluster": None,
        "priority": "normal",
        "max_retries": 0,
        "timeout_minutes": 1440,
        "allocation": {
            "num_nodes": 1,
            "gpus_per_node": 8,
            "accelerator": "H100",
            "cpus_per_node": 96,
            "memory_gb_per_node": 1024,
            "disk_gb_per_node": 2000,
        },
        "env": [],
        "wandb": None,
    }
    assert doc["resume"] == {"mode": "latest", "path": None, "compatible_runtimes": []}


def test_artifact_roots_derive_from_run_paths_and_inputs_from_artifact_root():
    _, doc = document()
    paths = run_paths(PREFIX, "colocated-1x8", "2026.11.29")
    assert doc["artifacts"] == {
        "store_prefix": PREFIX,
        "run_root": paths.run_root,
        "checkpoint_root": paths.checkpoint_root,
        "export_root": paths.export_root,
        "attempts_root": paths.attempts_root,
        "terminal_manifest": paths.terminal_manifest,
    }
    assert doc["artifacts"]["checkpoint_root"] == (
        "/srv/rlaunch-store/colocated-1x8/2026.11.29/checkpoints"
    )
    assert list(doc["inputs"]) == ["model", "tokenizer", "train_data", "eval_data"]
    assert doc["inputs"]["model"] == {
        "identity": "qwen2.5-1.5b-instruct@2026.11.01",
        "kind": "model",
        "type": "hf_model",
        "fingerprint": doc["inputs"]["model"]["fingerprint"],
        "uri": artifact_root(PREFIX, "qwen2.5-1.5b-instruct", "2026.11.01"),
        "source": {
            "repo_id": "Qwen/Qwen2.5-1.5B-Instruct",
            "revision": "989aa7980e4cf806f80c7fef2b1adb7bc71aa306",
        },
    }
    assert doc["inputs"]["model"]["fingerprint"].startswith("sha256:")
    assert doc["inputs"]["eval_data"]["uri"] == "/srv/rlaunch-store/gsm8k-test-prompts/2026.11.30"
    assert doc["inputs"]["eval_data"]["source"] == {
        "builder": "prompt_parquet",
        "config": {
            "env_class": "gsm8k",
            "ground_truth": {"column": "answer", "extract": "final_answer"},
            "reward_method": "rule",
            "task": "gsm8k",
            "template": GSM8K_PROMPTS_CONFIG["template"],
        },
    }


def test_colocated_1x8_skyrl_subtree_field_by_field():
    _, doc = document()
    megatron = {
        "tensor_model_parallel_size": 1,
        "pipeline_model_parallel_size": 1,
        "context_parallel_size": 1,
        "expert_model_parallel_size": 1,
        "expert_tensor_parallel_size": 1,
    }
    model = "/srv/rlaunch-store/qwen2.5-1.5b-instruct/2026.11.01"
    run_root = "/srv/rlaunch-store/colocated-1x8/2026.11.29"
    assert doc["skyrl"] == {
        "data": {
            "train_data": ["/srv/rlaunch-store/gsm8k-train-prompts/2026.11.30/prompts.parquet"],
            "val_data": ["/srv/rlaunch-store/gsm8k-test-prompts/2026.11.30/prompts.parquet"],
        },
        "trainer": {
            "placement": {
                "colocate_all": True,
                "colocate_policy_ref": True,
                "policy_num_nodes": 1,
                "policy_num_gpus_per_node": 8,
                "critic_num_nodes": 1,
                "critic_num_gpus_per_node": 8,
                "ref_num_nodes": 1,
                "ref_num_gpus_per_node": 8,
            },
            "strategy": "fsdp",
            "policy": {
                "model": {"path": model},
                "optimizer_config": {"lr": 1.0e-6},
                "sequence_parallel_size": 1,
                "megatron_config": megatron,
            },
            "ref": {"model": {"path": model}, "sequence_parallel_size": 1,
                    "megatron_config": megatron},
            "critic": {"model": {"path": None}, "sequence_parallel_size": 1},
            "algorithm": {
                "advantage_estimator": "grpo",
                "use_kl_loss": True,
                "use_kl_in_reward": False,
                "kl_loss_coef": 0.001,
                "kl_estimator_type": "k3",
                "eps_clip_low": 0.2,
                "eps_clip_high": 0.2,
            },
            "fully_async": {"enabled": False},
            "seed": 42,
            "resume_mode": "latest",
            "resume_path": None,
            "ckpt_path": f"{run_root}/checkpoints",
            "max_ckpts_to_keep": 2,
            "ckpt_interval": 10,
            # -1 with export_final: an interval no run reaches (SkyRL exports only while > 0)
            "hf_save_interval": 1_000_000_000,
            "export_path": f"{run_root}/export",
            "epochs": 1,
            "max_training_steps": None,
            "train_batch_size": 256,
            "policy_mini_batch_size": 64,
            "critic_mini_batch_size": 64,
            "micro_train_batch_size_per_gpu": 4,
            "micro_forward_batch_size_per_gpu": 8,
            "eval_batch_size": 512,
            "max_prompt_length": 512,
            "project_name": "colocated-1x8",
            "run_name": "colocated-1x8@2026.11.29",
            "tags": ["run:colocated-1x8", "version:2026.11.29", "runtime:skyrl==0.3.0"],
            "logger": "console",
            "log_path": f"{run_root}/attempts",
        },
        "generator": {
            "inference_engine": {
                "num_engines": 8,
                "backend": "vllm",
                "weight_sync_backend": "nccl",
                "tensor_parallel_size": 1,
                "pipeline_parallel_size": 1,
                "data_parallel_size": 1,
                "expert_parallel_size": 1,
            },
            "n_samples_per_prompt": 8,
            "max_turns": 1,
            "max_input_length": 512,
            "sampling_params": {"max_generate_length": 1024, "temperature": 1.0},
        },
        "environment": {"env_class": "gsm8k"},
    }


def test_megatron_moe_5x8_geometry_comes_from_the_role_plan():
    _, doc = document("megatron-moe-5x8")
    trainer = doc["skyrl"]["trainer"]
    assert trainer["strategy"] == "megatron"
    assert trainer["placement"] == {
        "colocate_all": False,
        "colocate_policy_ref": True,
        "policy_num_nodes": 4,
        "policy_num_gpus_per_node": 8,
        "critic_num_nodes": 4,
        "critic_num_gpus_per_node": 8,
        "ref_num_nodes": 4,
        "ref_num_gpus_per_node": 8,
    }
    expected_megatron = {
        "tensor_model_parallel_size": 4,
        "pipeline_model_parallel_size": 1,
        "context_parallel_size": 1,
        "expert_model_parallel_size": 8,
        "expert_tensor_parallel_size": 1,
    }
    assert trainer["policy"]["megatron_config"] == expected_megatron
    assert trainer["ref"]["megatron_config"] == expected_megatron
    assert doc["skyrl"]["generator"]["inference_engine"] == {
        "num_engines": 1,
        "backend": "vllm",
        "weight_sync_backend": "nccl",
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "data_parallel_size": 8,
        "expert_parallel_size": 8,
    }
    assert trainer["policy"]["model"]["path"] == "/srv/rlaunch-store/qwen3-30b-a3b/2026.11.01"
    assert doc["execution"]["allocation"]["num_nodes"] == 5


def test_disaggregated_8x8_tp8_geometry():
    _, doc = document("disaggregated-8x8-tp8")
    trainer = doc["skyrl"]["trainer"]
    assert trainer["strategy"] == "fsdp"
    assert (trainer["placement"]["colocate_all"], trainer["placement"]["policy_num_nodes"],
            trainer["placement"]["policy_num_gpus_per_node"]) == (False, 4, 8)
    engine = doc["skyrl"]["generator"]["inference_engine"]
    assert (engine["num_engines"], engine["tensor_parallel_size"]) == (4, 8)


def test_a_separately_placed_reference_keeps_its_own_footprint():
    def separate(data):
        data["role_plan"]["reference"] = reference_role(False, 2, 4)
        data["role_plan"]["reference"]["sequence_parallel_size"] = 2
        data["role_plan"]["placement"]["colocate_policy_ref"] = False

    _, doc = document("disaggregated-8x8-tp8", separate)
    placement = doc["skyrl"]["trainer"]["placement"]
    assert (placement["ref_num_nodes"], placement["ref_num_gpus_per_node"]) == (2, 4)
    assert (placement["critic_num_nodes"], placement["critic_num_gpus_per_node"]) == (4, 8)
    assert placement["colocate_policy_ref"] is False
    # The reference's own parallelism, not the policy's SP 1 (issue 12, defect 3).
    assert doc["skyrl"]["trainer"]["ref"]["sequence_parallel_size"] == 2
    assert doc["skyrl"]["trainer"]["policy"]["sequence_parallel_size"] == 1


def test_the_reference_renders_its_own_megatron_sizes():
    def alone(data):
        data["role_plan"]["policy"]["tensor_parallel_size"] = 2
        data["role_plan"]["reference"] = reference_role(False, 1, 1, ep=8)
        data["role_plan"]["placement"]["colocate_policy_ref"] = False

    _, doc = document("megatron-moe-5x8", alone)
    assert doc["skyrl"]["trainer"]["ref"]["megatron_config"] == {
        "tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1,
        "context_parallel_size": 1, "expert_model_parallel_size": 8,
        "expert_tensor_parallel_size": 1,
    }
    assert doc["skyrl"]["trainer"]["policy"]["megatron_config"]["tensor_model_parallel_size"] == 2


def test_reference_and_critic_models_and_the_critic_batch():
    def with_models(data):
        reference = copy.deepcopy(QWEN25_1_5B)
        reference["name"] = "qwen2.5-1.5b-sft"
        critic = copy.deepcopy(QWEN25_1_5B)
        critic["name"] = "qwen2.5-1.5b-critic"
        data["reference_model"] = reference
        data["critic_model"] = critic
        data["role_plan"]["critic"] = {"colocated_with_policy": False, "num_nodes": 3,
                                       "num_gpus_per_node": 2}
        data["role_plan"]["batch"]["critic_mini_batch_size"] = 32
        data["algorithm"]["advantage_estimator"] = "gae"

    _, doc = document("colocated-1x8", with_models)
    trainer = doc["skyrl"]["trainer"]
    assert list(doc["inputs"]) == [
        "model", "tokenizer", "reference_model", "critic_model", "train_data", "eval_data",
    ]
    assert trainer["ref"]["model"]["path"] == "/srv/rlaunch-store/qwen2.5-1.5b-sft/2026.11.01"
    assert trainer["critic"]["model"]["path"] == (
        "/srv/rlaunch-store/qwen2.5-1.5b-critic/2026.11.01"
    )
    assert (trainer["placement"]["critic_num_nodes"],
            trainer["placement"]["critic_num_gpus_per_node"]) == (3, 2)
    assert trainer["critic_mini_batch_size"] == 32
    assert trainer["algorithm"]["advantage_estimator"] == "gae"


def test_algorithm_checkpoint_resume_and_lengths_map_to_skyrl_names():
    def edit(data):
        data["algorithm"].update(
            learning_rate=3.0e-7, epochs=4, max_training_steps=120, temperature=0.7,
            clip_ratio=0.28, fully_async=True, environment="countdown",
        )
        data["algorithm"]["kl"] = {"use_kl_loss": False, "use_kl_in_reward": True,
                                   "kl_loss_coef": 0.05, "kl_estimator_type": "k1"}
        data["checkpoint"] = {"ckpt_interval": 7, "max_ckpts_to_keep": -1,
                              "hf_save_interval": 21, "export_final": True}
        data["resume"] = {"mode": "from_path",
                          "path": "/srv/rlaunch-store/old/2026.11.01/checkpoints/global_step_7",
                          "compatible_runtimes": ["sha256:abc"]}
        data["lengths"] = {"max_prompt_length": 300, "max_generate_length": 700,
                           "max_input_length": 900, "max_turns": 3}
        data["seed"] = 7

    _, doc = document("colocated-1x8", edit)
    skyrl = doc["skyrl"]
    trainer = skyrl["trainer"]
    assert trainer["algorithm"] == {
        "advantage_estimator": "grpo",
        "use_kl_loss": False,
        "use_kl_in_reward": True,
        "kl_loss_coef": 0.05,
        "kl_estimator_type": "k1",
        "eps_clip_low": 0.28,
        "eps_clip_high": 0.28,
    }
    assert trainer["policy"]["optimizer_config"] == {"lr": 3.0e-7}
    assert trainer["fully_async"] == {"enabled": True}
    assert (trainer["epochs"], trainer["max_training_steps"], trainer["seed"]) == (4, 120, 7)
    assert (trainer["ckpt_interval"], trainer["max_ckpts_to_keep"],
            trainer["hf_save_interval"]) == (7, -1, 21)
    assert (trainer["resume_mode"], trainer["resume_path"]) == (
        "from_path", "/srv/rlaunch-store/old/2026.11.01/checkpoints/global_step_7"
    )
    assert doc["resume"]["compatible_runtimes"] == ["sha256:abc"]
    assert trainer["max_prompt_length"] == 300
    assert skyrl["generator"]["max_input_length"] == 900
    assert skyrl["generator"]["max_turns"] == 3
    assert skyrl["generator"]["sampling_params"] == {"max_generate_length": 700,
                                                     "temperature": 0.7}
    assert skyrl["environment"] == {"env_class": "countdown"}
    assert doc["run"]["seed"] == 7


def test_wandb_project_names_the_skyrl_project_and_no_eval_data_is_an_empty_list():
    def edit(data):
        data["logger"] = "wandb"
        data["execution"]["wandb"] = {"entity": "lab", "project": "gsm8k-grpo"}
        data["eval_data"] = None

    _, doc = document("colocated-1x8", edit)
    trainer = doc["skyrl"]["trainer"]
    assert (trainer["project_name"], trainer["run_name"], trainer["logger"]) == (
        "gsm8k-grpo", "colocated-1x8@2026.11.29", "wandb"
    )
    assert trainer["tags"] == ["run:colocated-1x8", "version:2026.11.29", "runtime:skyrl==0.3.0"]
    assert doc["execution"]["wandb"] == {"entity": "lab", "project": "gsm8k-grpo"}
    assert doc["skyrl"]["data"]["val_data"] == []
    assert "eval_data" not in doc["inputs"]


def test_adopted_and_built_sources_with_built_config_keys_sorted():
    def edit(data):
        data["train_data"] = {
            "type": "built", "name": "countdown-train", "version": "2026.11.02",
            "kind": "dataset", "builder": "countdown_data",
            "config": {"rows": 512, "max_number": 99, "nested": {"z": 1, "a": [{"y": 2, "b": 3}]}},
            "deps": {}, "facts": None, "rows": 512,
        }
        data["eval_data"] = {
            "type": "adopted", "name": "countdown-test", "version": "2026.11.02",
            "kind": "dataset", "uri": "gs://bucket/countdown/test.parquet",
            "sha256": "a" * 64, "facts": None, "rows": 64,
        }

    _, doc = document("colocated-1x8", edit)
    built = doc["inputs"]["train_data"]
    assert (built["type"], built["kind"], built["uri"]) == (
        "built", "dataset", "/srv/rlaunch-store/countdown-train/2026.11.02"
    )
    assert built["source"] == {
        "builder": "countdown_data",
        "config": {"max_number": 99, "nested": {"a": [{"b": 3, "y": 2}], "z": 1}, "rows": 512},
    }
    assert list(built["source"]["config"]) == ["max_number", "nested", "rows"]
    assert list(built["source"]["config"]["nested"]["a"][0]) == ["b", "y"]
    adopted = doc["inputs"]["eval_data"]
    assert adopted["source"] == {"uri": "gs://bucket/countdown/test.parquet", "sha256": "a" * 64}
    assert adopted["uri"] == "/srv/rlaunch-store/countdown-test/2026.11.02"
    # A countdown_data artifact's train split is its train.parquet; an adopted dataset is named
    # by its folder (rlaunch.tasks.prompts.data_file knows no runtime-format file of it).
    assert doc["skyrl"]["data"] == {
        "train_data": ["/srv/rlaunch-store/countdown-train/2026.11.02/train.parquet"],
        "val_data": ["/srv/rlaunch-store/countdown-test/2026.11.02"],
    }


def test_git_pinned_runtime():
    def edit(data):
        data["runtime"] = {**data["runtime"], "package": None,
                           "git": {"repo": "NovaSky-AI/SkyRL", "commit": "f" * 40},
                           "required_fixes": ["skyrl-1234"]}

    _, doc = document("colocated-1x8", edit)
    assert doc["runtime"]["git"] == {"repo": "NovaSky-AI/SkyRL", "commit": "f" * 40}
    assert doc["runtime"]["package"] is None
    assert doc["runtime"]["required_fixes"] == ["skyrl-1234"]


def test_no_credential_value_is_ever_rendered(monkeypatch):
    secret = "hf_s3cr3t-value-that-must-never-leave-the-environment"
    wandb_secret = "wandb-0f1e2d3c4b5a-secret"
    monkeypatch.setenv("HF_TOKEN", secret)
    monkeypatch.setenv("WANDB_API_KEY", wandb_secret)

    def edit(data):
        data["execution"]["credentials"] = ["WANDB_API_KEY", "HF_TOKEN", "WANDB_API_KEY"]
        data["execution"]["wandb"] = {"entity": "lab", "project": "p"}
        data["logger"] = "wandb"

    spec, doc = document("colocated-1x8", edit)
    text = render_launch(spec, store_prefix=PREFIX, launcher_commit=COMMIT)
    assert os.environ["HF_TOKEN"] == secret
    assert secret not in text and wandb_secret not in text
    assert doc["execution"]["env"] == ["HF_TOKEN", "WANDB_API_KEY"]


def test_a_trailing_slash_on_the_store_prefix_changes_nothing():
    spec = parse_spec(worked_example("colocated-1x8"))
    plain = render_launch(spec, store_prefix="gs://bucket/store", launcher_commit=None)
    slashed = render_launch(spec, store_prefix="gs://bucket/store/", launcher_commit=None)
    assert plain == slashed
    assert "checkpoint_root: gs://bucket/store/colocated-1x8/2026.11.29/checkpoints\n" in plain


@pytest.mark.parametrize("prefix", ["", "   "])
def test_an_empty_store_prefix_is_refused_with_the_fix(prefix):
    spec = parse_spec(worked_example("colocated-1x8"))
    with pytest.raises(RenderError) as caught:
        launch_document(spec, store_prefix=prefix, launcher_commit=None)
    assert str(caught.value) == (
        f"store prefix: must be a non-empty path or URL (got {prefix!r}); pass --store, "
        "set execution.store_prefix in the spec, or $RLAUNCH_STORE"
    )


@pytest.mark.parametrize("commit", ["main", "ABCDEF" + "0" * 34, "0" * 39])
def test_a_launcher_commit_must_be_40_lowercase_hex(commit):
    spec = parse_spec(worked_example("colocated-1x8"))
    with pytest.raises(RenderError) as caught:
        launch_document(spec, store_prefix=PREFIX, launcher_commit=commit)
    assert str(caught.value) == (
        f"launcher commit: must be a 40-hex lowercase git commit sha or omitted (got {commit!r}); "
        "use `git rev-parse HEAD` of the launcher checkout"
    )


def test_render_does_not_judge_the_spec():
    # Preflight refuses TP 8 on 42 heads (and 36 of 64 GPUs used); render writes it anyway.
    for name in ("tp8-on-42-heads", "disaggregated-8x8-tp1"):
        _, doc = document(name)
        assert doc["run"]["name"] == name
