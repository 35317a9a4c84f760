"""Fields of `role_plan` and `rl_execution`.

A role plan has no silent defaults: every section is a dict whose keys must all be written
(`reference=None` and `critic=None` must be written too). The key names of `batch` and
`allocation` are the RunSpec's own (docs/spec-format.md); the role sections use the short names
of the parallelism literature (tp, pp, cp, ep, etp, sp, dp).
"""

from __future__ import annotations

from pants.engine.target import BoolField, StringSequenceField
from pants.util.strutil import help_text

from rlaunch_pants import validation as v
from rlaunch_pants.fields import (
    CheckedStringField,
    ChoiceField,
    Key,
    NonNegativeIntField,
    PositiveIntField,
    SchemaDictField,
    choice,
    dict_help,
)

# ---------------------------------------------------------------------------------------------
# role_plan

POLICY_KEYS = (
    Key("nodes", v.check_positive_int, "nodes the policy trains on"),
    Key("gpus_per_node", v.check_positive_int, "GPUs per node the policy uses"),
    Key("tp", v.check_positive_int, "Megatron tensor parallel size; 1 for FSDP"),
    Key("pp", v.check_positive_int, "Megatron pipeline parallel size; 1 for FSDP"),
    Key("cp", v.check_positive_int, "Megatron context parallel size; 1 for FSDP"),
    Key("ep", v.check_positive_int, "Megatron expert parallel size; 1 for dense models and FSDP"),
    Key("etp", v.check_positive_int, "Megatron expert tensor parallel size; 1 if unused"),
    Key("sp", v.check_positive_int, "FSDP (Ulysses) sequence parallel size; 1 for Megatron"),
)
AUX_ROLE_KEYS = (
    Key("colocated_with_policy", v.check_bool, "True: shares the policy's GPUs"),
    Key("nodes", v.check_positive_int, "nodes of the role (the policy's when colocated)"),
    Key("gpus_per_node", v.check_positive_int, "GPUs per node of the role"),
)
ROLLOUT_KEYS = (
    Key("engines", v.check_positive_int, "number of inference engines"),
    Key("tp", v.check_positive_int, "tensor parallel size per engine"),
    Key("pp", v.check_positive_int, "pipeline parallel size per engine"),
    Key("dp", v.check_positive_int, "data parallel size per engine"),
    Key("ep", v.check_positive_int, "expert parallel size per engine (spans DP x TP ranks)"),
    Key("backend", choice("vllm", "sglang"), "'vllm' or 'sglang'"),
    Key("weight_sync_backend", choice("nccl", "gloo"), "'nccl' or 'gloo'"),
)
BATCH_KEYS = (
    Key("train_batch_size", v.check_positive_int, "prompts per training step"),
    Key("policy_mini_batch_size", v.check_positive_int, "prompts per policy optimizer step"),
    Key(
        "critic_mini_batch_size",
        v.check_positive_int,
        "prompts per critic optimizer step; None without a critic",
        nullable=True,
    ),
    Key("micro_train_batch_size_per_gpu", v.check_positive_int, "sequences per fwd/bwd per GPU"),
    Key("micro_forward_batch_size_per_gpu", v.check_positive_int, "sequences per forward per GPU"),
    Key("n_samples_per_prompt", v.check_positive_int, "completions per prompt (GRPO group size)"),
    Key("eval_batch_size", v.check_positive_int, "prompts per evaluation batch"),
)


class RolePlanStrategyField(ChoiceField):
    alias = "strategy"
    required = True
    choices = ("fsdp", "megatron")
    help = help_text(
        """
        The policy's training strategy, `fsdp` or `megatron`. Megatron DP = world / (TP x PP x
        CP); FSDP DP = world / SP, where world = nodes x GPUs per node.

            strategy="fsdp"
        """
    )


class RolePlanPolicyField(SchemaDictField):
    alias = "policy"
    required = True
    schema = POLICY_KEYS
    help = dict_help(
        """
        Where and how the policy trains. Every key is required:
        """,
        POLICY_KEYS,
        """
            policy=dict(nodes=1, gpus_per_node=8, tp=1, pp=1, cp=1, ep=1, etp=1, sp=1)
        """,
    )


class RolePlanReferenceField(SchemaDictField):
    alias = "reference"
    required = True
    none_is_valid_value = True
    schema = AUX_ROLE_KEYS
    help = dict_help(
        """
        The reference model's role (needed for KL), or `None` without KL. Must be written
        either way: a role plan has no silent defaults. Keys:
        """,
        AUX_ROLE_KEYS,
        """
            reference=dict(colocated_with_policy=True, nodes=1, gpus_per_node=8)
        """,
    )


class RolePlanCriticField(SchemaDictField):
    alias = "critic"
    required = True
    none_is_valid_value = True
    schema = AUX_ROLE_KEYS
    help = dict_help(
        """
        The critic's role (needed by GAE), or `None` without a critic. Must be written either
        way. Keys as for `reference`:
        """,
        AUX_ROLE_KEYS,
        """
            critic=None  # or, for GAE:
            critic=dict(colocated_with_policy=True, nodes=1, gpus_per_node=8)
        """,
    )


class RolePlanRolloutField(SchemaDictField):
    alias = "rollout"
    required = True
    schema = ROLLOUT_KEYS
    help = dict_help(
        """
        The inference engines that generate rollouts. Rollout GPUs = engines x TP x PP x DP (EP
        is not a factor). Keys:
        """,
        ROLLOUT_KEYS,
        """
            rollout=dict(engines=8, tp=1, pp=1, dp=1, ep=1, backend="vllm",
                         weight_sync_backend="nccl")
        """,
    )


class RolePlanColocateAllField(BoolField):
    alias = "colocate_all"
    required = True
    help = help_text(
        """
        True: the policy (with reference and critic) and the rollout engines share the same
        GPUs, taking turns. False: the engines get GPUs of their own.

            colocate_all=True
        """
    )


class RolePlanColocatePolicyRefField(BoolField):
    alias = "colocate_policy_ref"
    required = True
    help = help_text(
        """
        True: the reference model shares the policy's GPUs.

            colocate_policy_ref=True
        """
    )


class RolePlanBatchField(SchemaDictField):
    alias = "batch"
    required = True
    schema = BATCH_KEYS
    help = dict_help(
        """
        Batch sizes. Keys (all required):
        """,
        BATCH_KEYS,
        """
            batch=dict(
                train_batch_size=256,
                policy_mini_batch_size=64,
                critic_mini_batch_size=None,
                micro_train_batch_size_per_gpu=4,
                micro_forward_batch_size_per_gpu=8,
                n_samples_per_prompt=8,
                eval_batch_size=512,
            )
        """,
    )


ROLE_PLAN_FIELDS = (
    RolePlanStrategyField,
    RolePlanPolicyField,
    RolePlanReferenceField,
    RolePlanCriticField,
    RolePlanRolloutField,
    RolePlanColocateAllField,
    RolePlanColocatePolicyRefField,
    RolePlanBatchField,
)

ROLE_PLAN_HELP = help_text(
    """
    Who runs on which GPUs, with which parallelism and batch sizes. Fully explicit: every
    section and every key must be written (`reference=None`, `critic=None` included).
    `./pants check` proves the geometry and batch arithmetic against the run's allocation and
    model facts.

        role_plan(
            name="colocated-1x8",
            strategy="fsdp",
            policy=dict(nodes=1, gpus_per_node=8, tp=1, pp=1, cp=1, ep=1, etp=1, sp=1),
            reference=dict(colocated_with_policy=True, nodes=1, gpus_per_node=8),
            critic=None,
            rollout=dict(engines=8, tp=1, pp=1, dp=1, ep=1, backend="vllm",
                         weight_sync_backend="nccl"),
            colocate_all=True,
            colocate_policy_ref=True,
            batch=dict(
                train_batch_size=256,
                policy_mini_batch_size=64,
                critic_mini_batch_size=None,
                micro_train_batch_size_per_gpu=4,
                micro_forward_batch_size_per_gpu=8,
                n_samples_per_prompt=8,
                eval_batch_size=512,
            ),
        )
    """
)

# ---------------------------------------------------------------------------------------------
# rl_execution

ALLOCATION_KEYS = (
    Key("num_nodes", v.check_positive_int, "nodes allocated"),
    Key("gpus_per_node", v.check_positive_int, "GPUs per node"),
    Key("accelerator", v.check_str, "'H100', 'A100-80GB', 'L4', ... or 'sim' (simulated GPUs)"),
    Key("cpus_per_node", v.check_positive_int, "CPUs per node"),
    Key("memory_gb_per_node", v.check_positive_int, "memory per node, GB"),
    Key("disk_gb_per_node", v.check_positive_int, "disk per node, GB"),
)


class ExecutionExecutorField(CheckedStringField):
    alias = "executor"
    required = True
    help = help_text(
        """
        The executor plugin that submits the launch YAML: `local` (a Ray head on this machine
        with simulated GPUs), `ray` (an existing cluster at `address`), `iris` (`cluster`) or
        `dry-run`; third-party ones register the entry point group `rlaunch.executors`.

            executor="ray"
        """
    )


class ExecutionAddressField(CheckedStringField):
    alias = "address"
    help = help_text(
        """
        The Ray Jobs API address for the `ray` executor, e.g. `http://10.0.0.5:8265`.

            address="http://ray-head.rl.internal:8265"
        """
    )


class ExecutionClusterField(CheckedStringField):
    alias = "cluster"
    help = help_text(
        """
        The cluster name for the `iris` executor.

            executor="iris",
            cluster="h100-west",
        """
    )


class ExecutionAllocationField(SchemaDictField):
    alias = "allocation"
    required = True
    schema = ALLOCATION_KEYS
    help = dict_help(
        """
        What the run is given. The roles must use exactly num_nodes x gpus_per_node GPUs, in
        whole nodes. Keys (all required):
        """,
        ALLOCATION_KEYS,
        """
            allocation=dict(num_nodes=1, gpus_per_node=8, accelerator="H100",
                            cpus_per_node=96, memory_gb_per_node=1024, disk_gb_per_node=2000)
        """,
    )


class ExecutionPriorityField(ChoiceField):
    alias = "priority"
    default = "normal"
    choices = ("low", "normal", "high")
    help = help_text(
        """
        Scheduling priority: `low`, `normal` (default) or `high`.

            priority="high"
        """
    )


class ExecutionMaxRetriesField(NonNegativeIntField):
    alias = "max_retries"
    default = 0
    help = help_text(
        """
        How many times a failed job is resubmitted (default 0).

            max_retries=1
        """
    )


class ExecutionTimeoutMinutesField(PositiveIntField):
    alias = "timeout_minutes"
    required = True
    help = help_text(
        """
        Wall-clock limit of the job, in minutes.

            timeout_minutes=1440
        """
    )


class ExecutionCredentialsField(StringSequenceField):
    alias = "credentials"
    default = ()
    help = help_text(
        """
        Names (never values) of environment variables forwarded to the job, e.g.
        `["WANDB_API_KEY", "HF_TOKEN"]`. Their presence is checked at launch time.

            credentials=["WANDB_API_KEY", "HF_TOKEN"]
        """
    )


class ExecutionWandbEntityField(CheckedStringField):
    alias = "wandb_entity"
    help = help_text(
        """
        The W&B entity (team or user) to log to; set with `wandb_project`.

            wandb_entity="rl-posttraining"
        """
    )


class ExecutionWandbProjectField(CheckedStringField):
    alias = "wandb_project"
    help = help_text(
        """
        The W&B project to log to; set with `wandb_entity`.

            wandb_project="gsm8k-grpo"
        """
    )


class ExecutionStorePrefixField(CheckedStringField):
    alias = "store_prefix"
    help = help_text(
        """
        The artifact store the job reads inputs from and writes checkpoints to
        (`gs://bucket/rlaunch`, `s3://...`); unset: the local default store.

            store_prefix="gs://rl-posttraining-store/rlaunch"
        """
    )


EXECUTION_FIELDS = (
    ExecutionExecutorField,
    ExecutionAddressField,
    ExecutionClusterField,
    ExecutionAllocationField,
    ExecutionPriorityField,
    ExecutionMaxRetriesField,
    ExecutionTimeoutMinutesField,
    ExecutionCredentialsField,
    ExecutionWandbEntityField,
    ExecutionWandbProjectField,
    ExecutionStorePrefixField,
)

EXECUTION_HELP = help_text(
    """
    Where a run executes: executor, cluster, allocation, priority, retries, credentials by
    name, W&B identity. Of all this only the allocation is part of the run's fingerprint.

        rl_execution(
            name="h100-1x8",
            executor="ray",
            address="http://127.0.0.1:8265",
            allocation=dict(num_nodes=1, gpus_per_node=8, accelerator="H100",
                            cpus_per_node=96, memory_gb_per_node=1024, disk_gb_per_node=2000),
            timeout_minutes=1440,
            credentials=["WANDB_API_KEY"],
            wandb_entity="my-team",
            wandb_project="gsm8k-grpo",
        )
    """
)
