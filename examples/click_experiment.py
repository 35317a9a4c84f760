"""An RL experiment as a Click main: countdown GRPO on the smoke runtime, with its smoke run.

    PYTHONPATH=src python examples/click_experiment.py --version dev             # plan only
    PYTHONPATH=src python examples/click_experiment.py --version dev --dry-run   # write YAMLs
    PYTHONPATH=src python examples/click_experiment.py --version 2026.11.29 --run

main() returns the run handles (the smoke first, then the full run); `@rl_build_options` adds
`--version`, `--run`, `--dry-run` and launches them through the one submission path, so the full
run's smoke gate is satisfied by the smoke that ran just before it. The role plan is written
once; the smoke shares it (and the runtime pin) and shrinks only steps and data.
"""

from __future__ import annotations

import copy
from typing import Any

import click

from rlaunch.builders.countdown import countdown_model_spec
from rlaunch.experiment import rl_build_options
from rlaunch.spec import RunSpec, parse_spec

RUNTIME = {
    "name": "rlaunch-smoke-0.1.0",
    "profile": "smoke",
    "package": "rlaunch==0.1.0",
    "git": None,
    "entrypoint": "rlaunch.runtimes.smoke",
    "required_fixes": [],
}
ROLE_PLAN = {
    "strategy": "fsdp",
    "policy": {
        "num_nodes": 1, "num_gpus_per_node": 2, "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1, "context_parallel_size": 1, "expert_parallel_size": 1,
        "expert_tensor_parallel_size": 1, "sequence_parallel_size": 1,
    },
    "reference": {
        "colocated_with_policy": True, "num_nodes": 1, "num_gpus_per_node": 2,
        "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "context_parallel_size": 1,
        "expert_parallel_size": 1, "expert_tensor_parallel_size": 1,
        "sequence_parallel_size": 1,
    },
    "critic": None,
    "rollout": {
        "num_engines": 2, "tensor_parallel_size": 1, "pipeline_parallel_size": 1,
        "data_parallel_size": 1, "expert_parallel_size": 1, "backend": "vllm",
        "weight_sync_backend": "gloo",
    },
    "placement": {"colocate_all": True, "colocate_policy_ref": True},
    "batch": {
        "train_batch_size": 16, "policy_mini_batch_size": 8, "critic_mini_batch_size": None,
        "micro_train_batch_size_per_gpu": 4, "micro_forward_batch_size_per_gpu": 8,
        "n_samples_per_prompt": 4, "eval_batch_size": 32,
    },
}
ALLOCATION = {
    "num_nodes": 1, "gpus_per_node": 2, "accelerator": "sim", "cpus_per_node": 2,
    "memory_gb_per_node": 8, "disk_gb_per_node": 20,
}


def countdown_run(name: str, version: str, *, steps: int, sft_steps: int) -> dict[str, Any]:
    model = countdown_model_spec("2026.11.01", sft_steps=sft_steps)
    data = model["deps"]["data"]
    return {
        "schema_version": 1, "name": name, "version": version, "seed": 1,
        "model": model, "tokenizer": model, "reference_model": None, "critic_model": None,
        "train_data": data, "eval_data": data, "runtime": dict(RUNTIME),
        "role_plan": copy.deepcopy(ROLE_PLAN),
        "lengths": {"max_prompt_length": 16, "max_generate_length": 8, "max_input_length": 16,
                    "max_turns": 1},
        "algorithm": {
            "advantage_estimator": "grpo",
            "kl": {"use_kl_loss": True, "use_kl_in_reward": False, "kl_loss_coef": 0.001,
                   "kl_estimator_type": "k3"},
            "learning_rate": 1e-3, "epochs": 1, "max_training_steps": steps,
            "temperature": 1.0, "clip_ratio": 0.2, "fully_async": False,
            "environment": "countdown",
        },
        "logger": "console",
        "checkpoint": {"ckpt_interval": 5, "max_ckpts_to_keep": 2, "hf_save_interval": -1,
                       "export_final": True},
        "resume": {"mode": "latest", "path": None, "compatible_runtimes": []},
        "execution": {
            "executor": "local", "address": None, "cluster": None,
            "allocation": dict(ALLOCATION), "priority": "normal", "max_retries": 0,
            "timeout_minutes": 60, "credentials": [], "wandb": None, "store_prefix": None,
        },
        "smoke_of": None,
    }


def smoke_of(full: dict[str, Any], *, steps: int) -> dict[str, Any]:
    """The full run's smoke: same geometry, runtime and handoffs; fewer steps."""
    smoke = copy.deepcopy(full)
    smoke["name"] = f"{full['name']}-smoke"
    smoke["algorithm"]["max_training_steps"] = steps
    smoke["smoke_of"] = {
        "name": full["name"], "version": full["version"],
        "role_plan": copy.deepcopy(full["role_plan"]), "runtime": dict(full["runtime"]),
        "allocation": dict(full["execution"]["allocation"]),
        "handoff_kinds": {"model": "model", "tokenizer": "model", "train_data": "dataset",
                          "eval_data": "dataset"},
    }
    return smoke


@click.command()
@rl_build_options
@click.option("--steps", type=int, default=20, show_default=True, help="RL steps of the full run.")
@click.option("--smoke/--no-smoke", default=True, show_default=True,
              help="Also return the smoke run, launched before the full run.")
def main(version: str, steps: int, smoke: bool) -> list[RunSpec]:
    """Countdown GRPO on the smoke runtime (1 node x 2 simulated GPUs)."""
    full = countdown_run("countdown-click", version, steps=steps, sft_steps=300)
    handles = [smoke_of(full, steps=2)] if smoke else []
    return [parse_spec(run, "examples/click_experiment.py") for run in [*handles, full]]


if __name__ == "__main__":
    main()
