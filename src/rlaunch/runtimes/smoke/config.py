"""What the smoke runtime reads from a launch YAML, checked once, with field paths in errors.

The runtime reads the `skyrl` subtree exactly as SkyRL would (role geometry, batch sizes,
lengths, algorithm), input locations from `inputs`, output roots from `artifacts`. Fields
the renderer leaves to SkyRL's defaults (grpo_norm_by_std, max_grad_norm, adam betas,
weight decay) take SkyRL 0.3.0's default values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENVIRONMENTS = ("countdown",)
ESTIMATORS = ("grpo", "rloo")

_MISSING = object()


class SmokeConfigError(ValueError):
    """The launch YAML asks for something the smoke runtime cannot run."""


def _field(document: dict, path: str, kind: type | tuple[type, ...], default: Any = _MISSING):
    node: Any = document
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is not _MISSING:
                return default
            raise SmokeConfigError(
                f"launch YAML field {path} is missing; render the launch YAML again with "
                "`rlaunch render` (docs/launch-yaml.md lists every field)"
            )
        node = node[part]
    if node is None and default is None:
        return None
    if isinstance(node, bool) and kind in (int, float):
        raise SmokeConfigError(f"launch YAML field {path} must be a number, got {node!r}")
    if kind is float and isinstance(node, int):
        return float(node)
    if not isinstance(node, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        expected = " or ".join(k.__name__ for k in kinds)
        raise SmokeConfigError(f"launch YAML field {path} must be {expected}, got {node!r}")
    return node


def _positive(value: int, path: str) -> int:
    if value < 1:
        raise SmokeConfigError(f"launch YAML field {path} must be >= 1, got {value}")
    return value


def _local(uri: str, path: str) -> Path:
    if "://" in uri and not uri.startswith("file://"):
        raise SmokeConfigError(
            f"{path} is {uri!r}: the smoke runtime reads and writes local paths only; "
            "run it with a local store prefix (execution.store_prefix or $RLAUNCH_STORE)"
        )
    return Path(uri.removeprefix("file://"))


@dataclass(frozen=True)
class Geometry:
    strategy: str
    policy_nodes: int
    policy_gpus_per_node: int
    model_parallel_size: int
    """GPUs holding one policy replica: TP x PP x CP (megatron) or SP (fsdp)."""
    use_reference: bool
    ref_nodes: int
    ref_gpus_per_node: int
    colocate_all: bool
    colocate_policy_ref: bool
    num_engines: int
    engine_tp: int
    engine_pp: int
    engine_dp: int

    @property
    def policy_world(self) -> int:
        return self.policy_nodes * self.policy_gpus_per_node

    @property
    def policy_dp(self) -> int:
        return self.policy_world // self.model_parallel_size

    @property
    def ref_world(self) -> int:
        return self.ref_nodes * self.ref_gpus_per_node

    @property
    def gpus_per_engine(self) -> int:
        return self.engine_tp * self.engine_pp * self.engine_dp

    @property
    def rollout_world(self) -> int:
        return self.num_engines * self.gpus_per_engine


@dataclass(frozen=True)
class InputRef:
    """One `inputs.<slot>` entry: the artifact the build side materialized for the run."""

    slot: str
    identity: str
    fingerprint: str
    directory: Path


@dataclass(frozen=True)
class SmokeConfig:
    source: str
    run_id: str
    run_name: str
    run_version: str
    seed: int
    fingerprint: str
    runtime_fingerprint: str
    compatible_runtimes: tuple[str, ...]
    resume_mode: str
    resume_path: Path | None
    checkpoint_root: Path
    export_root: Path
    attempts_root: Path
    terminal_manifest: Path
    inputs: tuple[InputRef, ...]
    """Every `inputs` slot, in the YAML's order: verified against its build record first."""
    model_dir: Path
    tokenizer_dir: Path
    reference_dir: Path
    train_dir: Path
    eval_dir: Path | None
    geometry: Geometry
    estimator: str
    use_kl_loss: bool
    use_kl_in_reward: bool
    kl_loss_coef: float
    kl_estimator: str
    eps_clip_low: float
    eps_clip_high: float
    grpo_norm_by_std: bool
    learning_rate: float
    weight_decay: float
    adam_betas: tuple[float, float]
    max_grad_norm: float
    epochs: int
    max_training_steps: int | None
    train_batch_size: int
    policy_mini_batch_size: int
    micro_train_batch_size_per_gpu: int
    micro_forward_batch_size_per_gpu: int
    eval_batch_size: int
    n_samples_per_prompt: int
    max_prompt_length: int
    max_generate_length: int
    temperature: float
    ckpt_interval: int
    max_ckpts_to_keep: int
    hf_save_interval: int
    logger: str
    project_name: str
    wandb_entity: str | None
    num_sim_gpus: int
    """Allocation: nodes x GPUs per node (what a local Ray is started with)."""


def _geometry(doc: dict) -> Geometry:
    trainer = "skyrl.trainer"
    strategy = _field(doc, f"{trainer}.strategy", str)
    if strategy not in ("fsdp", "megatron"):
        raise SmokeConfigError(f"{trainer}.strategy must be fsdp or megatron, got {strategy!r}")
    megatron = f"{trainer}.policy.megatron_config"
    if strategy == "megatron":
        model_parallel = 1
        for name in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                     "context_parallel_size"):
            path = f"{megatron}.{name}"
            model_parallel *= _positive(_field(doc, path, int), path)
    else:
        model_parallel = _positive(
            _field(doc, f"{trainer}.policy.sequence_parallel_size", int),
            f"{trainer}.policy.sequence_parallel_size",
        )
    if _field(doc, f"{trainer}.critic.model.path", str, None) is not None:
        raise SmokeConfigError(
            f"{trainer}.critic.model.path is set: the smoke runtime has no critic role "
            "(it runs grpo and rloo); drop the critic model from the spec"
        )
    use_kl_loss = _field(doc, f"{trainer}.algorithm.use_kl_loss", bool)
    use_kl_in_reward = _field(doc, f"{trainer}.algorithm.use_kl_in_reward", bool)
    placement = f"{trainer}.placement"
    engine = "skyrl.generator.inference_engine"
    geometry = Geometry(
        strategy=strategy,
        policy_nodes=_positive(_field(doc, f"{placement}.policy_num_nodes", int),
                               f"{placement}.policy_num_nodes"),
        policy_gpus_per_node=_positive(_field(doc, f"{placement}.policy_num_gpus_per_node", int),
                                       f"{placement}.policy_num_gpus_per_node"),
        model_parallel_size=model_parallel,
        use_reference=use_kl_loss or use_kl_in_reward,
        ref_nodes=_positive(_field(doc, f"{placement}.ref_num_nodes", int),
                            f"{placement}.ref_num_nodes"),
        ref_gpus_per_node=_positive(_field(doc, f"{placement}.ref_num_gpus_per_node", int),
                                    f"{placement}.ref_num_gpus_per_node"),
        colocate_all=_field(doc, f"{placement}.colocate_all", bool),
        colocate_policy_ref=_field(doc, f"{placement}.colocate_policy_ref", bool),
        num_engines=_positive(_field(doc, f"{engine}.num_engines", int), f"{engine}.num_engines"),
        engine_tp=_positive(_field(doc, f"{engine}.tensor_parallel_size", int),
                            f"{engine}.tensor_parallel_size"),
        engine_pp=_positive(_field(doc, f"{engine}.pipeline_parallel_size", int),
                            f"{engine}.pipeline_parallel_size"),
        engine_dp=_positive(_field(doc, f"{engine}.data_parallel_size", int),
                            f"{engine}.data_parallel_size"),
    )
    if geometry.policy_world % model_parallel:
        raise SmokeConfigError(
            f"policy world {geometry.policy_world} = {geometry.policy_nodes} nodes x "
            f"{geometry.policy_gpus_per_node} GPUs is not divisible by the model-parallel size "
            f"{model_parallel}; fix the role plan (preflight rule family `geometry`)"
        )
    return geometry


def _input_dir(doc: dict, slot: str, required: bool) -> Path | None:
    uri = _field(doc, f"inputs.{slot}.uri", str, None if not required else _MISSING)
    return None if uri is None else _local(uri, f"inputs.{slot}.uri")


def _inputs(doc: dict) -> tuple[InputRef, ...]:
    slots = _field(doc, "inputs", dict)
    return tuple(
        InputRef(
            slot=slot,
            identity=_field(doc, f"inputs.{slot}.identity", str),
            fingerprint=_field(doc, f"inputs.{slot}.fingerprint", str),
            directory=_local(_field(doc, f"inputs.{slot}.uri", str), f"inputs.{slot}.uri"),
        )
        for slot in slots
    )


def load_config(document: dict, source: str) -> SmokeConfig:
    """The runtime's view of a launch document (already schema-checked by `load_launch`)."""
    trainer = "skyrl.trainer"
    env_class = _field(document, "skyrl.environment.env_class", str)
    if env_class not in ENVIRONMENTS:
        raise SmokeConfigError(
            f"skyrl.environment.env_class is {env_class!r}; the smoke runtime has the task(s) "
            f"{', '.join(ENVIRONMENTS)}; set algorithm.environment in the spec"
        )
    estimator = _field(document, f"{trainer}.algorithm.advantage_estimator", str)
    if estimator not in ESTIMATORS:
        raise SmokeConfigError(
            f"{trainer}.algorithm.advantage_estimator is {estimator!r}; the smoke runtime runs "
            f"{' and '.join(ESTIMATORS)}"
        )
    turns = _field(document, "skyrl.generator.max_turns", int)
    if turns != 1:
        raise SmokeConfigError(
            f"skyrl.generator.max_turns is {turns}; the smoke task is single-turn (1)"
        )
    model_dir = _input_dir(document, "model", True)
    reference = _input_dir(document, "reference_model", False)
    allocation = "execution.allocation"
    wandb = _field(document, "execution.wandb", dict, None)
    resume_path = _field(document, f"{trainer}.resume_path", str, None)
    betas = _field(document, f"{trainer}.policy.optimizer_config.adam_betas", list, [0.9, 0.999])
    return SmokeConfig(
        source=source,
        run_id=_field(document, "run.id", str),
        run_name=_field(document, "run.name", str),
        run_version=_field(document, "run.version", str),
        seed=_field(document, f"{trainer}.seed", int),
        fingerprint=_field(document, "run.fingerprint", str),
        runtime_fingerprint=_field(document, "runtime.fingerprint", str),
        compatible_runtimes=tuple(_field(document, "resume.compatible_runtimes", list, [])),
        resume_mode=_field(document, f"{trainer}.resume_mode", str),
        resume_path=None if resume_path is None else _local(resume_path, f"{trainer}.resume_path"),
        checkpoint_root=_local(_field(document, "artifacts.checkpoint_root", str),
                               "artifacts.checkpoint_root"),
        export_root=_local(_field(document, "artifacts.export_root", str), "artifacts.export_root"),
        attempts_root=_local(_field(document, "artifacts.attempts_root", str),
                             "artifacts.attempts_root"),
        terminal_manifest=_local(_field(document, "artifacts.terminal_manifest", str),
                                 "artifacts.terminal_manifest"),
        inputs=_inputs(document),
        model_dir=model_dir,
        tokenizer_dir=_input_dir(document, "tokenizer", True),
        reference_dir=reference if reference is not None else model_dir,
        train_dir=_input_dir(document, "train_data", True),
        eval_dir=_input_dir(document, "eval_data", False),
        geometry=_geometry(document),
        estimator=estimator,
        use_kl_loss=_field(document, f"{trainer}.algorithm.use_kl_loss", bool),
        use_kl_in_reward=_field(document, f"{trainer}.algorithm.use_kl_in_reward", bool),
        kl_loss_coef=_field(document, f"{trainer}.algorithm.kl_loss_coef", float),
        kl_estimator=_field(document, f"{trainer}.algorithm.kl_estimator_type", str),
        eps_clip_low=_field(document, f"{trainer}.algorithm.eps_clip_low", float),
        eps_clip_high=_field(document, f"{trainer}.algorithm.eps_clip_high", float),
        grpo_norm_by_std=_field(document, f"{trainer}.algorithm.grpo_norm_by_std", bool, True),
        learning_rate=_field(document, f"{trainer}.policy.optimizer_config.lr", float),
        weight_decay=_field(document, f"{trainer}.policy.optimizer_config.weight_decay", float,
                            0.01),
        adam_betas=(float(betas[0]), float(betas[1])),
        max_grad_norm=_field(document, f"{trainer}.policy.optimizer_config.max_grad_norm", float,
                             1.0),
        epochs=_positive(_field(document, f"{trainer}.epochs", int), f"{trainer}.epochs"),
        max_training_steps=_field(document, f"{trainer}.max_training_steps", int, None),
        train_batch_size=_positive(_field(document, f"{trainer}.train_batch_size", int),
                                   f"{trainer}.train_batch_size"),
        policy_mini_batch_size=_positive(_field(document, f"{trainer}.policy_mini_batch_size", int),
                                         f"{trainer}.policy_mini_batch_size"),
        micro_train_batch_size_per_gpu=_positive(
            _field(document, f"{trainer}.micro_train_batch_size_per_gpu", int),
            f"{trainer}.micro_train_batch_size_per_gpu",
        ),
        micro_forward_batch_size_per_gpu=_positive(
            _field(document, f"{trainer}.micro_forward_batch_size_per_gpu", int),
            f"{trainer}.micro_forward_batch_size_per_gpu",
        ),
        eval_batch_size=_positive(_field(document, f"{trainer}.eval_batch_size", int),
                                  f"{trainer}.eval_batch_size"),
        n_samples_per_prompt=_positive(
            _field(document, "skyrl.generator.n_samples_per_prompt", int),
            "skyrl.generator.n_samples_per_prompt",
        ),
        max_prompt_length=_positive(_field(document, f"{trainer}.max_prompt_length", int),
                                    f"{trainer}.max_prompt_length"),
        max_generate_length=_positive(
            _field(document, "skyrl.generator.sampling_params.max_generate_length", int),
            "skyrl.generator.sampling_params.max_generate_length",
        ),
        temperature=_field(document, "skyrl.generator.sampling_params.temperature", float),
        ckpt_interval=_field(document, f"{trainer}.ckpt_interval", int),
        max_ckpts_to_keep=_field(document, f"{trainer}.max_ckpts_to_keep", int),
        hf_save_interval=_field(document, f"{trainer}.hf_save_interval", int),
        logger=_field(document, f"{trainer}.logger", str),
        project_name=_field(document, f"{trainer}.project_name", str),
        wandb_entity=None if wandb is None else wandb.get("entity"),
        num_sim_gpus=_positive(_field(document, f"{allocation}.num_nodes", int),
                               f"{allocation}.num_nodes")
        * _positive(_field(document, f"{allocation}.gpus_per_node", int),
                    f"{allocation}.gpus_per_node"),
    )


def check_runnable(config: SmokeConfig) -> None:
    """Semantic checks preflight also makes, repeated here because a runtime must not
    trust its input: a wrong batch split would silently train on the wrong data."""
    n = config.n_samples_per_prompt
    dp = config.geometry.policy_dp
    if config.resume_mode not in ("none", "latest", "from_path"):
        raise SmokeConfigError(
            f"skyrl.trainer.resume_mode is {config.resume_mode!r}; use none, latest or from_path"
        )
    if config.resume_mode == "from_path" and config.resume_path is None:
        raise SmokeConfigError(
            "skyrl.trainer.resume_mode is from_path but skyrl.trainer.resume_path is null; "
            "set resume.path to a global_step_N directory"
        )
    if config.max_ckpts_to_keep == 0:
        raise SmokeConfigError(
            "skyrl.trainer.max_ckpts_to_keep is 0, which would keep no checkpoint; use -1 (all) "
            "or a positive count"
        )
    if config.train_batch_size % config.policy_mini_batch_size:
        raise SmokeConfigError(
            f"train_batch_size {config.train_batch_size} is not divisible by "
            f"policy_mini_batch_size {config.policy_mini_batch_size}"
        )
    per_rank = config.policy_mini_batch_size * n
    if per_rank % dp:
        raise SmokeConfigError(
            f"policy mini batch {config.policy_mini_batch_size} x n_samples_per_prompt {n} = "
            f"{per_rank} sequences do not split over policy DP {dp}"
        )
    if (per_rank // dp) % config.micro_train_batch_size_per_gpu:
        raise SmokeConfigError(
            f"per-GPU mini batch {per_rank // dp} sequences (= {config.policy_mini_batch_size} x "
            f"{n} / DP {dp}) is not divisible by micro_train_batch_size_per_gpu "
            f"{config.micro_train_batch_size_per_gpu}"
        )
    if config.temperature < 0:
        raise SmokeConfigError(
            f"skyrl.generator.sampling_params.temperature must be >= 0, got {config.temperature}"
        )
