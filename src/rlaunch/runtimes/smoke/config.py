"""What the smoke runtime takes from the typed launch document, plus what only it refuses.

The runtime reads the `skyrl` subtree exactly as SkyRL would (role geometry, batch sizes,
lengths, algorithm), input locations from `inputs`, output roots from `artifacts`, all through
`rlaunch.render.LaunchDocument` (which checked every field's type and carries SkyRL's defaults
for the settings the renderer leaves to SkyRL). Here: what the smoke runtime cannot run (another
task, a critic, multi-turn, a remote store).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlaunch.render import LaunchDocument
from rlaunch.spec.catalog import SMOKE_ENVIRONMENTS, SMOKE_ESTIMATORS
from rlaunch.spec.parallelism import Parallelism
from rlaunch.spec.roleplan import engine_gpus

class SmokeConfigError(ValueError):
    """The launch YAML asks for something the smoke runtime cannot run."""


def _local(uri: str, path: str) -> Path:
    if "://" in uri and not uri.startswith("file://"):
        raise SmokeConfigError(
            f"{path} is {uri!r}: the smoke runtime reads and writes local paths only; "
            "run it with a local store prefix (execution.store_prefix or $RLAUNCH_STORE)"
        )
    return Path(uri.removeprefix("file://"))


@dataclass(frozen=True)
class Geometry:
    policy: Parallelism
    """The policy's layout, as the `skyrl` subtree gives it to SkyRL."""
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
    def policy_dp(self) -> int:
        """The policy's DP (`geometry_of` refuses a world that does not divide)."""
        dp = self.policy.data_parallel
        if dp is None:
            raise SmokeConfigError(_not_divisible(self.policy))
        return dp

    @property
    def ref_world(self) -> int:
        return self.ref_nodes * self.ref_gpus_per_node

    @property
    def gpus_per_engine(self) -> int:
        return engine_gpus(tensor=self.engine_tp, pipeline=self.engine_pp, data=self.engine_dp)

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
    type: str
    """`built`, `pinned`... or `run_export` (another run's export)."""


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


def _not_divisible(policy: Parallelism) -> str:
    return (
        f"policy world {policy.world} = {policy.nodes} nodes x {policy.gpus_per_node} GPUs is not"
        f" divisible by the model-parallel size {policy.replica}; fix the role plan (preflight"
        " rule family `geometry`)"
    )


def geometry_of(launch: LaunchDocument) -> Geometry:
    trainer = launch.skyrl.trainer
    megatron = trainer.policy.megatron_config
    placement = trainer.placement
    policy = Parallelism(
        role="policy", strategy=trainer.strategy, nodes=placement.policy_num_nodes,
        gpus_per_node=placement.policy_num_gpus_per_node,
        tensor=megatron.tensor_model_parallel_size,
        pipeline=megatron.pipeline_model_parallel_size, context=megatron.context_parallel_size,
        expert=megatron.expert_model_parallel_size,
        expert_tensor=megatron.expert_tensor_parallel_size,
        sequence=trainer.policy.sequence_parallel_size,
    )
    if trainer.critic.model.path is not None:
        raise SmokeConfigError(
            "skyrl.trainer.critic.model.path is set: the smoke runtime has no critic role "
            "(it runs grpo and rloo); drop the critic model from the spec"
        )
    engine = launch.skyrl.generator.inference_engine
    geometry = Geometry(
        policy=policy,
        use_reference=trainer.algorithm.use_kl_loss or trainer.algorithm.use_kl_in_reward,
        ref_nodes=placement.ref_num_nodes,
        ref_gpus_per_node=placement.ref_num_gpus_per_node,
        colocate_all=placement.colocate_all,
        colocate_policy_ref=placement.colocate_policy_ref,
        num_engines=engine.num_engines,
        engine_tp=engine.tensor_parallel_size,
        engine_pp=engine.pipeline_parallel_size,
        engine_dp=engine.data_parallel_size,
    )
    if policy.data_parallel is None:
        raise SmokeConfigError(_not_divisible(policy))
    return geometry


def _input_dir(launch: LaunchDocument, slot: str) -> Path | None:
    entry = launch.inputs.get(slot)
    return None if entry is None else _local(entry.uri, f"inputs.{slot}.uri")


def _required_dir(launch: LaunchDocument, slot: str) -> Path:
    directory = _input_dir(launch, slot)
    if directory is None:
        raise SmokeConfigError(
            f"{launch.source}: inputs.{slot} is missing; the smoke runtime needs a {slot} "
            f"(set it in the spec and render the launch YAML again)"
        )
    return directory


def _inputs(launch: LaunchDocument) -> tuple[InputRef, ...]:
    return tuple(
        InputRef(slot=slot, identity=entry.identity, fingerprint=entry.fingerprint,
                 directory=_local(entry.uri, f"inputs.{slot}.uri"), type=entry.type)
        for slot, entry in launch.inputs.items()
    )


def load_config(launch: LaunchDocument) -> SmokeConfig:
    """The runtime's view of a launch document (typed and checked by `load_launch`)."""
    skyrl = launch.skyrl
    trainer = skyrl.trainer
    algorithm = trainer.algorithm
    optimizer = trainer.policy.optimizer_config
    generator = skyrl.generator
    env_class = skyrl.environment.env_class
    if env_class not in SMOKE_ENVIRONMENTS:
        raise SmokeConfigError(
            f"skyrl.environment.env_class is {env_class!r}; the smoke runtime has the task(s) "
            f"{', '.join(SMOKE_ENVIRONMENTS)}; set algorithm.environment in the spec"
        )
    if algorithm.advantage_estimator not in SMOKE_ESTIMATORS:
        raise SmokeConfigError(
            f"skyrl.trainer.algorithm.advantage_estimator is {algorithm.advantage_estimator!r}; "
            f"the smoke runtime runs {' and '.join(SMOKE_ESTIMATORS)}"
        )
    if generator.max_turns != 1:
        raise SmokeConfigError(
            f"skyrl.generator.max_turns is {generator.max_turns}; the smoke task is single-turn "
            f"(1)"
        )
    model_dir = _required_dir(launch, "model")
    reference = _input_dir(launch, "reference_model")
    artifacts = launch.artifacts
    wandb = launch.execution.wandb
    return SmokeConfig(
        source=launch.source,
        run_id=launch.run.id,
        run_name=launch.run.name,
        run_version=launch.run.version,
        seed=trainer.seed,
        fingerprint=launch.run.fingerprint,
        runtime_fingerprint=launch.runtime.fingerprint,
        compatible_runtimes=tuple(launch.resume.compatible_runtimes),
        resume_mode=trainer.resume_mode,
        resume_path=None if trainer.resume_path is None
        else _local(trainer.resume_path, "skyrl.trainer.resume_path"),
        checkpoint_root=_local(artifacts.checkpoint_root, "artifacts.checkpoint_root"),
        export_root=_local(artifacts.export_root, "artifacts.export_root"),
        attempts_root=_local(artifacts.attempts_root, "artifacts.attempts_root"),
        terminal_manifest=_local(artifacts.terminal_manifest, "artifacts.terminal_manifest"),
        inputs=_inputs(launch),
        model_dir=model_dir,
        tokenizer_dir=_required_dir(launch, "tokenizer"),
        reference_dir=reference if reference is not None else model_dir,
        train_dir=_required_dir(launch, "train_data"),
        eval_dir=_input_dir(launch, "eval_data"),
        geometry=geometry_of(launch),
        estimator=algorithm.advantage_estimator,
        use_kl_loss=algorithm.use_kl_loss,
        use_kl_in_reward=algorithm.use_kl_in_reward,
        kl_loss_coef=algorithm.kl_loss_coef,
        kl_estimator=algorithm.kl_estimator_type,
        eps_clip_low=algorithm.eps_clip_low,
        eps_clip_high=algorithm.eps_clip_high,
        grpo_norm_by_std=algorithm.grpo_norm_by_std,
        learning_rate=optimizer.lr,
        weight_decay=optimizer.weight_decay,
        adam_betas=(optimizer.adam_betas[0], optimizer.adam_betas[1]),
        max_grad_norm=optimizer.max_grad_norm,
        epochs=trainer.epochs,
        max_training_steps=trainer.max_training_steps,
        train_batch_size=trainer.train_batch_size,
        policy_mini_batch_size=trainer.policy_mini_batch_size,
        micro_train_batch_size_per_gpu=trainer.micro_train_batch_size_per_gpu,
        micro_forward_batch_size_per_gpu=trainer.micro_forward_batch_size_per_gpu,
        eval_batch_size=trainer.eval_batch_size,
        n_samples_per_prompt=generator.n_samples_per_prompt,
        max_prompt_length=trainer.max_prompt_length,
        max_generate_length=generator.sampling_params.max_generate_length,
        temperature=generator.sampling_params.temperature,
        ckpt_interval=trainer.ckpt_interval,
        max_ckpts_to_keep=trainer.max_ckpts_to_keep,
        hf_save_interval=trainer.hf_save_interval,
        logger=trainer.logger,
        project_name=trainer.project_name,
        wandb_entity=None if wandb is None else wandb.entity,
        num_sim_gpus=launch.execution.allocation.total_gpus,
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
