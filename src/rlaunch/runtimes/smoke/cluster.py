"""Connecting to Ray and starting one worker actor per simulated GPU."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.util.placement_group import remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

from rlaunch.runtimes.smoke.config import Geometry, SmokeConfig
from rlaunch.runtimes.smoke.placement import CPU_PER_SIM_GPU, Layout, build_layout, reserve
from rlaunch.runtimes.smoke.worker import SimGPUWorker, WorkerSettings


def connect(config: SmokeConfig, say) -> str | None:
    """Join the cluster this process runs in; returns the temp dir of the Ray this call
    started (the caller shuts it down and removes the dir), None when it joined one.

    Inside a Ray job (or with $RAY_ADDRESS set) it connects to that cluster. Run by hand or as
    an Iris task, without one, it starts a private local Ray on 127.0.0.1, sized from
    execution.allocation, in a temp dir of its own under /tmp: Ray's unix socket paths must
    stay under 108 characters, and a task's TMPDIR (Iris's local workers give each task one
    deep in their cache) can be too long for them."""
    if ray.is_initialized():
        return None
    if os.environ.get("RAY_ADDRESS"):
        ray.init(address="auto", log_to_driver=True)
        return None
    cpus = os.cpu_count() or 1
    say(f"no RAY_ADDRESS: starting a private local Ray ({cpus} CPUs, "
        f"{config.num_sim_gpus} simulated GPUs from execution.allocation)")
    temp_dir = tempfile.mkdtemp(prefix="rls-", dir="/tmp")
    # It serves this process only: every server on the loopback address, as the local head's
    # (with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0, set when the package is imported).
    ray.init(address="local", num_cpus=cpus, num_gpus=config.num_sim_gpus,
             include_dashboard=False, log_to_driver=True, _node_ip_address="127.0.0.1",
             _temp_dir=temp_dir)
    return temp_dir


@dataclass
class Workers:
    """Actor handles by role, each list in rank order."""

    layout: Layout
    groups: list
    actors: list
    policy: list = field(default_factory=list)
    reference: list = field(default_factory=list)
    rollout: list = field(default_factory=list)
    engine_leaders: list[tuple[int, int, Any]] = field(default_factory=list)
    """(engine, replica, actor): the rank that runs each engine replica's sampling."""
    reference_leaders: list = field(default_factory=list)
    """The first rank of each reference data-parallel group."""

    def dp_index(self, policy_rank: int, geometry: Geometry) -> int:
        return policy_rank // geometry.policy.replica

    def stop(self) -> None:
        for actor in self.actors:
            try:
                ray.get(actor.close.remote(), timeout=10)
            except Exception:  # noqa: BLE001 (an actor that already died needs no close)
                pass
            ray.kill(actor)
        for group in self.groups:
            remove_placement_group(group)


def settings_for(config: SmokeConfig) -> WorkerSettings:
    return WorkerSettings(
        model_dir=str(config.model_dir),
        reference_dir=str(config.reference_dir),
        learning_rate=config.learning_rate,
        adam_betas=config.adam_betas,
        weight_decay=config.weight_decay,
        max_grad_norm=config.max_grad_norm,
        temperature=config.temperature,
        max_generate_length=config.max_generate_length,
        micro_train_batch_size=config.micro_train_batch_size_per_gpu,
        micro_forward_batch_size=config.micro_forward_batch_size_per_gpu,
        eps_clip_low=config.eps_clip_low,
        eps_clip_high=config.eps_clip_high,
        use_kl_loss=config.use_kl_loss,
        kl_loss_coef=config.kl_loss_coef,
        kl_estimator=config.kl_estimator,
        policy_world=config.geometry.policy.world,
        seed=config.seed,
    )


def start_workers(config: SmokeConfig, *, timeout_s: float, say) -> Workers:
    geometry = config.geometry
    layout = build_layout(geometry)
    say(f"placement ({layout.total_gpus} simulated GPUs):\n{layout.describe()}")
    groups = reserve(layout, run_id=config.run_id, timeout_s=timeout_s)
    remote_class = ray.remote(SimGPUWorker)
    settings = settings_for(config)
    actors = []
    for slot in layout.workers:
        strategy = PlacementGroupSchedulingStrategy(
            placement_group=groups[slot.group], placement_group_bundle_index=slot.bundle
        )
        actors.append(
            remote_class.options(
                num_cpus=CPU_PER_SIM_GPU, num_gpus=1, scheduling_strategy=strategy
            ).remote(
                index=slot.index, policy_rank=slot.policy_rank, ref_rank=slot.ref_rank,
                rollout_rank=slot.rollout_rank, settings=settings,
            )
        )
    workers = Workers(layout=layout, groups=groups, actors=actors)
    by_rank = {}
    for role in ("policy_rank", "ref_rank", "rollout_rank"):
        ranked = sorted((getattr(s, role), a) for s, a in zip(layout.workers, actors, strict=True)
                        if getattr(s, role) is not None)
        by_rank[role] = [actor for _, actor in ranked]
    workers.policy = by_rank["policy_rank"]
    workers.reference = by_rank["ref_rank"]
    workers.rollout = by_rank["rollout_rank"]
    per_replica = geometry.engine_tp * geometry.engine_pp
    for engine in range(geometry.num_engines):
        for replica in range(geometry.engine_dp):
            rank = engine * geometry.gpus_per_engine + replica * per_replica
            workers.engine_leaders.append((engine, replica, workers.rollout[rank]))
    model_parallel = geometry.policy.replica
    ref_mp = model_parallel if geometry.ref_world % model_parallel == 0 else 1
    workers.reference_leaders = workers.reference[::ref_mp]
    address, port = ray.get(workers.policy[0].rendezvous_address.remote())
    ray.get([actor.join_policy_group.remote(address, port) for actor in workers.policy])
    return workers
