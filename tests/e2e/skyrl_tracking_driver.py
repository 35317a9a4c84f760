"""Runs in the SkyRL rehearsal env (scripts/skyrl-rehearsal-env: SkyRL 0.3.0, ray, wandb), not
under pytest:

    python skyrl_tracking_driver.py NAMES_JSON SKYRL_OVERRIDE...

SkyRL 0.3.0's own driver steps (`skyrl.train.entrypoints.main_base.main`):
`SkyRLTrainConfig.from_cli_overrides`, `validate_cfg`, `initialize_ray(cfg)` (which starts a Ray
of its own here, with the runtime env of `prepare_runtime_environment`), then one `num_cpus=1`
task, `skyrl_entrypoint`'s shape, that makes the tracker with SkyRL's own
`BasePPOExp.get_tracker` (`Tracking`, skyrl/train/utils/tracking.py: `wandb.init`), logs one
step and finishes it, and starts one actor as the trainer starts its workers. The task and the
actor are the pieces written here (SkyRL's whole loop is the rehearsal's). Prints, as JSON, the
sha256 of each named variable in the driver, the task and the actor, and their working folders.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import types

import ray
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.entrypoints.main_base import BasePPOExp
from skyrl.train.utils.utils import initialize_ray, validate_cfg


def digests(names: list[str]) -> dict[str, str | None]:
    seen: dict[str, str | None] = {name: hashlib.sha256(os.environ[name].encode()).hexdigest()
                                   if name in os.environ else None for name in names}
    return {**seen, "cwd": os.getcwd()}


@ray.remote(num_cpus=0)
class Worker:
    def environment(self, names: list[str]) -> dict[str, str | None]:
        return digests(names)


@ray.remote(num_cpus=1)
def entrypoint(cfg: SkyRLTrainConfig, names: list[str]) -> dict[str, dict[str, str | None]]:
    tracker = BasePPOExp.get_tracker(types.SimpleNamespace(cfg=cfg))
    tracker.log({"reward": 0.5}, step=1, commit=True)
    tracker.finish()
    worker = Worker.remote()
    return {"task": digests(names), "actor": ray.get(worker.environment.remote(names))}


def main() -> int:
    names = json.loads(sys.argv[1])
    cfg = SkyRLTrainConfig.from_cli_overrides(sys.argv[2:])
    validate_cfg(cfg)
    initialize_ray(cfg)
    seen = ray.get(entrypoint.remote(cfg, names))
    print("SEEN " + json.dumps({"driver": digests(names), **seen}), flush=True)
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
