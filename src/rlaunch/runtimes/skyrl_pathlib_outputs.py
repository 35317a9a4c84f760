"""What SkyRL 0.3.0 writes with pathlib where the launch names the store: the logs and the eval
dumps of a run, moved into the run's folder in the store after SkyRL exits.

SkyRL writes checkpoints and exports through fsspec, but two outputs with pathlib:
- logs: `initialize_ray` (skyrl/train/utils/utils.py) does
  `Path(trainer.log_path).resolve().mkdir(...)` in the driver and names `infra-<time>.log` there
  `SKYRL_LOG_FILE`; every worker actor appends to that same path on its own node
  (`redirect_actor_output_to_file`, skyrl/train/utils/ray_logging.py, which makes the folder);
- eval dumps: `evaluate` (skyrl/train/evaluate.py) writes
  `Path(trainer.export_path) / "dumped_evals" / "global_step_<N>_evals"` with `open`
  (`dump_per_dataset_eval_results`, skyrl/train/utils/trainer_utils.py), and
  `RayPPOTrainer.dump_data` (skyrl/train/trainer.py) `Path(export_path) / "dumped_data"`, in
  the trainer's process (the Ray task `skyrl_entrypoint`).
A `gs://` path is a relative pathlib path (`gs:/bucket/...`): both would make a folder named
`gs:` in whatever working directory the process has. So the adapter, for each attempt, keeps a
node-local folder `work_root` (the same path on every node):
1. `trainer.log_path` is `work_root/logs`;
2. `work_root/cwd` is the working directory of SkyRL's driver and, on a Ray cluster, of every
   worker process of the run (rlaunch.runtimes.worker_env's setup hook changes into it; without
   a cluster, SkyRL's own Ray inherits the driver's), so `Path("gs://b/run/export")` is
   `work_root/cwd/gs:/b/run/export`;
3. after SkyRL exits, whatever its status, every node moves its files into the store (`collect`):
   the logs under `{attempts_root}/{attempt}/skyrl-logs/<host>/`, every file under
   `cwd/<scheme>:/` to `<scheme>://...`, the store path SkyRL meant (the eval dumps under the
   run's export root, `export/dumped_evals/`), and anything else left in `cwd` (an offline
   wandb run's `wandb/`) under `{attempts_root}/{attempt}/skyrl-cwd/<host>/`.
With a local store the paths are absolute and SkyRL writes into the store itself.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

from rlaunch.paths import join
from rlaunch.store.fs import open_location

LOGS = "logs"
CWD = "cwd"
STORE_LOGS = "skyrl-logs"
STORE_CWD = "skyrl-cwd"
SCHEMES = ("gs", "gcs", "s3")
"""The object-store schemes SkyRL's io knows (skyrl/backends/skyrl_train/utils/io/io.py,
`is_cloud_path`)."""

Say = Callable[[str], None]


def work_root(cache: Path, run_id: str, attempt: str) -> Path:
    return cache / "skyrl-work" / run_id.replace("@", "-") / attempt


def collect(work: str, attempt_uri: str) -> list[str]:
    """Move this node's SkyRL logs and pathlib-written store files under `work` into the store;
    the store locations written, in order."""
    root = Path(work)
    written: list[str] = []
    logs = root / LOGS
    host = socket.gethostname()
    for path in _files(logs):
        written.append(_upload(path, join(attempt_uri, STORE_LOGS, host,
                                          path.relative_to(logs).as_posix())))
    cwd = root / CWD
    for path in _files(cwd):
        first, *rest = path.relative_to(cwd).parts
        if first.endswith(":") and first[:-1] in SCHEMES and rest:
            written.append(_upload(path, f"{first[:-1]}://{'/'.join(rest)}"))
        else:  # whatever else SkyRL's processes left there (wandb/ of an offline run)
            written.append(_upload(path, join(attempt_uri, STORE_CWD, host,
                                              path.relative_to(cwd).as_posix())))
    shutil.rmtree(root, ignore_errors=True)
    return written


def _files(root: Path) -> list[Path]:
    """The regular files under `root`, sorted; symbolic links are not followed (wandb's
    `latest-run` names a run folder that is there already)."""
    found = []
    for folder, _, names in os.walk(root):
        found.extend(Path(folder) / name for name in names
                     if not (Path(folder) / name).is_symlink())
    return sorted(found)


def _upload(path: Path, uri: str) -> str:
    location = open_location(uri, what="a SkyRL output")
    if location.is_local:
        Path(location.root).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, location.root)
    else:
        location.fs.put_file(str(path), location.root)
    return uri


def _collect_here(work: str, attempt_uri: str, label: str) -> list[str] | str:
    try:
        return collect(work, attempt_uri)
    except (OSError, ValueError) as err:
        return f"{label}: {type(err).__name__}: {err}"


def collect_on_nodes(work: str, attempt_uri: str, say: Say) -> list[str]:
    """`collect` on every alive node of the Ray cluster this process belongs to, in parallel."""
    # ray: heavy, and absent where the adapter runs on one node only.
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # as ray

    if not ray.is_initialized():
        ray.init(address=os.environ.get("RAY_ADDRESS", "auto"), log_to_driver=True,
                 logging_level="WARNING")
    task = ray.remote(num_cpus=0, max_retries=0)(_collect_here)
    pending = []
    for node in ray.nodes():
        if node.get("Alive"):
            label = f"node {node['NodeManagerAddress']} {node['NodeID'][:8]}"
            strategy = NodeAffinitySchedulingStrategy(node_id=node["NodeID"], soft=False)
            pending.append(task.options(scheduling_strategy=strategy).remote(
                work, attempt_uri, label))
    written: list[str] = []
    for outcome in ray.get(pending):
        if isinstance(outcome, str):
            say(f"SkyRL's logs and dumps not moved into the store: {outcome}")
        else:
            written.extend(outcome)
    return written
