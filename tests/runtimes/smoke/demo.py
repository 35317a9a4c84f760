"""A countdown smoke run without the build graph: a RunSpec dict, and its inputs made in place.

A test fixture (the smoke runtime's tests and benchmarks/smoke_run.py use it). Real experiments
build their inputs with the artifact builders (rlaunch.builders.countdown); this module makes the
same files (train.parquet/eval.parquet, tokenizer.json, an SFT'd TinyLM) straight at the paths the
rendered launch YAML names, so a test can run the runtime in seconds.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch

from rlaunch import __version__
from rlaunch.atomic import write_text_atomically
from rlaunch.clock import utc_now
from rlaunch.models.sft import sft_train
from rlaunch.models.tiny import TinyConfig, TinyLM, save_pretrained
from rlaunch.models.tokenizer import CharTokenizer
from rlaunch.render import launch_document, render_launch
from rlaunch.spec import parse_spec
from rlaunch.store import RECORD_FILE, ArtifactRecord, Provenance, scan_payload
from rlaunch.tasks.countdown import make_problems, prompt_rows
from rlaunch.tasks.parquet import write_prompts
from rlaunch.tasks.prompts import EVAL_FILE, TRAIN_FILE

MODEL_DIMS = {"d_model": 64, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
              "max_position_embeddings": 64}
VOCAB_SIZE = CharTokenizer().vocab_size
# The facts the sft builder checks against the model it trains.
MODEL_PARAMETERS = sum(
    parameter.numel()
    for parameter in TinyLM(TinyConfig(vocab_size=VOCAB_SIZE, **MODEL_DIMS)).parameters()
)

SMOKE_RUNTIME = {
    "name": "smoke-0.1.0",
    "profile": "smoke",
    "package": "rlaunch==0.1.0",
    "git": None,
    "entrypoint": "rlaunch.runtimes.smoke",
    "required_fixes": [],
}


def _built(name: str, kind: str, builder: str, config: dict, *, facts: dict | None = None,
           rows: int | None = None, version: str = "dev") -> dict[str, Any]:
    return {"type": "built", "name": name, "version": version, "kind": kind, "builder": builder,
            "config": config, "deps": {}, "facts": facts, "rows": rows}


def smoke_spec(
    *,
    name: str = "countdown-smoke",
    version: str = "dev",
    seed: int = 7,
    nodes: int = 1,
    gpus_per_node: int = 2,
    colocate_all: bool = True,
    num_engines: int | None = None,
    engine_tp: int = 1,
    policy_nodes: int | None = None,
    policy_gpus_per_node: int | None = None,
    strategy: str = "fsdp",
    policy_tp: int = 1,
    use_kl_loss: bool = True,
    use_kl_in_reward: bool = False,
    advantage_estimator: str = "grpo",
    train_batch_size: int = 16,
    policy_mini_batch_size: int = 8,
    micro_train_batch_size_per_gpu: int = 16,
    micro_forward_batch_size_per_gpu: int = 64,
    n_samples_per_prompt: int = 8,
    eval_batch_size: int = 64,
    max_training_steps: int | None = 40,
    learning_rate: float = 3e-4,
    temperature: float = 1.0,
    ckpt_interval: int = 10,
    max_ckpts_to_keep: int = 2,
    resume_mode: str = "latest",
    train_rows: int = 4000,
    sft_steps: int = 600,
    logger: str = "console",
    inputs_version: str = "dev",
) -> dict[str, Any]:
    """A RunSpec dict (public spec format) for a countdown smoke run on simulated GPUs.

    `inputs_version`: the version of its data, tokenizer and SFT model. A dev input is rebuilt
    by every launch; a calendar one is built once per store, then reused."""
    policy_nodes = nodes if policy_nodes is None else policy_nodes
    policy_gpus = gpus_per_node if policy_gpus_per_node is None else policy_gpus_per_node
    engines = (policy_nodes * policy_gpus) // engine_tp if num_engines is None else num_engines
    facts = {"num_attention_heads": MODEL_DIMS["n_heads"],
             "num_key_value_heads": MODEL_DIMS["n_kv_heads"],
             "max_position_embeddings": MODEL_DIMS["max_position_embeddings"], "num_experts": None,
             "num_hidden_layers": MODEL_DIMS["n_layers"], "hidden_size": MODEL_DIMS["d_model"],
             "intermediate_size": 4 * MODEL_DIMS["d_model"], "vocab_size": VOCAB_SIZE,
             "head_dim": None, "torch_dtype": "float32", "num_parameters": MODEL_PARAMETERS}
    tokenizer = _built(f"{name}-tokenizer", "tokenizer", "char_tokenizer", {},
                       version=inputs_version)
    data = _built(f"{name}-data", "dataset", "countdown_data",
                  {"seed": seed, "train_rows": train_rows, "eval_rows": 256}, rows=train_rows,
                  version=inputs_version)
    # The builders of rlaunch.builders.countdown can make these too (`rlaunch launch` does).
    model = _built(f"{name}-sft", "model", "sft_model",
                   {**MODEL_DIMS, "steps": sft_steps, "seed": seed}, facts=facts,
                   version=inputs_version)
    model["deps"] = {"data": data, "tokenizer": tokenizer}
    policy = {"num_nodes": policy_nodes, "num_gpus_per_node": policy_gpus,
              "tensor_parallel_size": policy_tp if strategy == "megatron" else 1,
              "pipeline_parallel_size": 1, "context_parallel_size": 1,
              "expert_parallel_size": 1, "expert_tensor_parallel_size": 1,
              "sequence_parallel_size": 1}
    return {
        "schema_version": 1, "name": name, "version": version, "seed": seed,
        "model": model, "tokenizer": tokenizer, "reference_model": None, "critic_model": None,
        "train_data": data, "eval_data": data, "runtime": SMOKE_RUNTIME,
        "role_plan": {
            "strategy": strategy,
            "policy": policy,
            # The reference shares the policy's GPUs and runs its parallel sizes.
            "reference": ({"colocated_with_policy": True, **policy}
                          if use_kl_loss or use_kl_in_reward else None),
            "critic": None,
            "rollout": {"num_engines": engines, "tensor_parallel_size": engine_tp,
                        "pipeline_parallel_size": 1, "data_parallel_size": 1,
                        "expert_parallel_size": 1, "backend": "vllm",
                        "weight_sync_backend": "gloo"},
            "placement": {"colocate_all": colocate_all, "colocate_policy_ref": True},
            "batch": {"train_batch_size": train_batch_size,
                      "policy_mini_batch_size": policy_mini_batch_size,
                      "critic_mini_batch_size": None,
                      "micro_train_batch_size_per_gpu": micro_train_batch_size_per_gpu,
                      "micro_forward_batch_size_per_gpu": micro_forward_batch_size_per_gpu,
                      "n_samples_per_prompt": n_samples_per_prompt,
                      "eval_batch_size": eval_batch_size},
        },
        "lengths": {"max_prompt_length": 16, "max_generate_length": 8, "max_input_length": 16,
                    "max_turns": 1},
        "algorithm": {"advantage_estimator": advantage_estimator,
                      "kl": {"use_kl_loss": use_kl_loss, "use_kl_in_reward": use_kl_in_reward,
                             "kl_loss_coef": 0.001, "kl_estimator_type": "k3"},
                      "learning_rate": learning_rate, "epochs": 1,
                      "max_training_steps": max_training_steps, "temperature": temperature,
                      "clip_ratio": 0.2, "fully_async": False, "environment": "countdown"},
        "logger": logger,
        "checkpoint": {"ckpt_interval": ckpt_interval, "max_ckpts_to_keep": max_ckpts_to_keep,
                       "hf_save_interval": -1, "export_final": True},
        "resume": {"mode": resume_mode, "path": None, "compatible_runtimes": []},
        "execution": {"executor": "local", "address": None, "cluster": None,
                      "allocation": {"num_nodes": nodes, "gpus_per_node": gpus_per_node,
                                     "accelerator": "sim", "cpus_per_node": 2,
                                     "memory_gb_per_node": 8, "disk_gb_per_node": 10},
                      "priority": "normal", "max_retries": 0, "timeout_minutes": 30,
                      "credentials": [], "wandb": None, "store_prefix": None},
        "smoke_of": None,
    }


def render_smoke(spec: dict[str, Any], store_prefix: str) -> tuple[str, dict[str, Any]]:
    """(launch YAML text, launch document) of a smoke_spec dict, via the real renderer."""
    run = parse_spec(spec, "smoke_spec")
    text = render_launch(run, store_prefix=store_prefix, launcher_commit=None)
    return text, launch_document(run, store_prefix=store_prefix, launcher_commit=None)


def build_inputs(
    document: dict[str, Any],
    *,
    seed: int = 7,
    sft_steps: int = 600,
    train_rows: int = 4000,
    eval_rows: int = 256,
    dims: dict[str, int] | None = None,
    model_source: str | Path | None = None,
) -> None:
    """Write every input the launch document names: data, tokenizer and an SFT'd model, each
    with its build record last (the runtime refuses an input without one).

    `model_source`: copy an existing save_pretrained directory instead of training one."""
    inputs = document["inputs"]
    problems = make_problems(seed, train_rows + eval_rows)
    for slot in ("train_data", "eval_data"):
        if slot in inputs:
            root = Path(inputs[slot]["uri"])
            root.mkdir(parents=True, exist_ok=True)
            write_prompts(root / TRAIN_FILE, prompt_rows(problems[:train_rows], "train"))
            write_prompts(root / EVAL_FILE, prompt_rows(problems[train_rows:], "eval"))
    tokenizer = CharTokenizer()
    tokenizer.save(inputs["tokenizer"]["uri"])
    model_dir = Path(inputs["model"]["uri"])
    if model_source is not None:
        shutil.copytree(model_source, model_dir, dirs_exist_ok=True)
    else:
        torch.set_num_threads(1)
        torch.manual_seed(seed)
        model = TinyLM(TinyConfig(vocab_size=tokenizer.vocab_size, **(dims or MODEL_DIMS)))
        sft_train(model, tokenizer, problems[:train_rows], steps=sft_steps, seed=seed)
        save_pretrained(model, tokenizer, model_dir)
    write_records(document)


def write_records(document: dict[str, Any]) -> None:
    """A build record for every input folder the document names, as the store writes it:
    identity and fingerprint from the document, the files as they are now. The provenance
    says that this module, not the artifact's builder, made the files."""


    written: set[str] = set()
    for entry in document["inputs"].values():
        root = Path(entry["uri"])
        if entry["identity"] in written or not root.is_dir():
            continue
        written.add(entry["identity"])
        name, _, version = entry["identity"].partition("@")
        source = entry.get("source") or {}
        # A built input's source config is the builder's dict; an hf_dataset's is its subset name.
        config = source.get("config")
        record = ArtifactRecord(
            schema_version=1, identity=entry["identity"], name=name, version=version,
            fingerprint=entry["fingerprint"], kind=entry["kind"], type=entry["type"], deps={},
            config=config if isinstance(config, dict) else {},
            provenance=Provenance(
                builder=source.get("builder") or "demo", builder_class=f"{__name__}:build_inputs",
                rlaunch_version=__version__, launcher_commit=None, built_at=utc_now(),
                build_seconds=0.0,
            ),
            files=scan_payload(root),
        )
        write_text_atomically(root / RECORD_FILE, record.to_json())
