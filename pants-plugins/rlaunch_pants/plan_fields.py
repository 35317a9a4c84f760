"""Fields of `role_plan` and `rl_execution`, made from the library's schema (schema.json).

Their names and keys are the RunSpec's own (`role_plan.policy.tensor_parallel_size` in a finding
is `policy=dict(tensor_parallel_size=...)` in the BUILD file): one field per key of the RunSpec's
`role_plan` and `execution`, with the model's checks, defaults and docstrings, so a key or
section added to the library's model needs no edit here. A role plan has no silent defaults:
every section and every key the model gives no default must be written (`reference=None` too).
"""

from __future__ import annotations

import textwrap

from pants.util.strutil import help_text

from rlaunch_pants.schema_fields import section_fields, target_example

# ---------------------------------------------------------------------------------------------
# role_plan: one field per section of the RunSpec's role plan.

ROLE_PLAN_FIELD = section_fields("role_plan", prefix="RolePlan")
ROLE_PLAN_SECTIONS = tuple(ROLE_PLAN_FIELD)
ROLE_PLAN_FIELDS = tuple(ROLE_PLAN_FIELD.values())

ROLE_PLAN_HELP = help_text(
    """
    Who runs on which GPUs, with which parallelism and batch sizes: the RunSpec's `role_plan`,
    key for key. Fully explicit: every section and every key without a default in the model
    must be written (`reference=None`, `critic=None` included). `./pants check` proves the
    geometry and batch arithmetic against the run's allocation and model facts.
    """
) + "\n\n" + textwrap.indent(
    target_example("role_plan", "colocated-1x8", "role_plan"), "    "
)

# ---------------------------------------------------------------------------------------------
# rl_execution: one field per key of the RunSpec's execution.

EXECUTION_FIELD = section_fields("execution", prefix="Execution")
EXECUTION_FIELDS = tuple(EXECUTION_FIELD.values())

EXECUTION_HELP = help_text(
    """
    Where a run executes: executor, cluster, allocation, priority, retries, credentials by
    name, W&B identity. Of all this only the allocation is part of the run's fingerprint.
    """
) + "\n\n" + textwrap.indent(
    target_example("rl_execution", "h100-1x8", "execution"), "    "
)
