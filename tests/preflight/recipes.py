"""SkyRL 0.3.0's published example recipes as RunSpecs, on the hardware their scripts state.

Each recipe is translated from one script of SkyRL's `examples/train/` at tag `skyrl-v0.3.0`
(the path is in its docstring): the model, the GPUs, the role plan (placement, strategy,
parallel sizes), the batch sizes, the lengths and the settings that change memory. What the
script sets that a RunSpec does not model (W&B names, eval cadence, DAPO's overlong shaping)
is left out. The data artifacts are the GSM8K prompts of the worked examples: the memory and
geometry rules read the lengths, not the rows.

Chosen to cover every memory regime the MEM rules model: FSDP colocated at a large micro batch
(GSM8K), FSDP at long sequences where the worst case does not fit (DAPO Math-7B), multi-turn
with a 32k forward micro batch and the reference offloaded (SkyRL-SQL), Megatron MoE over two
nodes with TP, PP and EP (Qwen3-30B-A3B), LoRA on FSDP (Qwen2.5-0.5B) and LoRA on Megatron
(Qwen3-30B-A3B on one node).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from rlaunch.spec.examples import QWEN25_1_5B, QWEN3_30B_A3B, reference_role, worked_example

# Facts as in each model's config.json on the Hub. Preflight never reads the Hub; the revisions
# of the models below are not in the project's shared/reference/real-pins.md and are written as the
# recipe's model at an unverified commit (preflight checks syntax only).
QWEN25_MATH_7B = {
    **QWEN25_1_5B,
    "name": "qwen2.5-math-7b",
    "repo_id": "Qwen/Qwen2.5-Math-7B",
    "revision": "b101308fe89651ea5ce025f25317fea6fc07e96e",
    "tokenizer_repo_id": "Qwen/Qwen2.5-Math-7B",
    "tokenizer_revision": "b101308fe89651ea5ce025f25317fea6fc07e96e",
    "facts": {
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        # The recipe edits config.json to 32768 (its script says so); the Hub's is 4096.
        "max_position_embeddings": 32768,
        "num_experts": None,
        "num_hidden_layers": 28,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "vocab_size": 152064,
        "head_dim": None,
        "torch_dtype": "bfloat16",
        "num_parameters": 7615616512,
    },
}
QWEN25_CODER_7B = {
    **QWEN25_MATH_7B,
    "name": "qwen2.5-coder-7b-instruct",
    "repo_id": "Qwen/Qwen2.5-Coder-7B-Instruct",
    "revision": "c03e6d358207e414f1eca0bb1891e29f1db0e242",
    "tokenizer_repo_id": "Qwen/Qwen2.5-Coder-7B-Instruct",
    "tokenizer_revision": "c03e6d358207e414f1eca0bb1891e29f1db0e242",
    "facts": {**QWEN25_MATH_7B["facts"], "max_position_embeddings": 32768},
}
QWEN25_0_5B = {
    **QWEN25_1_5B,
    "name": "qwen2.5-0.5b-instruct",
    "repo_id": "Qwen/Qwen2.5-0.5B-Instruct",
    "revision": "7ae557604adf67be50417f59c2c2f167def9a775",
    "tokenizer_repo_id": "Qwen/Qwen2.5-0.5B-Instruct",
    "tokenizer_revision": "7ae557604adf67be50417f59c2c2f167def9a775",
    "facts": {
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32768,
        "num_experts": None,
        "num_hidden_layers": 24,
        "hidden_size": 896,
        "intermediate_size": 4864,
        "vocab_size": 151936,
        "head_dim": None,
        "torch_dtype": "bfloat16",
        "num_parameters": 494032768,
    },
}


# The recipe's databases (`hf download NovaSky-AI/SkyRL-SQL-653-data-newfmt`, its db_files/data
# folder), adopted from the store: preflight does not read it; adopting verifies the sha256,
# which is written here as the recipe's data at a digest not computed on this machine.
SKYRL_SQL_DBS = {
    "type": "adopted",
    "name": "skyrl-sql-653-dbs",
    "version": "2026.11.01",
    "kind": "dataset",
    "uri": "gs://rlaunch-example/adopted/skyrl-sql-653/db_files/data",
    "sha256": "3b1f0c7e5a2d4f6e8b9a0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f",
    "facts": None,
    "rows": None,
}
TEXT2SQL_DB_PATH = "environment.skyrl_gym.text2sql.db_path"


def _recipe(name: str, model: dict[str, Any], nodes: int, gpus: int, engines: int,
            engine_tp: int, *, kl: bool = True) -> dict[str, Any]:
    """The recipe's model on `nodes` x `gpus` H100, colocated, with `engines` vLLM engines of TP
    `engine_tp`; without a reference when the recipe turns the KL loss off."""
    data = worked_example("colocated-1x8")
    data["name"] = name
    data["model"] = data["tokenizer"] = copy.deepcopy(model)
    allocation = data["execution"]["allocation"]
    allocation.update(num_nodes=nodes, gpus_per_node=gpus, accelerator="H100")
    plan = data["role_plan"]
    for role in ("policy", "reference"):
        plan[role].update(num_nodes=nodes, num_gpus_per_node=gpus)
    plan["placement"] = {"colocate_all": True, "colocate_policy_ref": True}
    plan["rollout"].update(num_engines=engines, tensor_parallel_size=engine_tp)
    if not kl:
        plan["reference"] = None
        data["algorithm"]["kl"]["use_kl_loss"] = False
    data["settings"] = {}
    return data


def _batch(data: dict[str, Any], *, train: int, mini: int, micro_train: int,
           micro_forward: int, samples: int) -> None:
    data["role_plan"]["batch"].update(
        train_batch_size=train, policy_mini_batch_size=mini,
        micro_train_batch_size_per_gpu=micro_train,
        micro_forward_batch_size_per_gpu=micro_forward, n_samples_per_prompt=samples)


def gsm8k_1_5b() -> dict[str, Any]:
    """examples/train/gsm8k/run_gsm8k.sh: Qwen2.5-1.5B-Instruct, GRPO, colocated on 4 x H100
    (NUM_GPUS=4), 4 engines of TP 1, micro batches 64 of 512 + 1024 tokens."""
    data = _recipe("gsm8k-1.5b", QWEN25_1_5B, 1, 4, 4, 1)
    _batch(data, train=1024, mini=256, micro_train=64, micro_forward=64, samples=5)
    data["lengths"].update(max_prompt_length=512, max_input_length=512, max_generate_length=1024)
    data["settings"] = {"generator.inference_engine.gpu_memory_utilization": 0.8}
    return data


def dapo_math_7b() -> dict[str, Any]:
    """examples/train/algorithms/dapo/run_dapo_qwen2.5_math_7b_aime.sh: Qwen2.5-Math-7B, DAPO
    (GRPO, no KL), colocated on 8 x H100, 2 engines of TP 4, micro batches 16 of 2048 + 8192
    tokens."""
    data = _recipe("dapo-math-7b", QWEN25_MATH_7B, 1, 8, 2, 4, kl=False)
    _batch(data, train=512, mini=32, micro_train=16, micro_forward=16, samples=16)
    data["lengths"].update(max_prompt_length=2048, max_input_length=2048,
                           max_generate_length=8192)
    data["settings"] = {"generator.inference_engine.gpu_memory_utilization": 0.8,
                        "generator.inference_engine.enforce_eager": True}
    return data


def skyrl_sql_7b() -> dict[str, Any]:
    """examples/train/text_to_sql/run_skyrl_sql.sh: Qwen2.5-Coder-7B-Instruct, GRPO multi-turn
    (6 turns, input up to 29000 tokens, 3000 generated), colocated on 1 node of 8 x H100, 2
    engines of TP 4, micro batches 1 (train) and 8 (forward), the reference offloaded. Its
    databases (`environment.skyrl_gym.text2sql.db_path=$HOME/data/sql/db_files/data` in the
    script) are `environment_data`, staged onto the nodes, their folder given to that
    setting."""
    data = _recipe("skyrl-sql-7b", QWEN25_CODER_7B, 1, 8, 2, 4, kl=False)
    _batch(data, train=256, mini=256, micro_train=1, micro_forward=8, samples=5)
    data["lengths"].update(max_prompt_length=6000, max_input_length=29000,
                           max_generate_length=3000, max_turns=6)
    data["algorithm"]["temperature"] = 0.6
    data["algorithm"]["environment"] = "text2sql"
    data["environment_data"] = copy.deepcopy(SKYRL_SQL_DBS)
    data["environment_data_setting"] = TEXT2SQL_DB_PATH
    data["settings"] = {"generator.inference_engine.gpu_memory_utilization": 0.7,
                        "trainer.ref.fsdp_config.cpu_offload": True,
                        "trainer.policy.fsdp_config.cpu_offload": False}
    return data


def _megatron(data: dict[str, Any], *, nodes: int, tp: int, pp: int, ep: int) -> None:
    plan = data["role_plan"]
    plan["strategy"] = "megatron"
    for role in ("policy", "reference"):
        plan[role] = reference_role(True, nodes, 8, tp=tp, pp=pp, ep=ep)
    del plan["policy"]["colocated_with_policy"]


def megatron_qwen3_30b_a3b() -> dict[str, Any]:
    """examples/train/megatron/run_megatron_qwen3-30b-a3b.sh: Qwen3-30B-A3B, GRPO on GSM8K,
    Megatron TP 4 PP 2 EP 8 colocated on 2 nodes of 8 x H100, 2 engines of TP 8, micro
    batches 4 of 512 + 1024 tokens."""
    data = _recipe("megatron-qwen3-30b-a3b", QWEN3_30B_A3B, 2, 8, 2, 8)
    _megatron(data, nodes=2, tp=4, pp=2, ep=8)
    _batch(data, train=128, mini=64, micro_train=4, micro_forward=4, samples=5)
    data["settings"] = {"generator.inference_engine.gpu_memory_utilization": 0.6,
                        "trainer.remove_microbatch_padding": True}
    return data


def megatron_lora_qwen3_30b_a3b() -> dict[str, Any]:
    """examples/train/megatron/run_megatron_lora_qwen3-30b-a3b.sh: Qwen3-30B-A3B, LoRA rank 64,
    Megatron TP 4 EP 8 colocated on 1 node of 8 x H100, 1 engine of TP 8, micro batches 8."""
    data = _recipe("megatron-lora-qwen3-30b-a3b", QWEN3_30B_A3B, 1, 8, 1, 8)
    _megatron(data, nodes=1, tp=4, pp=1, ep=8)
    _batch(data, train=128, mini=64, micro_train=8, micro_forward=8, samples=5)
    data["algorithm"]["learning_rate"] = 1.0e-5
    data["settings"] = {"generator.inference_engine.gpu_memory_utilization": 0.6,
                        "trainer.policy.model.lora.rank": 64,
                        "trainer.policy.model.lora.alpha": 64,
                        "trainer.remove_microbatch_padding": True}
    return data


def lora_qwen25_0_5b() -> dict[str, Any]:
    """examples/train/lora/run_qwen2_5_0.5b_gsm8k_grpo_lora.sh: Qwen2.5-0.5B-Instruct, LoRA rank
    32 on FSDP, colocated on 4 x H100, 4 engines of TP 1, micro batches 64."""
    data = _recipe("lora-qwen2.5-0.5b", QWEN25_0_5B, 1, 4, 4, 1)
    _batch(data, train=1024, mini=256, micro_train=64, micro_forward=64, samples=5)
    data["algorithm"]["learning_rate"] = 3.0e-5
    data["settings"] = {"generator.inference_engine.gpu_memory_utilization": 0.8,
                        "trainer.policy.model.lora.rank": 32,
                        "trainer.policy.model.lora.alpha": 32}
    return data


RECIPES: dict[str, Callable[[], dict[str, Any]]] = {
    "gsm8k-1.5b": gsm8k_1_5b,
    "dapo-math-7b": dapo_math_7b,
    "skyrl-sql-7b": skyrl_sql_7b,
    "megatron-qwen3-30b-a3b": megatron_qwen3_30b_a3b,
    "megatron-lora-qwen3-30b-a3b": megatron_lora_qwen3_30b_a3b,
    "lora-qwen2.5-0.5b": lora_qwen25_0_5b,
}
