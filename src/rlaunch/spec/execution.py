"""Execution: where a run runs. Not part of the run's fingerprint except the allocation."""

from __future__ import annotations

from typing import Literal

from rlaunch.spec.base import SpecModel


class Allocation(SpecModel):
    num_nodes: int
    """Nodes allocated."""
    gpus_per_node: int
    """GPUs per node."""
    accelerator: str
    """`H100`, `A100-80GB`, `L4`, ... or `sim` for simulated GPUs on the local executor."""
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
    executor: str
    """Executor plugin: `local`, `ray`, `iris` or `dry-run`."""
    address: str | None
    """Ray Jobs API address for `ray` (http://host:8265); null otherwise."""
    cluster: str | None
    """Cluster name for `iris`; null otherwise."""
    allocation: Allocation
    """What the run is given; the roles must use exactly num_nodes x gpus_per_node GPUs, in whole
    nodes."""
    priority: Literal["low", "normal", "high"]
    """Scheduling priority: `low`, `normal` or `high`."""
    max_retries: int
    """How many times a failed job is resubmitted."""
    timeout_minutes: int
    """Wall-clock limit of the job, in minutes."""
    credentials: list[str]
    """Names (never values) of environment variables forwarded to the job."""
    wandb: WandbIdentity | None
    """The W&B entity and project to log to; null without W&B."""
    store_prefix: str | None
    """Artifact store prefix (`gs://bucket/rlaunch`, `/data/rlaunch`); null: the local default."""
