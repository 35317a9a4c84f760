"""Fields of `role_plan` and `rl_execution`.

Their names and keys are the RunSpec's own (`role_plan.policy.tensor_parallel_size` in a finding
is `policy=dict(tensor_parallel_size=...)` in the BUILD file), read from the library's schema
(schema.json): the `role_plan` fields are made from it, one per section of the RunSpec's role
plan, so a key or section added to the library's model needs no edit here. A role plan has no
silent defaults: every section and every key must be written (`reference=None` too).
"""

from __future__ import annotations

import textwrap
from typing import Any

from pants.engine.target import BoolField, Field, StringSequenceField
from pants.util.strutil import help_text, softwrap

from rlaunch_pants import schema
from rlaunch_pants import validation as v
from rlaunch_pants.fields import (
    CheckedIntField,
    CheckedStringField,
    ChoiceField,
    NonNegativeIntField,
    PositiveIntField,
    SchemaDictField,
    dict_help,
    schema_keys,
)

# ---------------------------------------------------------------------------------------------
# role_plan: one field per section of the RunSpec's role plan.


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _section_help(path: str, item: dict[str, Any]) -> str:
    name = path.rsplit(".", 1)[-1]
    intro = schema.doc(path)
    if item["nullable"]:
        intro += f" Must be written either way (`{name}=None` says there is none)."
    if item["type"] == "dict":
        keys = schema_keys(path)
        example = f"{name}=dict(" + ", ".join(f"{key.name}=..." for key in keys) + ")"
        return dict_help(intro + " Keys (all required):", keys, _wrapped(example))
    if item["type"] == "choice":
        choices = schema.choices(path)
        return "\n\n".join(
            (softwrap(intro), "One of: " + ", ".join(choices), f"    {name}={choices[0]!r}")
        )
    return softwrap(intro) + f"\n\n    {name}=..."


def _wrapped(example: str) -> str:
    """A long one-line BUILD example, wrapped after commas into indented lines."""
    return "\n".join(textwrap.wrap(example, 88, subsequent_indent="    "))


def section_field(path: str) -> type[Field]:
    """The BUILD field of the RunSpec section at `path`, e.g. `role_plan.policy`."""
    item = schema.entry(path)
    name = path.rsplit(".", 1)[-1]
    attrs: dict[str, Any] = {
        "alias": name,
        "required": True,
        "none_is_valid_value": item["nullable"],
        "help": _section_help(path, item),
        "__module__": __name__,
    }
    kind = item["type"]
    if kind == "dict":
        attrs["schema"] = schema_keys(path)
        base: type[Field] = SchemaDictField
    elif kind == "choice":
        attrs["choices"] = schema.choices(path)
        base = ChoiceField
    elif kind == "bool":
        base = BoolField
    elif kind == "int":
        attrs["check"] = staticmethod(v.check_int)
        base = CheckedIntField
    else:
        base = CheckedStringField
    return type(f"RolePlan{_camel(name)}Field", (base,), attrs)


ROLE_PLAN_SECTIONS = tuple(schema.section_keys("role_plan"))
ROLE_PLAN_FIELDS = tuple(section_field(f"role_plan.{name}") for name in ROLE_PLAN_SECTIONS)
ROLE_PLAN_FIELD = dict(zip(ROLE_PLAN_SECTIONS, ROLE_PLAN_FIELDS))

ROLE_PLAN_HELP = help_text(
    """
    Who runs on which GPUs, with which parallelism and batch sizes: the RunSpec's `role_plan`,
    key for key. Fully explicit: every section and every key must be written
    (`reference=None`, `critic=None` included). `./pants check` proves the geometry and batch
    arithmetic against the run's allocation and model facts.

        role_plan(
            name="colocated-1x8",
            strategy="fsdp",
            policy=dict(num_nodes=1, num_gpus_per_node=8, tensor_parallel_size=1,
                        pipeline_parallel_size=1, context_parallel_size=1,
                        expert_parallel_size=1, expert_tensor_parallel_size=1,
                        sequence_parallel_size=1),
            reference=dict(
                colocated_with_policy=True, num_nodes=1, num_gpus_per_node=8,
                tensor_parallel_size=1, pipeline_parallel_size=1, context_parallel_size=1,
                expert_parallel_size=1, expert_tensor_parallel_size=1, sequence_parallel_size=1,
            ),
            critic=None,
            rollout=dict(num_engines=8, tensor_parallel_size=1, pipeline_parallel_size=1,
                         data_parallel_size=1, expert_parallel_size=1, backend="vllm",
                         weight_sync_backend="nccl"),
            placement=dict(colocate_all=True, colocate_policy_ref=True),
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

ALLOCATION_KEYS = schema_keys("execution.allocation")
WANDB_KEYS = schema_keys("execution.wandb")


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
    choices = schema.choices("execution.priority")
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


class ExecutionWandbField(SchemaDictField):
    alias = "wandb"
    none_is_valid_value = True
    schema = WANDB_KEYS
    help = dict_help(
        """
        The W&B entity (team or user) and project to log to; unset: no W&B. Keys:
        """,
        WANDB_KEYS,
        """
            wandb=dict(entity="rl-posttraining", project="gsm8k-grpo")
        """,
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
    ExecutionWandbField,
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
            wandb=dict(entity="my-team", project="gsm8k-grpo"),
        )
    """
)
