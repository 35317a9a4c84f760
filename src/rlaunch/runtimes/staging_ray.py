"""Staging on a Ray cluster: one task per alive node, pinned to it, all in parallel.

SkyRL places its workers on any node of the cluster, so every alive node gets the inputs in its
own node cache. Each task prints its progress lines (Ray forwards them to the job's log, prefixed
with the node); the driver prints one line per node as it finishes.
"""

from __future__ import annotations

import importlib.util
import os
import time

from rlaunch.runtimes.staging import Say, Staged, StageInput, StagingError, stage_inputs


def on_a_ray_cluster() -> bool:
    """The job runs in a Ray cluster (Ray's job supervisor sets RAY_ADDRESS) and can use it."""
    return bool(os.environ.get("RAY_ADDRESS")) and importlib.util.find_spec("ray") is not None


def _stage_here(items: list[StageInput], label: str) -> list[Staged] | str:
    try:
        return stage_inputs(items, say=lambda line: print(f"[{label}] {line}", flush=True))
    except StagingError as err:
        return f"{label}: {err}"


def stage_on_nodes(items: list[StageInput], say: Say = print) -> list[Staged]:
    """Stage on every alive node of the Ray cluster this process belongs to (RAY_ADDRESS, as a
    Ray job has it); the staged folders must be the same path on every node."""
    # ray: heavy, and absent where the adapter stages on one node only.
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # as ray

    task = ray.remote(num_cpus=0, max_retries=0)(_stage_here)
    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS", "auto"), log_to_driver=True,
                 logging_level="WARNING")
    nodes = [node for node in ray.nodes() if node.get("Alive")]
    say(f"staging {len(items)} inputs on {len(nodes)} node(s), in parallel")
    started = time.monotonic()
    pending = {}
    for node in nodes:
        label = f"node {node['NodeManagerAddress']} {node['NodeID'][:8]}"
        strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
        pending[task.options(scheduling_strategy=strategy).remote(items, label)] = label
    results: dict[str, list[Staged]] = {}
    failures: list[str] = []
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        label = pending.pop(ready[0])
        outcome = ray.get(ready[0])
        if isinstance(outcome, str):
            failures.append(outcome)
            continue
        results[label] = outcome
        copied = sum(entry.bytes_copied for entry in outcome)
        say(f"{label}: staged {len(outcome)} inputs, {copied / 1e6:.1f} MB copied "
            f"({time.monotonic() - started:.1f} s)")
    if failures:
        raise StagingError("; ".join(failures))
    layouts = {tuple(entry.path for entry in staged) for staged in results.values()}
    if len(layouts) != 1:
        raise StagingError(
            "the nodes staged into different folders (their node caches differ: "
            f"{sorted(layouts)}); set RLAUNCH_NODE_CACHE to the same local path on every node"
        )
    return next(iter(results.values()))
