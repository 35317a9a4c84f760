"""SkyRL's own driver steps and `Tracking` with WANDB_MODE=offline, in the SkyRL rehearsal env
(tests/runtimes/skyrl_tracking_driver.py): given the environment the adapter gives SkyRL's driver
(rlaunch.runtimes.worker_env.driver_environment, without a cluster: SkyRL's `initialize_ray`
starts its own Ray), the run files wandb writes hold the W&B entity, project and run name, a task
and an actor see the planted credentials, and no file of that Ray (its logs included), of the
run's working folder or of the store holds a planted credential. `collect` then moves the
offline run into the attempt's folder in the store."""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest

from rlaunch.runtimes.skyrl_pathlib_outputs import CWD, LOGS, collect, work_root
from rlaunch.runtimes.worker_env import PLACEHOLDER, driver_environment, worker_values

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("skyrl_tracking_driver.py")
NAMES = ["WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "WANDB_ENTITY", "WANDB_PROJECT",
         "WANDB_MODE"]


def rehearsal_python() -> str:
    script = REPO / "scripts" / "skyrl-rehearsal-env"
    if not script.exists():
        pytest.skip("scripts/skyrl-rehearsal-env (SkyRL's loop on CPU) is not in this tree")
    done = subprocess.run([str(script)], capture_output=True, text=True, timeout=1800,
                          check=False)
    if done.returncode != 0:
        pytest.fail(f"scripts/skyrl-rehearsal-env failed ({done.returncode}):\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def files_holding(root: Path, value: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
            and value.encode() in p.read_bytes()]


def test_wandb_run_files_show_entity_project_and_run_and_no_credential(tmp_path: Path) -> None:
    python = rehearsal_python()
    api_key, aws_secret = f"wk-{secrets.token_hex(12)}", f"aws-{secrets.token_hex(12)}"
    launcher = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/root"),
                "WANDB_API_KEY": api_key, "AWS_SECRET_ACCESS_KEY": aws_secret,
                "WANDB_MODE": "offline"}
    values = worker_values(["WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY"],
                           ("rlaunch-team", "rlaunch-project"), launcher)
    work = work_root(tmp_path / "node-cache", "tiny-gsm8k-grpo@dev", "a1")
    (work / CWD).mkdir(parents=True)
    ray_tmp = Path(tempfile.mkdtemp(prefix="rlw-", dir="/tmp"))  # Ray's socket paths are short
    env = {**driver_environment(launcher, values, key=None, cwd=str(work / CWD)),
           "PYTHONPATH": str(REPO / "src"), "RAY_TMPDIR": str(ray_tmp),
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    overrides = [
        "trainer.logger=wandb", "trainer.project_name=rlaunch-project",
        "trainer.run_name=tiny-gsm8k-grpo@dev", "trainer.tags=[run:tiny-gsm8k-grpo]",
        f"trainer.log_path={work / LOGS}",
        "trainer.placement.policy_num_gpus_per_node=1",
        "trainer.placement.ref_num_gpus_per_node=1",
        "trainer.placement.critic_num_gpus_per_node=1",
        "generator.inference_engine.tensor_parallel_size=1",
    ]
    driver = subprocess.Popen([python, str(DRIVER), json.dumps(NAMES), *overrides],
                              cwd=work / CWD, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait()
    try:
        [line] = [x for x in out.splitlines() if x.startswith("SEEN ")]
        seen = json.loads(line[len("SEEN "):])
        expected = {"WANDB_API_KEY": sha(api_key), "AWS_SECRET_ACCESS_KEY": sha(aws_secret),
                    "WANDB_ENTITY": sha("rlaunch-team"), "WANDB_PROJECT": sha("rlaunch-project"),
                    "WANDB_MODE": sha("offline"), "cwd": str(work / CWD)}
        assert seen["task"] == expected, out[-3000:]
        assert seen["actor"] == expected
        assert seen["driver"]["WANDB_API_KEY"] == sha(PLACEHOLDER)

        [run_file] = list((work / CWD / "wandb").glob("offline-run-*/run-*.wandb"))
        data = run_file.read_bytes()
        assert b"rlaunch-team" in data and b"rlaunch-project" in data
        assert b"tiny-gsm8k-grpo@dev" in data
        # Ray logged the runtime env SkyRL passed: the placeholder, never the key.
        assert files_holding(ray_tmp, PLACEHOLDER)
        for secret in (api_key, aws_secret):
            assert files_holding(ray_tmp, secret) == []
            assert files_holding(work, secret) == []
            assert secret not in out

        # initialize_ray made the log folder the adapter names (nothing logged there: no worker
        # of SkyRL's redirects its output in this test).
        assert (work / LOGS).is_dir()
        store = tmp_path / "store"
        moved = collect(str(work), str(store / "attempts" / "a1"))
        host = socket.gethostname()
        run_rel = run_file.relative_to(work / CWD).as_posix()
        assert str(store / "attempts" / "a1" / "skyrl-cwd" / host / run_rel) in moved
        for secret in (api_key, aws_secret):
            assert files_holding(store, secret) == []
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
