"""Execution: where a run runs. Not part of the run's fingerprint except the allocation."""

from __future__ import annotations

from typing import Literal

from rlaunch.spec.base import SpecModel


class Allocation(SpecModel):
    num_nodes: int
    gpus_per_node: int
    accelerator: str
    """`H100`, `A100-80GB`, `L4`, ... or `sim` for simulated GPUs on the local executor."""
    cpus_per_node: int
    memory_gb_per_node: int
    disk_gb_per_node: int

    @property
    def total_gpus(self) -> int:
        return self.num_nodes * self.gpus_per_node


class WandbIdentity(SpecModel):
    entity: str
    project: str


class Execution(SpecModel):
    executor: str
    """Executor plugin: `local`, `ray`, `iris` or `dry-run`."""
    address: str | None
    """Ray Jobs API address for `ray` (http://host:8265); null otherwise."""
    cluster: str | None
    """Cluster name for `iris`; null otherwise."""
    allocation: Allocation
    priority: Literal["low", "normal", "high"]
    max_retries: int
    timeout_minutes: int
    credentials: list[str]
    """Names (never values) of environment variables forwarded to the job."""
    wandb: WandbIdentity | None
    store_prefix: str | None
    """Artifact store prefix (`gs://bucket/rlaunch`, `/data/rlaunch`); null: the local default."""
