"""The SkyRL mapping, written once: which RunSpec field decides which SkyRL config name, how the
value is computed, and in which SkyRL releases.

Each `Row` is (RunSpec path, SkyRL dotted name, value function, releases). Everything that knows
the mapping derives from `ROWS`:
- rendering (`rlaunch.render.skyrl`) writes each row with a value function into the `skyrl`
  subtree, in the table's order;
- `plan_owned` (`rlaunch.spec.settings.PLAN_OWNED`) is every row: a run's `settings` may not
  repeat a name the plan decides, and the message names the field to set instead;
- `data_slots` (preflight ART008) are the rows of SkyRL's `data` section.

A row without a value function is decided by the plan but left to SkyRL's default (SkyRL derives
it from what is written, or the plan has no other meaning for it). A role-plan field that no row
renders is in `NOT_RENDERED` with the reason; tests/spec/test_skyrl_mapping.py fails for a field in
neither.

Releases: a row applies to the SkyRL releases in its `releases` (every release in
`SKYRL_RELEASES` unless it says otherwise). A name that differs between releases is two rows,
each naming its releases.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlaunch.spec.parallelism import ParallelSizes
    from rlaunch.spec.roleplan import AuxRole, PolicyRole
    from rlaunch.spec.run import CheckpointPolicy, RunSpec

SKYRL_RELEASES: tuple[str, ...] = ("0.3.0", "0.4.0")
"""The SkyRL releases the table knows, oldest first."""
SKYRL_RELEASE = "0.3.0"
"""The release the `skyrl` subtree is written for when the run pins none the catalog knows (the
smoke runtime reads 0.3.0's names); a SkyRL run's subtree is written for its pinned release
(`RunSpec.skyrl_release`). 0.4.0 renamed and removed no field the table writes (its generated
catalog, src/rlaunch/spec/skyrl_fields_0_4_0.py, has every 0.3.0 name), so every row applies to
both."""


@dataclass(frozen=True)
class RenderInputs:
    """What a value function reads: the spec and the launch document's own sections, so every
    path it writes is the one written there."""

    spec: RunSpec
    inputs: Mapping[str, Any]
    """The document's `inputs` section (slot -> entry with its `uri`)."""
    artifacts: Mapping[str, Any]
    """The document's `artifacts` section (the run's derived roots)."""
    data_paths: Mapping[str, str]
    """Data slot -> the prompt file SkyRL reads (the renderer knows the builders' files)."""


Value = Callable[[RenderInputs], Any]


@dataclass(frozen=True)
class Row:
    path: str
    """The RunSpec field that decides the SkyRL name (`role_plan.batch.train_batch_size`), or
    the words for it (`name and version`): what a message tells the user to set instead."""
    skyrl: str
    """SkyRL's dotted config name (`trainer.train_batch_size`)."""
    value: Value | None
    """The rendered value; None: the plan decides it, but nothing is written (SkyRL's default
    applies)."""
    note: str = ""
    """How the field decides it, when that is not plain (shown after the path)."""
    releases: tuple[str, ...] = field(default=SKYRL_RELEASES)
    """The SkyRL releases this row applies to."""
    how: str = ""
    """What a computed value is, in words (docs/launch-yaml.md shows it); empty: the field's
    value as written."""

    @property
    def owner(self) -> str:
        """The path with its note: what `PLAN_OWNED` says to set instead."""
        return f"{self.path} ({self.note})" if self.note else self.path

    def applies_to(self, release: str) -> bool:
        return release in self.releases


def _read(path: str) -> Value:
    """The value at a dotted RunSpec path, as written."""
    getter = operator.attrgetter(path)
    return lambda source: getter(source.spec)


def plan(path: str, skyrl: str, value: Value | None = None, *, how: str = "", note: str = "",
         releases: tuple[str, ...] = SKYRL_RELEASES) -> Row:
    """A rendered row; its value is the field at `path` unless a function computes it (and
    `how` says what it is)."""
    return Row(path, skyrl, value if value is not None else _read(path), note, releases, how)


def kept(path: str, skyrl: str, note: str = "", *, how: str = "",
         releases: tuple[str, ...] = SKYRL_RELEASES) -> Row:
    """A row the plan decides without writing it (SkyRL's default applies)."""
    return Row(path, skyrl, None, note, releases, how)


# -- value functions --------------------------------------------------------------------------


def _aux_or_policy(role: AuxRole | None, policy: PolicyRole) -> AuxRole | PolicyRole:
    """A role the plan leaves out takes the policy's footprint: SkyRL keeps integers there it
    never acts upon (no reference without KL, no critic without `critic.model.path`)."""
    return policy if role is None else role


def _reference_sizes(source: RenderInputs) -> ParallelSizes:
    """The reference's own parallel sizes (SkyRL builds it from `trainer.ref`); an absent
    reference mirrors the policy's."""
    plan_ = source.spec.role_plan
    return plan_.reference if plan_.reference is not None else plan_.policy


def _reference(name: str) -> Value:
    return lambda source: getattr(_reference_sizes(source), name)


def _footprint(role: str, name: str) -> Value:
    def value(source: RenderInputs) -> int:
        plan_ = source.spec.role_plan
        return getattr(_aux_or_policy(getattr(plan_, role), plan_.policy), name)
    return value


def _uri(slot: str, fallback: str | None = None) -> Value:
    def value(source: RenderInputs) -> str | None:
        if slot in source.inputs:
            return source.inputs[slot]["uri"]
        return source.inputs[fallback]["uri"] if fallback is not None else None
    return value


def _artifact_root(name: str) -> Value:
    return lambda source: source.artifacts[name]


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


def _critic_mini_batch(source: RenderInputs) -> int:
    # SkyRL types this as an int and reads it only when a critic model is set.
    batch = source.spec.role_plan.batch
    if batch.critic_mini_batch_size is not None:
        return batch.critic_mini_batch_size
    return batch.policy_mini_batch_size


def _project_name(source: RenderInputs) -> str:
    wandb = source.spec.execution.wandb
    return wandb.project if wandb is not None else source.spec.name


def _wandb_tags(source: RenderInputs) -> list[str]:
    """`trainer.tags`, which SkyRL 0.3.0's `Tracking` passes to `wandb.init(tags=...)`
    (`skyrl/train/utils/tracking.py`): the run, its version, the runtime pin, and the full run
    a smoke stands for."""
    spec = source.spec
    runtime = spec.runtime
    pin = runtime.package or (f"{runtime.git.repo}@{runtime.git.commit[:12]}"
                              if runtime.git is not None else runtime.name)
    tags = [f"run:{spec.name}", f"version:{spec.version}", f"runtime:{pin}"]
    if spec.smoke_of is not None:
        tags.append(f"smoke_of:{spec.smoke_of.name}@{spec.smoke_of.version}")
    return tags


def _eval_data(source: RenderInputs) -> list[str]:
    path = source.data_paths.get("eval_data")
    return [] if path is None else [path]


# -- the table ----------------------------------------------------------------------------------

_POLICY = "role_plan.policy"
_REFERENCE = "role_plan.reference"
_ROLLOUT = "role_plan.rollout"
_BATCH = "role_plan.batch"
_MEGATRON = (  # RunSpec name -> SkyRL megatron_config name
    ("tensor_parallel_size", "tensor_model_parallel_size"),
    ("pipeline_parallel_size", "pipeline_model_parallel_size"),
    ("context_parallel_size", "context_parallel_size"),
    ("expert_parallel_size", "expert_model_parallel_size"),
    ("expert_tensor_parallel_size", "expert_tensor_parallel_size"),
)
_IDENTITY = "name and version"
_PLACES_ENGINES = "the plan places the engines"
_DATA_FILE = ("`[uri/prompts.parquet]`: the runtime-format file of a `prompt_parquet` artifact "
              "(`train.parquet`/`eval.parquet` of a `countdown_data` one; SkyRL's PromptDataset "
              "reads a path ending `.parquet`/`.json`/`.jsonl` and takes anything else for a Hub "
              "dataset name); the folder `uri` for data of another builder")
_FOOTPRINT = "the role's own, or the policy's for a role the plan leaves out (1)"
_REFERENCE_SIZE = "the reference's own, or the policy's without a reference (2)"

ROWS: tuple[Row, ...] = (
    plan("train_data", "data.train_data", lambda source: [source.data_paths["train_data"]],
         how=_DATA_FILE),
    plan("eval_data", "data.val_data", _eval_data, how=f"{_DATA_FILE}; `[]` without eval_data"),
    plan("role_plan.placement.colocate_all", "trainer.placement.colocate_all"),
    plan("role_plan.placement.colocate_policy_ref", "trainer.placement.colocate_policy_ref"),
    plan(f"{_POLICY}.num_nodes", "trainer.placement.policy_num_nodes"),
    plan(f"{_POLICY}.num_gpus_per_node", "trainer.placement.policy_num_gpus_per_node"),
    plan("role_plan.critic.num_nodes", "trainer.placement.critic_num_nodes",
         _footprint("critic", "num_nodes"), how=_FOOTPRINT),
    plan("role_plan.critic.num_gpus_per_node", "trainer.placement.critic_num_gpus_per_node",
         _footprint("critic", "num_gpus_per_node"), how=_FOOTPRINT),
    plan(f"{_REFERENCE}.num_nodes", "trainer.placement.ref_num_nodes",
         _footprint("reference", "num_nodes"), how=_FOOTPRINT),
    plan(f"{_REFERENCE}.num_gpus_per_node", "trainer.placement.ref_num_gpus_per_node",
         _footprint("reference", "num_gpus_per_node"), how=_FOOTPRINT),
    plan("role_plan.strategy", "trainer.strategy"),
    plan("model", "trainer.policy.model.path", _uri("model"), how="`inputs.model.uri`"),
    plan("algorithm.learning_rate", "trainer.policy.optimizer_config.lr"),
    plan(f"{_POLICY}.sequence_parallel_size", "trainer.policy.sequence_parallel_size"),
    *(plan(f"{_POLICY}.{name}", f"trainer.policy.megatron_config.{skyrl}")
      for name, skyrl in _MEGATRON),
    kept(_POLICY, "trainer.policy.fsdp_config.fsdp_size", "FSDP shards over the role's world"),
    plan("reference_model", "trainer.ref.model.path", _uri("reference_model", "model"),
         how="`inputs.reference_model.uri`, else `inputs.model.uri`"),
    plan(f"{_REFERENCE}.sequence_parallel_size", "trainer.ref.sequence_parallel_size",
         _reference("sequence_parallel_size"), how=_REFERENCE_SIZE),
    *(plan(f"{_REFERENCE}.{name}", f"trainer.ref.megatron_config.{skyrl}", _reference(name),
           how=_REFERENCE_SIZE)
      for name, skyrl in _MEGATRON),
    kept(_REFERENCE, "trainer.ref.fsdp_config.fsdp_size", "FSDP shards over the role's world"),
    plan("critic_model", "trainer.critic.model.path", _uri("critic_model"),
         how="`inputs.critic_model.uri`, or `null`"),
    plan(f"{_POLICY}.sequence_parallel_size", "trainer.critic.sequence_parallel_size",
         note="the critic runs the policy's"),
    kept("role_plan.critic", "trainer.critic.fsdp_config.fsdp_size",
         "FSDP shards over the role's world"),
    plan("algorithm.advantage_estimator", "trainer.algorithm.advantage_estimator"),
    plan("algorithm.kl.use_kl_loss", "trainer.algorithm.use_kl_loss"),
    plan("algorithm.kl.use_kl_in_reward", "trainer.algorithm.use_kl_in_reward"),
    plan("algorithm.kl.kl_loss_coef", "trainer.algorithm.kl_loss_coef"),
    plan("algorithm.kl.kl_estimator_type", "trainer.algorithm.kl_estimator_type"),
    plan("algorithm.clip_ratio", "trainer.algorithm.eps_clip_low"),
    plan("algorithm.clip_ratio", "trainer.algorithm.eps_clip_high"),
    kept("algorithm.temperature", "trainer.algorithm.temperature",
         how="not written: SkyRL copies `generator.sampling_params.temperature` here"),
    plan("algorithm.fully_async", "trainer.fully_async.enabled"),
    plan("seed", "trainer.seed"),
    plan("resume.mode", "trainer.resume_mode"),
    plan("resume.path", "trainer.resume_path"),
    plan(_IDENTITY, "trainer.ckpt_path", _artifact_root("checkpoint_root"),
         how="`artifacts.checkpoint_root`", note="the checkpoint root derives from the identity"),
    plan("checkpoint.max_ckpts_to_keep", "trainer.max_ckpts_to_keep"),
    plan("checkpoint.ckpt_interval", "trainer.ckpt_interval"),
    plan("checkpoint.hf_save_interval", "trainer.hf_save_interval",
         lambda source: hf_save_interval(source.spec.checkpoint),
         how=f"as written, but `{FINAL_EXPORT_INTERVAL}` for -1 with `export_final` (4)"),
    plan(_IDENTITY, "trainer.export_path", _artifact_root("export_root"),
         how="`artifacts.export_root`", note="the export root derives from the identity"),
    plan("algorithm.epochs", "trainer.epochs"),
    plan("algorithm.max_training_steps", "trainer.max_training_steps"),
    plan(f"{_BATCH}.train_batch_size", "trainer.train_batch_size"),
    plan(f"{_BATCH}.policy_mini_batch_size", "trainer.policy_mini_batch_size"),
    plan(f"{_BATCH}.critic_mini_batch_size", "trainer.critic_mini_batch_size",
         _critic_mini_batch, how="as written, or `policy_mini_batch_size` without a critic (3)"),
    plan(f"{_BATCH}.micro_train_batch_size_per_gpu", "trainer.micro_train_batch_size_per_gpu"),
    plan(f"{_BATCH}.micro_forward_batch_size_per_gpu",
         "trainer.micro_forward_batch_size_per_gpu"),
    plan(f"{_BATCH}.eval_batch_size", "trainer.eval_batch_size"),
    plan("lengths.max_prompt_length", "trainer.max_prompt_length"),
    plan("execution.wandb.project", "trainer.project_name", _project_name,
         how="as written, else `name`"),
    plan(_IDENTITY, "trainer.run_name", lambda source: source.spec.identity,
         how="`name@version`", note="the run's identity"),
    plan(_IDENTITY, "trainer.tags", _wandb_tags,
         how="`run:<name>`, `version:<v>`, `runtime:<pin>`, `smoke_of:<name@version>` (SkyRL "
             "passes them to `wandb.init`; the W&B entity reaches every SkyRL process as "
             "`WANDB_ENTITY` through the adapter's worker setup hook, see "
             "docs/skyrl-runtime.md)",
         note="the tags name the run, version and runtime"),
    plan("logger", "trainer.logger"),
    plan(_IDENTITY, "trainer.log_path", _artifact_root("attempts_root"),
         how="`artifacts.attempts_root` (SkyRL writes it with pathlib: the adapter points it at "
             "a node-local folder and moves the logs to `attempts/<id>/skyrl-logs/`, see "
             "docs/skyrl-runtime.md)",
         note="the attempts root derives from the identity"),
    plan(f"{_ROLLOUT}.num_engines", "generator.inference_engine.num_engines"),
    plan(f"{_ROLLOUT}.backend", "generator.inference_engine.backend"),
    plan(f"{_ROLLOUT}.weight_sync_backend", "generator.inference_engine.weight_sync_backend"),
    plan(f"{_ROLLOUT}.tensor_parallel_size", "generator.inference_engine.tensor_parallel_size"),
    plan(f"{_ROLLOUT}.pipeline_parallel_size",
         "generator.inference_engine.pipeline_parallel_size"),
    plan(f"{_ROLLOUT}.data_parallel_size", "generator.inference_engine.data_parallel_size"),
    plan(f"{_ROLLOUT}.expert_parallel_size", "generator.inference_engine.expert_parallel_size"),
    kept(_ROLLOUT, "generator.inference_engine.run_engines_locally", _PLACES_ENGINES),
    kept(_ROLLOUT, "generator.inference_engine.external_proxy_url", _PLACES_ENGINES),
    kept(_ROLLOUT, "generator.inference_engine.external_server_urls", _PLACES_ENGINES),
    plan(f"{_BATCH}.n_samples_per_prompt", "generator.n_samples_per_prompt"),
    plan("lengths.max_turns", "generator.max_turns"),
    plan("lengths.max_input_length", "generator.max_input_length"),
    plan("lengths.max_generate_length", "generator.sampling_params.max_generate_length"),
    plan("algorithm.temperature", "generator.sampling_params.temperature"),
    plan("algorithm.environment", "environment.env_class"),
)

NOT_RENDERED: Mapping[str, str] = MappingProxyType({
    "role_plan.reference.colocated_with_policy": (
        "SkyRL reads colocation from trainer.placement (colocate_all, colocate_policy_ref); "
        "GEO011 proves this field agrees with them"
    ),
    "role_plan.critic.colocated_with_policy": (
        "SkyRL shares the policy's GPUs with the critic exactly under "
        "trainer.placement.colocate_all; GEO013 proves this field agrees with it"
    ),
})
"""Role-plan fields no row renders, with the reason."""


def rows(release: str = SKYRL_RELEASE) -> tuple[Row, ...]:
    """The rows that apply to a SkyRL release, in the table's (the subtree's) order."""
    return tuple(row for row in ROWS if row.applies_to(release))


def plan_owned(release: str = SKYRL_RELEASE) -> Mapping[str, str]:
    """SkyRL name -> what to set instead, for every name the plan decides in a release."""
    return MappingProxyType({row.skyrl: row.owner for row in rows(release)})


def data_slots(release: str = SKYRL_RELEASE) -> Mapping[str, str]:
    """The run's data slots -> the SkyRL setting each renders into (SkyRL's `data` section)."""
    return MappingProxyType({row.path: row.skyrl for row in rows(release)
                             if row.skyrl.startswith("data.")})


def markdown_table(release: str = SKYRL_RELEASE) -> str:
    """The table as docs/launch-yaml.md shows it (scripts/gen-docs writes it there)."""
    lines = ["| `skyrl` | RunSpec | value |", "|---|---|---|"]
    for row in rows(release):
        path = row.path if " " in row.path else f"`{row.path}`"
        owner = f"{path} ({row.note})" if row.note else path
        how = row.how or ("as written" if row.value is not None
                          else "not written (SkyRL's default)")
        only = ("" if row.releases == SKYRL_RELEASES
                else f" (SkyRL {', '.join(row.releases)} only)")
        lines.append(f"| `{row.skyrl}` | {owner} | {how}{only} |")
    return "\n".join(lines) + "\n"
