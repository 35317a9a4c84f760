"""The `skyrl` subtree: a RunSpec in SkyRL 0.3.0's own config field names.

Field names are exactly those of SkyRL 0.3.0's `SkyRLTrainConfig` (shared reference
`skyrl-0.3.0-config-fields.txt`); tests/contract proves that SkyRL's own loader and
`validate_cfg` accept what this writes. Only fields the RunSpec decides are written (the plan's,
and the run's extra `settings` at their dotted names): everything else keeps SkyRL's default, so
the subtree says exactly what the spec says.

A role the plan leaves out mirrors the policy's footprint (nodes, GPUs per node), which keeps
SkyRL's arithmetic on integers it never acts upon (no reference when neither KL flag is set; no
critic while `critic.model.path` is null). A role the plan has writes its own footprint, colocated
or not: SkyRL sizes its workers from it (preflight GEO014 proves a colocated one matches the
policy as SkyRL requires). The reference also writes its own parallel sizes into `trainer.ref`;
only an absent reference mirrors the policy's.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from rlaunch.spec import AuxRole, CheckpointPolicy, PolicyRole, ReferenceRole, RunSpec
from rlaunch.tasks.prompts import data_file

FINAL_EXPORT_INTERVAL = 1_000_000_000
"""`trainer.hf_save_interval` for `hf_save_interval: -1` with `export_final: true`. SkyRL 0.3.0
exports only while `hf_save_interval > 0` (`RayPPOTrainer.train`, skyrl/train/trainer.py: the
`hf_model_save` condition in the loop, `is_epoch_end or global_step % hf_save_interval == 0`, and
the "Safety net" after it, which exports the last step unless the loop just did); -1 exports
nothing. An interval no run reaches leaves only the epoch ends and that final save."""


def hf_save_interval(checkpoint: CheckpointPolicy) -> int:
    """The export policy as SkyRL 0.3.0 reads it: the spec's interval, or FINAL_EXPORT_INTERVAL
    when the spec asks for the final export only."""
    if checkpoint.hf_save_interval == -1 and checkpoint.export_final:
        return FINAL_EXPORT_INTERVAL
    return checkpoint.hf_save_interval


def _footprint(role: AuxRole | None, policy: PolicyRole) -> tuple[int, int]:
    if role is None:
        return policy.num_nodes, policy.num_gpus_per_node
    return role.num_nodes, role.num_gpus_per_node


def _placement(spec: RunSpec) -> dict[str, Any]:
    plan = spec.role_plan
    ref_nodes, ref_gpus = _footprint(plan.reference, plan.policy)
    critic_nodes, critic_gpus = _footprint(plan.critic, plan.policy)
    return {
        "colocate_all": plan.placement.colocate_all,
        "colocate_policy_ref": plan.placement.colocate_policy_ref,
        "policy_num_nodes": plan.policy.num_nodes,
        "policy_num_gpus_per_node": plan.policy.num_gpus_per_node,
        "critic_num_nodes": critic_nodes,
        "critic_num_gpus_per_node": critic_gpus,
        "ref_num_nodes": ref_nodes,
        "ref_num_gpus_per_node": ref_gpus,
    }


def _megatron(role: PolicyRole | ReferenceRole) -> dict[str, Any]:
    return {
        "tensor_model_parallel_size": role.tensor_parallel_size,
        "pipeline_model_parallel_size": role.pipeline_parallel_size,
        "context_parallel_size": role.context_parallel_size,
        "expert_model_parallel_size": role.expert_parallel_size,
        "expert_tensor_parallel_size": role.expert_tensor_parallel_size,
    }


def _algorithm(spec: RunSpec) -> dict[str, Any]:
    algorithm = spec.algorithm
    return {
        "advantage_estimator": algorithm.advantage_estimator,
        "use_kl_loss": algorithm.kl.use_kl_loss,
        "use_kl_in_reward": algorithm.kl.use_kl_in_reward,
        "kl_loss_coef": algorithm.kl.kl_loss_coef,
        "kl_estimator_type": algorithm.kl.kl_estimator_type,
        "eps_clip_low": algorithm.clip_ratio,
        "eps_clip_high": algorithm.clip_ratio,
    }


def _trainer(spec: RunSpec, inputs: dict[str, Any], artifacts: dict[str, Any]) -> dict[str, Any]:
    plan = spec.role_plan
    batch = plan.batch
    policy_path = inputs["model"]["uri"]
    ref_path = inputs["reference_model"]["uri"] if "reference_model" in inputs else policy_path
    critic_path = inputs["critic_model"]["uri"] if "critic_model" in inputs else None
    wandb = spec.execution.wandb
    ref_sizes = plan.reference if plan.reference is not None else plan.policy
    return {
        "placement": _placement(spec),
        "strategy": plan.strategy,
        "policy": {
            "model": {"path": policy_path},
            "optimizer_config": {"lr": spec.algorithm.learning_rate},
            "sequence_parallel_size": plan.policy.sequence_parallel_size,
            "megatron_config": _megatron(plan.policy),
        },
        "ref": {
            "model": {"path": ref_path},
            "sequence_parallel_size": ref_sizes.sequence_parallel_size,
            "megatron_config": _megatron(ref_sizes),
        },
        "critic": {
            "model": {"path": critic_path},
            "sequence_parallel_size": plan.policy.sequence_parallel_size,
        },
        "algorithm": _algorithm(spec),
        "fully_async": {"enabled": spec.algorithm.fully_async},
        "seed": spec.seed,
        "resume_mode": spec.resume.mode,
        "resume_path": spec.resume.path,
        "ckpt_path": artifacts["checkpoint_root"],
        "max_ckpts_to_keep": spec.checkpoint.max_ckpts_to_keep,
        "ckpt_interval": spec.checkpoint.ckpt_interval,
        "hf_save_interval": hf_save_interval(spec.checkpoint),
        "export_path": artifacts["export_root"],
        "epochs": spec.algorithm.epochs,
        "max_training_steps": spec.algorithm.max_training_steps,
        "train_batch_size": batch.train_batch_size,
        "policy_mini_batch_size": batch.policy_mini_batch_size,
        # SkyRL types this as an int and reads it only when a critic model is set.
        "critic_mini_batch_size": (
            batch.critic_mini_batch_size
            if batch.critic_mini_batch_size is not None
            else batch.policy_mini_batch_size
        ),
        "micro_train_batch_size_per_gpu": batch.micro_train_batch_size_per_gpu,
        "micro_forward_batch_size_per_gpu": batch.micro_forward_batch_size_per_gpu,
        "eval_batch_size": batch.eval_batch_size,
        "max_prompt_length": spec.lengths.max_prompt_length,
        "project_name": wandb.project if wandb is not None else spec.name,
        "run_name": spec.identity,
        "tags": _wandb_tags(spec),
        "logger": spec.logger,
        "log_path": artifacts["attempts_root"],
    }


def _wandb_tags(spec: RunSpec) -> list[str]:
    """`trainer.tags`, which SkyRL 0.3.0's `Tracking` passes to `wandb.init(tags=...)`
    (`skyrl/train/utils/tracking.py`): the run, its version, the runtime pin, and the full run
    a smoke stands for."""
    runtime = spec.runtime
    pin = runtime.package or (f"{runtime.git.repo}@{runtime.git.commit[:12]}"
                              if runtime.git is not None else runtime.name)
    tags = [f"run:{spec.name}", f"version:{spec.version}", f"runtime:{pin}"]
    if spec.smoke_of is not None:
        tags.append(f"smoke_of:{spec.smoke_of.name}@{spec.smoke_of.version}")
    return tags


def _generator(spec: RunSpec) -> dict[str, Any]:
    rollout = spec.role_plan.rollout
    return {
        "inference_engine": {
            "num_engines": rollout.num_engines,
            "backend": rollout.backend,
            "weight_sync_backend": rollout.weight_sync_backend,
            "tensor_parallel_size": rollout.tensor_parallel_size,
            "pipeline_parallel_size": rollout.pipeline_parallel_size,
            "data_parallel_size": rollout.data_parallel_size,
            "expert_parallel_size": rollout.expert_parallel_size,
        },
        "n_samples_per_prompt": spec.role_plan.batch.n_samples_per_prompt,
        "max_turns": spec.lengths.max_turns,
        "max_input_length": spec.lengths.max_input_length,
        "sampling_params": {
            "max_generate_length": spec.lengths.max_generate_length,
            "temperature": spec.algorithm.temperature,
        },
    }


def _data_path(entry: dict[str, Any], slot: str) -> str:
    """The prompt file of a dataset input, for SkyRL's PromptDataset (which reads a path ending
    .parquet/.json/.jsonl and takes anything else for a Hub dataset name); the artifact's folder
    when its builder writes no runtime-format file."""
    name = data_file(entry["source"].get("builder"), slot)
    return entry["uri"] if name is None else f"{entry['uri']}/{name}"


def _with_settings(subtree: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """The run's extra settings placed at their dotted names. The RunSpec proved each is a
    field of the pinned release that the plan does not decide, so none replaces a rendered
    value."""
    for name, value in settings.items():
        *sections, leaf = name.split(".")
        node = subtree
        for section in sections:
            node = node.setdefault(section, {})
        node[leaf] = copy.deepcopy(value)
    return subtree


def skyrl_subtree(
    spec: RunSpec, *, inputs: dict[str, Any], artifacts: dict[str, Any]
) -> dict[str, Any]:
    """The SkyRL config subtree; `inputs` and `artifacts` are the document's own sections, so
    every path in it is the one written there. The run's `settings` come last, each at its
    dotted name."""
    eval_path = _data_path(inputs["eval_data"], "eval_data") if "eval_data" in inputs else None
    return _with_settings({
        "data": {
            "train_data": [_data_path(inputs["train_data"], "train_data")],
            "val_data": [] if eval_path is None else [eval_path],
        },
        "trainer": _trainer(spec, inputs, artifacts),
        "generator": _generator(spec),
        "environment": {"env_class": spec.algorithm.environment},
    }, spec.settings)


def _override_value(value: Any) -> str:
    # SkyRL's CLI parser (OmegaConf.from_cli) reads each value as YAML. JSON strings are YAML
    # double-quoted scalars, so a path with `:` or `,` stays one string; floats go through
    # PyYAML so that `1e-06` comes out as `1.0e-06`, which YAML 1.1 reads as a float.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return yaml.safe_dump(value).splitlines()[0]
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ",".join(_override_value(item) for item in value) + "]"
    raise TypeError(f"no SkyRL command-line form for {type(value).__name__}: {value!r}")


def skyrl_cli_args(subtree: dict[str, Any], prefix: str = "") -> list[str]:
    """`key.path=value` arguments for SkyRL's entrypoint (`SkyRLTrainConfig.from_cli_overrides`,
    which `skyrl.train.entrypoints.main_base` calls on `sys.argv[1:]`), one per leaf, in the
    subtree's order. The skyrl runtime passes these; they carry the subtree, nothing more."""
    args: list[str] = []
    for key, value in subtree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            args.extend(skyrl_cli_args(value, f"{path}."))
        else:
            args.append(f"{path}={_override_value(value)}")
    return args
