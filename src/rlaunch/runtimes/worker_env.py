"""What every Ray worker process of a SkyRL run needs in its environment, in no file and no Ray log.

SkyRL 0.3.0 runs its experiment, `wandb.init` included, in the Ray task `skyrl_entrypoint`
(skyrl/train/entrypoints/main_base.py; `eval_entrypoint` in main_generate.py), and its policy,
reference and critic workers and inference engines as Ray actors. None of them has the driver's
environment: `initialize_ray` (skyrl/train/utils/utils.py) calls
`ray.init(runtime_env={"env_vars": prepare_runtime_environment(cfg)})`, and
`prepare_runtime_environment` forwards a fixed list (WANDB_API_KEY, MLflow's, NCCL and vLLM knobs),
not WANDB_ENTITY, WANDB_PROJECT or a store's credentials (AWS_*). Nor is a runtime env a place
for a value: Ray logs it (runtime_env_agent.log, "Creating runtime env: ...") and shows it in
the job's details. So, on a Ray cluster (RAY_ADDRESS set, as Ray sets it for every job):

1. the adapter puts the values in the cluster's GCS key-value store, in memory only, under a key
   with 128 random bits (`publish`);
2. it adds to Ray's job config variable (RAY_JOB_CONFIG_JSON_ENV_VAR: Ray's job supervisor sets
   it for a job's driver, and `ray.init` merges its runtime env with the one the driver passes,
   `ray._private.worker.init`) a `worker_process_setup_hook`, this module's `setup`, and the
   key's name (`with_setup_hook`). SkyRL's driver inherits it from the adapter;
3. Ray runs the hook first in every worker process of the job (`skyrl_entrypoint`, the worker
   actors, the engines): it changes into the run's working folder (CWD_ENV, where SkyRL's
   pathlib outputs go: rlaunch.runtimes.skyrl_pathlib_outputs), reads the entry and sets the
   values in `os.environ`, over what the runtime env set;
4. SkyRL's driver holds WANDB_API_KEY as PLACEHOLDER (`driver_env`): SkyRL's `validate_cfg`
   only asserts it is set, and `prepare_runtime_environment` copies it into the runtime env,
   that is into Ray's log; each worker's hook sets the real value;
5. the adapter deletes the entry when SkyRL exits (`withdraw`). Killed before that, it leaves
   the entry in the GCS's memory until the cluster stops: no file either way.

Without a cluster, SkyRL's `ray.init` starts a Ray of its own from the driver, whose processes
inherit the driver's environment. The driver then holds the placeholder too, the values in
VALUES_ENV (inherited by every process of that Ray, never in a runtime env), and the same job
config variable with the hook, which sets them (`driver_environment`).

Imports only the standard library; Ray (present wherever this runs on a cluster) lazily.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping

SETUP_HOOK = "rlaunch.runtimes.worker_env.setup"
KEY_ENV = "RLAUNCH_WORKER_ENV_KEY"
"""The name of the GCS entry (never a value): the only thing the runtime env carries."""
JOB_CONFIG_ENV = "RAY_JOB_CONFIG_JSON_ENV_VAR"
"""ray._private.runtime_env.constants.RAY_JOB_CONFIG_JSON_ENV_VAR, a variable of that name."""
CWD_ENV = "RLAUNCH_WORKER_CWD"
"""The folder every worker process works in (rlaunch.runtimes.skyrl_pathlib_outputs)."""
VALUES_ENV = "RLAUNCH_WORKER_ENV_VALUES"
"""Without a cluster: the values, in the environment SkyRL's own Ray inherits from its driver."""
KEY_PREFIX = "rlaunch_worker_env_"
PLACEHOLDER = "set-in-each-ray-worker-by-rlaunch.runtimes.worker_env"
SECRET_NAMES_SKYRL_FORWARDS = ("WANDB_API_KEY",)
"""Of the credentials, those SkyRL 0.3.0's `prepare_runtime_environment` copies into its runtime
env."""
SKYRL_FORWARDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "0.3.0": (SECRET_NAMES_SKYRL_FORWARDS, ()),
    # 0.4.0's `prepare_runtime_environment` also copies HF_HOME, HF_TOKEN, HF_HUB_OFFLINE and
    # HF_ENDPOINT, and every variable whose name starts with SKYRL_.
    "0.4.0": ((*SECRET_NAMES_SKYRL_FORWARDS, "HF_HOME", "HF_TOKEN", "HF_HUB_OFFLINE",
               "HF_ENDPOINT"), ("SKYRL_",)),
}
"""SkyRL release -> (names, name prefixes) its `prepare_runtime_environment`
(skyrl/train/utils/utils.py) copies from the driver's environment into the Ray runtime env,
which Ray logs: a value the adapter hands the workers is a placeholder there."""


def skyrl_forwards(name: str, release: str) -> bool:
    """Whether SkyRL `release` copies the variable `name` into its runtime env (an unknown
    release: every name either release copies)."""
    known = [SKYRL_FORWARDS[release]] if release in SKYRL_FORWARDS else SKYRL_FORWARDS.values()
    return any(name in names or name.startswith(prefixes) for names, prefixes in known)


class WorkerEnvError(Exception):
    """The values could not be handed to the workers; the message names the channel."""


WANDB_SETTINGS = ("WANDB_MODE", "WANDB_BASE_URL")
"""wandb's settings that the launching environment may set, carried to the workers too."""


def worker_values(credential_names: list[str], wandb: tuple[str, str] | None,
                  env: Mapping[str, str]) -> dict[str, str]:
    """The named credentials `env` holds, wandb's settings it has, and the W&B entity and
    project."""
    values = {name: env[name] for name in (*credential_names, *WANDB_SETTINGS)
              if env.get(name)}
    if wandb is not None:
        values["WANDB_ENTITY"], values["WANDB_PROJECT"] = wandb
    return values


def _gcs(address: str):  # -> ray._raylet.GcsClient
    # lazy: Ray is slow to import, and only a job on a cluster publishes
    from ray._raylet import GcsClient

    return GcsClient(address=address)


def publish(address: str, values: Mapping[str, str]) -> str:
    """Put `values` in the GCS at `address`; returns the entry's name."""
    key = KEY_PREFIX + secrets.token_hex(16)
    try:
        _gcs(address).internal_kv_put(key.encode(), json.dumps(dict(values)).encode(), True,
                                      None)
    except Exception as err:  # Ray raises its own RpcError and friends
        raise WorkerEnvError(f"cannot put the workers' environment in the GCS at {address}: "
                             f"{type(err).__name__}") from None
    return key


def withdraw(address: str, key: str) -> None:
    _gcs(address).internal_kv_del(key.encode(), False, None)


def with_setup_hook(env: Mapping[str, str], key: str | None,
                    cwd: str | None = None) -> dict[str, str]:
    """`env` with the job config variable naming the setup hook, the entry and the working
    folder, merged into the job's own runtime env (Ray refuses a `ray.init` whose runtime env
    repeats a key of it)."""
    config = json.loads(env.get(JOB_CONFIG_ENV) or "{}")
    runtime_env = dict(config.get("runtime_env") or {})
    runtime_env["worker_process_setup_hook"] = SETUP_HOOK
    named = {KEY_ENV: key, CWD_ENV: cwd}
    runtime_env["env_vars"] = {**(runtime_env.get("env_vars") or {}),
                               **{name: value for name, value in named.items() if value}}
    return {**env, JOB_CONFIG_ENV: json.dumps({**config, "runtime_env": runtime_env})}


def driver_env(env: Mapping[str, str], values: Mapping[str, str],
               release: str = "0.3.0") -> dict[str, str]:
    """SkyRL's driver environment on a cluster: each value SkyRL `release` copies into its
    runtime env holds PLACEHOLDER, never the value."""
    return {**env, **{name: PLACEHOLDER for name in values if skyrl_forwards(name, release)}}


def driver_environment(env: Mapping[str, str], values: Mapping[str, str], *,
                       key: str | None, cwd: str | None,
                       release: str = "0.3.0") -> dict[str, str]:
    """SkyRL's driver's environment: with `key` (a GCS entry on a cluster) or, without a
    cluster, the values inherited in VALUES_ENV; the setup hook; the placeholders."""
    driver = driver_env({**env, **values}, values, release)
    if key is None and values:
        driver[VALUES_ENV] = json.dumps(dict(values))
    return with_setup_hook(driver, key, cwd)


def setup() -> None:
    """Ray's worker_process_setup_hook: into the run's working folder, and the entry's values
    into this worker's environment."""
    cwd = os.environ.get(CWD_ENV)
    if cwd:
        os.makedirs(cwd, exist_ok=True)
        os.chdir(cwd)
    inherited = os.environ.pop(VALUES_ENV, None)
    if inherited:
        os.environ.update(json.loads(inherited))
    key = os.environ.get(KEY_ENV)
    if not key:
        return
    # lazy: runs inside a Ray worker, which has imported Ray already
    from ray.experimental.internal_kv import _internal_kv_get

    data = _internal_kv_get(key)
    if data is None:
        raise WorkerEnvError(
            f"the workers' environment ({key}) is not in the GCS: the adapter that put it there "
            "has ended, and this worker outlived it")
    os.environ.update(json.loads(data))
