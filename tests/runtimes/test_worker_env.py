"""The W&B entity and project and the store's credentials reach every Ray process of a SkyRL run,
and a planted credential is in no file of the Ray head (its logs included).

SkyRL's own `prepare_runtime_environment` (skyrl/train/utils/utils.py, per release), run in the
contract env (the real torch and ray there) on the environment the adapter gives SkyRL's driver,
decides what SkyRL puts in its runtime env: WANDB_API_KEY (so the driver holds
rlaunch.runtimes.worker_env.PLACEHOLDER there), and neither WANDB_ENTITY nor AWS_*. A driver
doing what SkyRL's `initialize_ray` does with that (tests/runtimes/worker_env_driver.py) runs on
a real Ray head with the adapter's setup hook.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.skyrl_env import RELEASES, contract_python
from executors.helpers import allocation
from executors.support import HeadWatch
from rlaunch.executors.local_head import HeadRecord, start_head
from rlaunch.runtimes.worker_env import (
    JOB_CONFIG_ENV,
    KEY_ENV,
    PLACEHOLDER,
    driver_env,
    publish,
    with_setup_hook,
    withdraw,
    worker_values,
)

SRC = Path(__file__).resolve().parents[2] / "src"
DRIVER = Path(__file__).with_name("worker_env_driver.py")
NAMES = ["WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "WANDB_ENTITY", "WANDB_PROJECT"]

SKYRL_RUNTIME_ENV = """
import json, sys
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.utils.utils import prepare_runtime_environment
cfg = SkyRLTrainConfig.from_cli_overrides(["trainer.logger=wandb"])
print(json.dumps(prepare_runtime_environment(cfg)))
"""


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeadRecord]:
    watch = HeadWatch(tmp_path_factory.mktemp("worker-env-head"))
    record = start_head(allocation(), watch.state_dir, lambda message: None)
    watch.snapshot()
    yield record
    watch.finish()


def on_head(env: dict[str, str], head: HeadRecord) -> dict[str, str]:
    """A driver of the head, which listens on 127.0.0.1 only (rlaunch.executors.local_head), in
    a job whose runtime env puts rlaunch on the path, as the executors' jobs have it
    (rlaunch.executors.job.job_env_vars): Ray's job supervisor passes that runtime env to the
    job's driver in RAY_JOB_CONFIG_JSON_ENV_VAR."""
    job_config = {"runtime_env": {"env_vars": {"PYTHONPATH": str(SRC)}}, "metadata": {}}
    return {**env, "RAY_ADDRESS": head.gcs_address, "PYTHONPATH": str(SRC),
            JOB_CONFIG_ENV: json.dumps(job_config),
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled",
            "RAY_USAGE_STATS_ENABLED": "0"}


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def files_holding(root: Path, value: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]


def test_entity_project_and_credentials_reach_skyrls_task_and_actors_and_no_file(
        head: HeadRecord, tmp_path: Path) -> None:
    api_key, aws_secret = f"wk-{secrets.token_hex(12)}", f"aws-{secrets.token_hex(12)}"
    launcher_env = {**os.environ, "WANDB_API_KEY": api_key, "AWS_SECRET_ACCESS_KEY": aws_secret}
    values = worker_values(["WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "UNSET_NAME"],
                           ("rlaunch-team", "rlaunch-project"), launcher_env)
    assert sorted(values) == sorted(NAMES)
    skyrl_driver_env = driver_env({**launcher_env, **values}, values)

    # What SkyRL's own code puts in its runtime env, for the driver environment we give it.
    done = subprocess.run([contract_python(), "-c", SKYRL_RUNTIME_ENV],
                          env=skyrl_driver_env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    env_vars = json.loads(done.stdout.strip().splitlines()[-1])
    assert env_vars["WANDB_API_KEY"] == PLACEHOLDER
    assert {"WANDB_ENTITY", "WANDB_PROJECT", "AWS_SECRET_ACCESS_KEY"}.isdisjoint(env_vars)
    assert api_key not in done.stdout + done.stderr
    env_vars_path = tmp_path / "env_vars.json"
    env_vars_path.write_text(json.dumps(env_vars))

    key = publish(head.gcs_address, values)
    try:
        env = with_setup_hook(on_head(skyrl_driver_env, head), key, str(tmp_path / "work"))
        ran = subprocess.run([sys.executable, str(DRIVER), str(env_vars_path), *NAMES],
                             env=env, capture_output=True, text=True, timeout=180, check=False)
    finally:
        withdraw(head.gcs_address, key)
    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    expected = {"WANDB_API_KEY": sha(api_key), "AWS_SECRET_ACCESS_KEY": sha(aws_secret),
                "WANDB_ENTITY": sha("rlaunch-team"), "WANDB_PROJECT": sha("rlaunch-project")}
    # and the working folder SkyRL's pathlib outputs go to (rlaunch.runtimes.skyrl_pathlib_outputs)
    assert seen["task"] == {**expected, "cwd": str(tmp_path / "work")}
    assert seen["actor"] == {**expected, "cwd": str(tmp_path / "work")}
    assert seen["driver"]["WANDB_API_KEY"] == sha(PLACEHOLDER)

    temp_dir = Path(head.temp_dir)
    # Ray logged the runtime env SkyRL's driver passed: the key's name and the placeholder.
    assert files_holding(temp_dir, key) and files_holding(temp_dir, PLACEHOLDER)
    assert files_holding(temp_dir, api_key) == []
    assert files_holding(temp_dir, aws_secret) == []
    assert api_key not in ran.stdout + ran.stderr


def test_a_worker_started_after_the_adapter_withdrew_says_so(head: HeadRecord,
                                                             tmp_path: Path) -> None:
    key = publish(head.gcs_address, {"WANDB_ENTITY": "t"})
    withdraw(head.gcs_address, key)
    env_vars_path = tmp_path / "env_vars.json"
    env_vars_path.write_text("{}")
    env = with_setup_hook(on_head(dict(os.environ), head), key)
    ran = subprocess.run([sys.executable, str(DRIVER), str(env_vars_path), "WANDB_ENTITY"],
                         env=env, capture_output=True, text=True, timeout=180, check=False)
    assert ran.returncode != 0
    assert (f"the workers' environment ({key}) is not in the GCS: the adapter that put it there "
            "has ended, and this worker outlived it") in ran.stderr + ran.stdout
    assert KEY_ENV not in os.environ


@pytest.mark.parametrize("release", RELEASES)
def test_no_credential_reaches_the_runtime_env_skyrl_builds_per_release(release: str) -> None:
    """Each release's own prepare_runtime_environment, on the driver environment the adapter
    gives it: SkyRL 0.4.0 also copies HF_TOKEN and every SKYRL_* variable into the Ray runtime
    env (which Ray logs), so for a 0.4.0 run those hold the placeholder too."""
    hf_token, skyrl_secret = f"hf_{secrets.token_hex(12)}", f"sk-{secrets.token_hex(12)}"
    launcher_env = {**os.environ, "WANDB_API_KEY": f"wk-{secrets.token_hex(12)}",
                    "HF_TOKEN": hf_token, "SKYRL_DEPLOY_TOKEN": skyrl_secret}
    values = worker_values(["WANDB_API_KEY", "HF_TOKEN", "SKYRL_DEPLOY_TOKEN"], None,
                           launcher_env)
    done = subprocess.run(
        [contract_python(release), "-c", SKYRL_RUNTIME_ENV],
        env=driver_env({**launcher_env, **values}, values, release), capture_output=True,
        text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    env_vars = json.loads(done.stdout.strip().splitlines()[-1])
    assert hf_token not in done.stdout and skyrl_secret not in done.stdout
    copied = {name: env_vars[name] for name in ("WANDB_API_KEY", "HF_TOKEN",
                                                "SKYRL_DEPLOY_TOKEN") if name in env_vars}
    assert copied == ({"WANDB_API_KEY": PLACEHOLDER} if release == "0.3.0" else
                      dict.fromkeys(("WANDB_API_KEY", "HF_TOKEN", "SKYRL_DEPLOY_TOKEN"),
                                    PLACEHOLDER))
