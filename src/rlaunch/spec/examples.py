"""Worked examples: real pins and plans, used by the docs, the tests and the benchmarks.

`worked_example(name)` returns a plain dict in the public RunSpec format (docs/spec-format.md),
so it can be written to a file, edited, and parsed like any hand-written spec.
"""

from __future__ import annotations

import copy
from typing import Any

# Pins that public code passes to `snapshot_download(..., revision=...)`;
# facts as in each model's config.json (see shared reference real-pins).
QWEN25_1_5B = {
    "type": "hf_model",
    "name": "qwen2.5-1.5b-instruct",
    "version": "2026.11.01",
    "repo_id": "Qwen/Qwen2.5-1.5B-Instruct",
    "revision": "989aa7980e4cf806f80c7fef2b1adb7bc71aa306",
    "tokenizer_repo_id": "Qwen/Qwen2.5-1.5B-Instruct",
    "tokenizer_revision": "989aa7980e4cf806f80c7fef2b1adb7bc71aa306",
    "facts": {
        "num_attention_heads": 12,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "num_experts": None,
        "num_hidden_layers": 28,
        "hidden_size": 1536,
        "intermediate_size": 8960,
        "vocab_size": 151936,
        "head_dim": None,
        "torch_dtype": "bfloat16",
        "num_parameters": 1543714304,
    },
}
QWEN25_14B = {
    **QWEN25_1_5B,
    "name": "qwen2.5-14b-instruct",
    "repo_id": "Qwen/Qwen2.5-14B-Instruct",
    "revision": "cf98f3b3bbb457ad9e2bb7baf9a0125b6b88caa8",
    "tokenizer_repo_id": "Qwen/Qwen2.5-14B-Instruct",
    "tokenizer_revision": "cf98f3b3bbb457ad9e2bb7baf9a0125b6b88caa8",
    "facts": {
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "max_position_embeddings": 32768,
        "num_experts": None,
        "num_hidden_layers": 48,
        "hidden_size": 5120,
        "intermediate_size": 13824,
        "vocab_size": 152064,
        "head_dim": None,
        "torch_dtype": "bfloat16",
        "num_parameters": 14770033664,
    },
}
QWEN3_30B_A3B = {
    **QWEN25_1_5B,
    "name": "qwen3-30b-a3b",
    "repo_id": "Qwen/Qwen3-30B-A3B",
    "revision": "ad44e777bcd18fa416d9da3bd8f70d33ebb85d39",
    "tokenizer_repo_id": "Qwen/Qwen3-30B-A3B",
    "tokenizer_revision": "ad44e777bcd18fa416d9da3bd8f70d33ebb85d39",
    "facts": {
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "max_position_embeddings": 40960,
        "num_experts": 128,
        "num_hidden_layers": 48,
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "vocab_size": 151936,
        "head_dim": 128,
        "torch_dtype": "bfloat16",
        "num_parameters": 30532122624,
    },
}
GSM8K_TRAIN = {
    "type": "hf_dataset",
    "name": "gsm8k-train",
    "version": "2026.11.01",
    "repo_id": "openai/gsm8k",
    "revision": "e53f048856ff4f594e959d75785d2c2d37b678ee",
    "config": "main",
    "split": "train",
    "rows": 7473,
}
GSM8K_TEST = {**GSM8K_TRAIN, "name": "gsm8k-test", "split": "test", "rows": 1319}
# The raw splits above in SkyRL's runtime format (builder prompt_parquet -> prompts.parquet), as
# experiments/datasets/BUILD declares them: SkyRL 0.3.0's PromptDataset reads a path ending
# .parquet and takes a folder for a Hub dataset name (preflight ART008).
GSM8K_PROMPTS_CONFIG = {
    "task": "gsm8k",
    "template": "{question} Let's think step by step and output the final answer after \"####\".",
    "ground_truth": {"column": "answer", "extract": "final_answer"},
    "env_class": "gsm8k",
    "reward_method": "rule",
}
GSM8K_TRAIN_PROMPTS = {
    "type": "built",
    "name": "gsm8k-train-prompts",
    "version": "2026.11.30",
    "kind": "dataset",
    "builder": "prompt_parquet",
    "config": GSM8K_PROMPTS_CONFIG,
    "deps": {"source": GSM8K_TRAIN},
    "facts": None,
    "rows": 7473,
}
GSM8K_TEST_PROMPTS = {
    **GSM8K_TRAIN_PROMPTS,
    "name": "gsm8k-test-prompts",
    "config": copy.deepcopy(GSM8K_PROMPTS_CONFIG),
    "deps": {"source": GSM8K_TEST},
    "rows": 1319,
}

SKYRL_RUNTIME = {
    "name": "skyrl-0.3.0",
    "profile": "skyrl",
    "package": "skyrl==0.3.0",
    "git": None,
    "entrypoint": "skyrl.train.entrypoints.main_base",
    "required_fixes": [],
}


def _policy(nodes: int, gpus: int, tp: int = 1, pp: int = 1, ep: int = 1) -> dict[str, Any]:
    return {
        "num_nodes": nodes,
        "num_gpus_per_node": gpus,
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": pp,
        "context_parallel_size": 1,
        "expert_parallel_size": ep,
        "expert_tensor_parallel_size": 1,
        "sequence_parallel_size": 1,
    }


def reference_role(
    colocated: bool, nodes: int, gpus: int, tp: int = 1, pp: int = 1, ep: int = 1
) -> dict[str, Any]:
    """A reference role with its own parallel sizes written out (CP, ETP and SP 1)."""
    return {"colocated_with_policy": colocated, **_policy(nodes, gpus, tp=tp, pp=pp, ep=ep)}


def _rollout(engines: int, tp: int = 1, dp: int = 1, ep: int = 1) -> dict[str, Any]:
    return {
        "num_engines": engines,
        "tensor_parallel_size": tp,
        "pipeline_parallel_size": 1,
        "data_parallel_size": dp,
        "expert_parallel_size": ep,
        "backend": "vllm",
        "weight_sync_backend": "nccl",
    }


def _base(model: dict[str, Any], nodes: int, gpus_per_node: int) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "name": "example",
        "version": "2026.11.29",
        "seed": 42,
        "model": model,
        "tokenizer": model,
        "reference_model": None,
        "critic_model": None,
        "train_data": GSM8K_TRAIN_PROMPTS,
        "eval_data": GSM8K_TEST_PROMPTS,
        "runtime": SKYRL_RUNTIME,
        "role_plan": {
            "strategy": "fsdp",
            "policy": _policy(1, 8),
            "reference": reference_role(True, 1, 8),
            "critic": None,
            "rollout": _rollout(8),
            "placement": {"colocate_all": True, "colocate_policy_ref": True},
            "batch": {
                "train_batch_size": 256,
                "policy_mini_batch_size": 64,
                "critic_mini_batch_size": None,
                "micro_train_batch_size_per_gpu": 4,
                "micro_forward_batch_size_per_gpu": 8,
                "n_samples_per_prompt": 8,
                "eval_batch_size": 512,
            },
        },
        "lengths": {
            "max_prompt_length": 512,
            "max_generate_length": 1024,
            "max_input_length": 512,
            "max_turns": 1,
        },
        "algorithm": {
            "advantage_estimator": "grpo",
            "kl": {
                "use_kl_loss": True,
                "use_kl_in_reward": False,
                "kl_loss_coef": 0.001,
                "kl_estimator_type": "k3",
            },
            "learning_rate": 1.0e-6,
            "epochs": 1,
            "max_training_steps": None,
            "temperature": 1.0,
            "clip_ratio": 0.2,
            "fully_async": False,
            "environment": "gsm8k",
        },
        "logger": "console",
        "checkpoint": {
            "ckpt_interval": 10,
            "max_ckpts_to_keep": 2,
            "hf_save_interval": -1,
            "export_final": True,
        },
        "resume": {"mode": "latest", "path": None, "compatible_runtimes": []},
        "execution": {
            "executor": "ray",
            "address": "http://127.0.0.1:8265",
            "cluster": None,
            "allocation": {
                "num_nodes": nodes,
                "gpus_per_node": gpus_per_node,
                "accelerator": "H100",
                "cpus_per_node": 96,
                "memory_gb_per_node": 1024,
                "disk_gb_per_node": 2000,
            },
            "priority": "normal",
            "max_retries": 0,
            "timeout_minutes": 1440,
            "credentials": [],
            "wandb": None,
            "store_prefix": "gs://rlaunch-example/store",
        },
        "smoke_of": None,
    }


def colocated_1x8() -> dict[str, Any]:
    """Colocated 1x8 FSDP policy with 8 rollout engines of TP 1 on 1 node x 8: passes."""
    spec = _base(QWEN25_1_5B, 1, 8)
    spec["name"] = "colocated-1x8"
    return spec


def disaggregated_8x8(engine_tp: int = 8) -> dict[str, Any]:
    """Policy 4 nodes x 8 plus 4 rollout engines of TP `engine_tp` on 8 nodes x 8.

    With TP 8 the roles use 32 + 32 = 64 GPUs and it passes; with TP 1 they use
    32 + 4 = 36 of the 64 allocated: it runs, with a warning that 28 GPUs stay idle."""
    spec = _base(QWEN25_14B, 8, 8)
    spec["name"] = f"disaggregated-8x8-tp{engine_tp}"
    plan = spec["role_plan"]
    plan["policy"] = _policy(4, 8)
    plan["reference"] = reference_role(True, 4, 8)
    plan["rollout"] = _rollout(4, tp=engine_tp)
    plan["placement"] = {"colocate_all": False, "colocate_policy_ref": True}
    return spec


def megatron_moe_5x8() -> dict[str, Any]:
    """Megatron policy 4x8 (TP 4, EP 8) plus one engine TP1 PP1 DP8 EP8 on 5 nodes x 8: passes."""
    spec = _base(QWEN3_30B_A3B, 5, 8)
    spec["name"] = "megatron-moe-5x8"
    plan = spec["role_plan"]
    plan["strategy"] = "megatron"
    plan["policy"] = _policy(4, 8, tp=4, ep=8)
    plan["reference"] = reference_role(True, 4, 8, tp=4, ep=8)
    plan["rollout"] = _rollout(1, dp=8, ep=8)
    plan["placement"] = {"colocate_all": False, "colocate_policy_ref": True}
    return spec


def tp8_on_42_heads() -> dict[str, Any]:
    """Rollout TP 8 against a model with 42 attention heads: rejected (42 % 8 = 2)."""
    spec = disaggregated_8x8(engine_tp=8)
    spec["name"] = "tp8-on-42-heads"
    model = copy.deepcopy(QWEN25_14B)
    model["facts"]["num_attention_heads"] = 42
    model["facts"]["num_key_value_heads"] = 6
    spec["model"] = model
    spec["tokenizer"] = model
    return spec


def grpo_stage2() -> dict[str, Any]:
    """A second GRPO stage from the export of a first (`colocated-1x8`), same tokenizer and
    geometry: passes (its launch waits for the first stage to finish)."""
    spec = colocated_1x8()
    first = colocated_1x8()
    spec["name"] = "grpo-stage2"
    spec["model"] = {"type": "run_export", "name": first["name"], "version": first["version"],
                     "run": first}
    return spec


WORKED_EXAMPLES = {
    "colocated-1x8": colocated_1x8,
    "disaggregated-8x8-tp8": lambda: disaggregated_8x8(8),
    "disaggregated-8x8-tp1": lambda: disaggregated_8x8(1),
    "megatron-moe-5x8": megatron_moe_5x8,
    "tp8-on-42-heads": tp8_on_42_heads,
    "grpo-stage2": grpo_stage2,
}


def worked_example(name: str) -> dict[str, Any]:
    """A fresh deep copy of one worked example (safe to mutate)."""
    return copy.deepcopy(WORKED_EXAMPLES[name]())
