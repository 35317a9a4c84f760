"""`python -m rlaunch.runtimes.smoke LAUNCH_YAML`: the runtime's entrypoint.

Exit status: 0 the run finished and the terminal manifest is written; 2 the launch YAML or
its inputs cannot be run (nothing started); 1 the run failed (placement, a worker, I/O).
"""

from __future__ import annotations

import shutil
import sys

import ray
from ray.exceptions import RayError

from rlaunch.atomic import write_json_atomically
from rlaunch.models.tiny import ModelFormatError
from rlaunch.render import LaunchError, load_launch
from rlaunch.runtimes.smoke.checkpoint import CheckpointError
from rlaunch.runtimes.smoke.cluster import connect
from rlaunch.runtimes.smoke.config import SmokeConfigError, check_runnable, load_config
from rlaunch.runtimes.smoke.data import DataError
from rlaunch.runtimes.smoke.metrics import MetricsSink, attempt_id
from rlaunch.runtimes.smoke.placement import PlacementError, placement_timeout_s
from rlaunch.runtimes.smoke.trainer import SmokeRun, SmokeRunError

USAGE = "usage: python -m rlaunch.runtimes.smoke LAUNCH_YAML"
INPUT_ERRORS = (LaunchError, SmokeConfigError, DataError, CheckpointError, ModelFormatError)


def say(message: str) -> None:
    print(message, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2
    source = args[0]
    try:
        config = load_config(load_launch(source))
        check_runnable(config)
        run = SmokeRun(config, say=say)
        run.resume_source()
        timeout_s = placement_timeout_s()
    except INPUT_ERRORS as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    attempt = attempt_id()
    attempt_dir = config.attempts_root / attempt
    metrics = MetricsSink(
        attempt_dir, logger=config.logger, project=config.project_name,
        entity=config.wandb_entity, run_name=config.run_id,
        config={"run_id": config.run_id, "fingerprint": config.fingerprint,
                "runtime_fingerprint": config.runtime_fingerprint, "attempt": attempt},
        say=say,
    )
    shutil.copyfile(source, attempt_dir / "launch.yaml")
    say(f"smoke runtime: {config.run_id} attempt {attempt}; {run.total_steps} steps; "
        f"metrics -> {metrics.path}")
    owned: str | None = None
    try:
        run.laps.lap("reading inputs")
        owned = connect(config, say)
        run.laps.lap("connecting to Ray")
        manifest = run.run(metrics=metrics, timeout_s=timeout_s)
        manifest["attempt_id"] = attempt
        manifest["metrics_path"] = str(metrics.path)
        write_json_atomically(config.terminal_manifest, manifest)
    except (PlacementError, CheckpointError, SmokeRunError, OSError, RayError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        metrics.close()
        if owned is not None:
            ray.shutdown()
            shutil.rmtree(owned, ignore_errors=True)
    summary = manifest["metrics"]
    say(f"done: step {manifest['final_step']}, reward {summary['reward_mean_first5']:.3f} "
        f"(first 5) -> {summary['reward_mean_last5']:.3f} (last 5); export "
        f"{manifest['export_path']} {manifest['weights_sha256']}; manifest "
        f"{config.terminal_manifest}")
    say(f"timings: {run.laps.line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
