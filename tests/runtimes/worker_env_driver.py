"""A Ray driver that does what SkyRL 0.3.0's `main_base.main` does after `validate_cfg`
(skyrl/train/entrypoints/main_base.py, skyrl/train/utils/utils.py `initialize_ray`):
`ray.init(runtime_env={"env_vars": ENV_VARS}, log_to_driver=True)` and one `num_cpus=1` task,
`skyrl_entrypoint`'s shape, that starts an actor as SkyRL's trainer starts its workers. ENV_VARS
is what SkyRL's own `prepare_runtime_environment` returned in the contract env for this
environment (tests/runtimes/test_worker_env.py). Until SkyRL's whole loop runs here (the
rehearsal), this is the one piece written by us; it prints, as JSON, the sha256 of each named
variable in the driver, the task and the actor, and the task's and actor's working folders.

    python worker_env_driver.py ENV_VARS_JSON NAME...
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import ray


def digests(names: list[str]) -> dict[str, str | None]:
    return {name: hashlib.sha256(os.environ[name].encode()).hexdigest()
            if name in os.environ else None for name in names}


@ray.remote(num_cpus=0)
class Worker:
    def environment(self, names: list[str]) -> dict[str, str | None]:
        return {**digests(names), "cwd": os.getcwd()}


@ray.remote(num_cpus=1)
def entrypoint(names: list[str]) -> dict[str, dict[str, str | None]]:
    worker = Worker.remote()
    return {"task": {**digests(names), "cwd": os.getcwd()},
            "actor": ray.get(worker.environment.remote(names))}


def main() -> int:
    env_vars = json.loads(open(sys.argv[1], encoding="utf-8").read())
    names = sys.argv[2:]
    ray.init(runtime_env={"env_vars": env_vars}, log_to_driver=True, logging_level="WARNING")
    seen = ray.get(entrypoint.remote(names))
    print(json.dumps({"driver": digests(names), **seen}), flush=True)
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
