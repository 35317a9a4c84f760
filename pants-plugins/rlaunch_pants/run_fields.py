"""Fields of `rl_run`: the run's identity, its references to the other targets (all of them
dependencies), and one field per other key of the RunSpec (seed, lengths, algorithm, logger,
checkpoint, resume, and whatever the library's model adds), made from the library's schema
(schema.json): every key without a default in the model must be written.
"""

from __future__ import annotations

from pants.engine.target import Dependencies
from pants.util.strutil import help_text

from rlaunch_pants import schema
from rlaunch_pants.settings_fields import RlRunSkyrlSettingsField, SkyrlSettingsField
from rlaunch_pants.fields import CheckedStringField, TargetReferenceField, VersionField
from rlaunch_pants.schema_fields import section_fields

ARTIFACT_TYPES = ("hf_model", "hf_dataset", "adopted_artifact", "built_artifact")
# A model slot may also name another run: its export is the input (a pipeline stage).
MODEL_TYPES = (*ARTIFACT_TYPES, "rl_run")

# Keys of the run written by hand below: its identity (the target's name by default; a pinned
# version pattern) and its settings (checked against SkyRL's catalog).
RUN_OWN_KEYS = ("name", "version", "settings")
# Keys the plugin resolves: the format version, the artifacts and sections held by other targets
# (by address), and a smoke run's full run.
RUN_RESOLVED_KEYS = (
    "schema_version",
    *schema.ARTIFACT_SLOTS,
    *(section for section in schema.TARGETS.values() if section and "." not in section),
    "smoke_of",
)
RUN_KEY_FIELD = section_fields("", skip=(*RUN_OWN_KEYS, *RUN_RESOLVED_KEYS), prefix="RlRun")


class RlRunNameField(CheckedStringField):
    alias = "run_name"
    help = help_text(
        """
        The run's name; with `version` its identity `name@version`, from which its checkpoint
        root `{store}/{name}/{version}/checkpoints` derives. Unset: the target's name.

            run_name="gsm8k-grpo-qwen2.5-1.5b"
        """
    )


class RlRunVersionField(VersionField):
    alias = "version"
    required = True
    help = help_text(
        """
        The run's version: `YYYY.MM.DD[.N]` (a real date; immutable once launched, and it needs
        a recorded successful smoke of the same geometry and runtime) or `dev` / `<label>-dev`
        (mutable).

            version="2026.11.29"  # or "dev", "sweep-dev"
        """
    )


class _ArtifactReference(TargetReferenceField):
    expected_types = ARTIFACT_TYPES


class _ModelReference(TargetReferenceField):
    expected_types = MODEL_TYPES


class RlRunModelField(_ModelReference):
    alias = "model"
    required = True
    help = help_text(
        """
        Address of the policy's initial model (an artifact target of kind model), or of another
        `rl_run`: its export (`{store}/{run}/{version}/export/`, identity `run@version`). Then
        `./pants run` of this run launches that run first unless it finished.

            model="experiments/models/qwen2.5-1.5b-instruct"
            model=":grpo-stage1"   # a second stage, from the first one's export
        """
    )


class RlRunTokenizerField(_ArtifactReference):
    alias = "tokenizer"
    required = True
    help = help_text(
        """
        Address of the tokenizer: the model target itself for a Hugging Face model that ships
        its tokenizer, or a tokenizer artifact.

            tokenizer="experiments/models/qwen2.5-1.5b-instruct"
        """
    )


class RlRunReferenceModelField(_ModelReference):
    alias = "reference_model"
    help = help_text(
        """
        Address of a separate reference model (an artifact of kind model, or an `rl_run`: its
        export); unset: the reference is the initial policy.

            # KL to the Instruct model while the policy starts from the base one
            model="experiments/models/qwen2.5-1.5b",
            reference_model="experiments/models/qwen2.5-1.5b-instruct",
        """
    )


class RlRunCriticModelField(_ModelReference):
    alias = "critic_model"
    help = help_text(
        """
        Address of the critic's initial model (GAE; an artifact of kind model, or an `rl_run`:
        its export); unset: no critic.

            critic_model="experiments/models/qwen2.5-1.5b-instruct"
        """
    )


class RlRunTrainDataField(_ArtifactReference):
    alias = "train_data"
    required = True
    help = help_text(
        """
        Address of the training dataset.

            train_data="experiments/datasets:gsm8k-train"
        """
    )


class RlRunEvalDataField(_ArtifactReference):
    alias = "eval_data"
    help = help_text(
        """
        Address of the evaluation dataset; unset: no evaluation.

            eval_data="experiments/datasets:gsm8k-test"
        """
    )


class RlRunEnvironmentDataField(_ArtifactReference):
    alias = "environment_data"
    help = help_text(
        """
        Address of the data the task environment reads (an artifact of kind dataset: a folder
        of SQL databases, a search index), staged onto every node like any input; the launcher
        gives its staged folder to the SkyRL setting named by `environment_data_setting`.
        Unset: none.

            environment_data="experiments/datasets:skyrl-sql-dbs",
            environment_data_setting="environment.skyrl_gym.text2sql.db_path",
        """
    )


class RlRunRuntimeField(TargetReferenceField):
    alias = "runtime"
    required = True
    expected_types = ("rl_runtime",)
    help = help_text(
        """
        Address of the `rl_runtime` target the run is launched on.

            runtime="experiments/runtimes:skyrl-0.3.0"
        """
    )


class RlRunRolePlanField(TargetReferenceField):
    alias = "role_plan"
    required = True
    expected_types = ("role_plan",)
    help = help_text(
        """
        Address of the run's `role_plan` target.

            role_plan=":colocated-1x8"  # a role_plan in the same BUILD file
        """
    )


class RlRunExecutionField(TargetReferenceField):
    alias = "execution"
    required = True
    expected_types = ("rl_execution",)
    help = help_text(
        """
        Address of the `rl_execution` target: where the run executes.

            execution=":h100-1x8"
        """
    )


class RlRunSmokeOfField(TargetReferenceField):
    alias = "smoke_of"
    expected_types = ("rl_run",)
    help = help_text(
        """
        Address of the full `rl_run` this run is the smoke test of. `check` proves the smoke
        shares the full run's strategy, role geometry, handoff kinds and runtime pin; launching
        a calendar-versioned full run needs a recorded successful smoke.

            smoke_of=":grpo"  # on the smoke rl_run, version="dev"
        """
    )


class RlRunDependenciesField(Dependencies):
    help = help_text(
        """
        Extra dependencies. Every address field of the run (model, tokenizer, data, runtime,
        role_plan, execution, smoke_of, ...) is a dependency already.

            dependencies=[":notes"]  # e.g. a files() target with the notes
        """
    )


RUN_REFERENCE_FIELDS = (
    RlRunModelField,
    RlRunTokenizerField,
    RlRunReferenceModelField,
    RlRunCriticModelField,
    RlRunTrainDataField,
    RlRunEvalDataField,
    RlRunEnvironmentDataField,
    RlRunRuntimeField,
    RlRunRolePlanField,
    RlRunExecutionField,
    RlRunSmokeOfField,
    RlRunSkyrlSettingsField,
)

RUN_FIELDS = (
    RlRunNameField,
    RlRunVersionField,
    *RUN_REFERENCE_FIELDS,
    *RUN_KEY_FIELD.values(),
    SkyrlSettingsField,
    RlRunDependenciesField,
)

WORLD_RULES_HELP = "\n".join(f"    {code}: {summary}" for code, summary in schema.WORLD_RULES)
"""The world rules, which `./pants check` does not run (they run at launch), one a line."""

RUN_HELP = help_text(
    """
    One RL post-training run: its artifacts, runtime, role plan and execution by address, plus
    the algorithm, lengths, checkpoint and resume policy (the RunSpec's keys, key for key), and
    extra SkyRL settings by their dotted names (`settings`, over a shared `skyrl_settings`).

    `./pants check` preflights it (geometry, batch arithmetic, context, pins, versions, paths,
    runtime, smoke geometry): the checks that depend only on the targets, so their result is
    cached. The world-dependent ones are not run by `check`: they run uncached at launch time,
    by `./pants run`. `./pants package` writes `dist/<dir>/<target>/launch.yaml`; `./pants run`
    preflights again, writes it and submits it through the executor (`./pants run <target> --
    --dry-run` submits nothing). The world rules:

    {world_rules}

        rl_run(
            name="grpo",
            run_name="gsm8k-grpo-qwen2.5-1.5b",
            version="2026.11.29",
            seed=42,
            model="experiments/models/qwen2.5-1.5b-instruct",
            tokenizer="experiments/models/qwen2.5-1.5b-instruct",
            train_data="experiments/datasets:gsm8k-train",
            eval_data="experiments/datasets:gsm8k-test",
            runtime="experiments/runtimes:skyrl-0.3.0",
            role_plan=":colocated-1x8",
            execution=":h100-1x8",
            lengths=dict(max_prompt_length=512, max_generate_length=1024,
                         max_input_length=512, max_turns=1),
            algorithm=dict(
                advantage_estimator="grpo",
                kl=dict(use_kl_loss=True, use_kl_in_reward=False, kl_loss_coef=0.001,
                        kl_estimator_type="k3"),
                learning_rate=1e-6, epochs=1, max_training_steps=None, temperature=1.0,
                clip_ratio=0.2, fully_async=False, environment="gsm8k",
            ),
            logger="wandb",
            checkpoint=dict(ckpt_interval=10, max_ckpts_to_keep=2, hf_save_interval=-1,
                            export_final=True),
            resume=dict(mode="latest", path=None, compatible_runtimes=[]),
            settings={"generator.inference_engine.gpu_memory_utilization": 0.85},
        )
    """
).replace("{world_rules}", WORLD_RULES_HELP)
