"""Execution: where a run runs. Not part of the run's fingerprint except the allocation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from rlaunch.spec.base import Bounds, SpecModel


IRIS_PRIORITY_BANDS = ("production", "interactive", "batch")
"""Iris's priority bands (`iris job run --priority`): what execution.priority is for `iris`."""


class Allocation(SpecModel):
    num_nodes: int
    """Nodes allocated."""
    gpus_per_node: int
    """GPUs per node."""
    accelerator: str
    """`H100`, `A100-80GB`, `L4`, ... (for `iris`, the GPU variant), or `sim` for simulated GPUs
    (on `iris`: a job asking for no accelerator, the smoke runtime simulating its GPUs)."""
    cpus_per_node: int
    """CPUs per node."""
    memory_gb_per_node: int
    """Memory per node, GB."""
    disk_gb_per_node: int
    """Disk per node, GB."""

    @property
    def total_gpus(self) -> int:
        return self.num_nodes * self.gpus_per_node

    @property
    def total_cpus(self) -> int:
        return self.num_nodes * self.cpus_per_node


class WandbIdentity(SpecModel):
    entity: str
    """The W&B entity (team or user)."""
    project: str
    """The W&B project."""


class Execution(SpecModel):
    """Where a run executes: executor, cluster, allocation, priority, retries, credentials by
    name, W&B identity. Of all this only the allocation is part of the run's fingerprint."""

    executor: str
    """The executor plugin that submits the launch YAML: `local` (a Ray head on this machine with
    simulated GPUs), `ray` (an existing cluster at `address`), `iris` (an Iris controller at
    `address`, or `cluster`) or `dry-run`; third-party ones register the entry point group
    `rlaunch.executors`."""
    address: str | None = None
    """The Ray Jobs API address for the `ray` executor, e.g. `http://10.0.0.5:8265`; for `iris`,
    the Iris controller URL (it wins over `cluster`); null otherwise."""
    cluster: str | None = Field(default=None, examples=["h100-west"])
    """For the `iris` executor: a cluster config file, or a cluster name that Iris resolves as
    `iris --cluster NAME` does; null otherwise."""
    allocation: Allocation
    """What the run is given. The roles must use exactly num_nodes x gpus_per_node GPUs, in
    whole nodes."""
    priority: Literal["low", "normal", "high", "production", "interactive", "batch"] = "normal"
    """Scheduling priority: `low`, `normal` or `high`; for `iris`, its priority band:
    `production`, `interactive` or `batch` (EXEC010)."""
    max_retries: Annotated[int, Bounds(ge=0)] = Field(default=0, examples=[1])
    """How many times a failed job is resubmitted (EXEC006)."""
    timeout_minutes: Annotated[int, Bounds(ge=1)]
    """Wall-clock limit of the job, in minutes (EXEC006)."""
    credentials: list[str] = Field(default_factory=list)
    """Names (never values) of environment variables forwarded to the job, e.g.
    `["WANDB_API_KEY", "HF_TOKEN"]`. Their presence is checked at launch time."""
    wandb: WandbIdentity | None = Field(
        default=None, examples=[{"entity": "rl-posttraining", "project": "gsm8k-grpo"}])
    """The W&B entity (team or user) and project to log to; null: no W&B."""
    store_prefix: str | None = Field(default=None,
                                     examples=["gs://rl-posttraining-store/rlaunch"])
    """The artifact store the job reads inputs from and writes checkpoints to
    (`gs://bucket/rlaunch`, `s3://...`); null: the local default store."""
