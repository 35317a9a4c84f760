"""SkyRL's logs and eval dumps of a training run end up in the run's folder in the store, not in
a local folder named `s3:` (rlaunch.runtimes.skyrl_pathlib_outputs): where SkyRL writes them is
decided by SkyRL 0.3.0's own expressions (tests/contract/pathlib_outputs.py, in the contract
env, in the working folder the adapter gives SkyRL), and `collect` moves them to moto's S3."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

from contract.skyrl_env import contract_python
from contract.test_export_policy_vs_skyrl import cli_args
from objectstores import ObjectStoreServer
from rlaunch.runtimes.skyrl_pathlib_outputs import CWD, LOGS, collect, work_root

SCRIPT = Path(__file__).with_name("pathlib_outputs.py")
FINAL_ONLY = {"ckpt_interval": 10, "max_ckpts_to_keep": 2, "hf_save_interval": -1,
              "export_final": True}


def skyrl_writes(args: list[str], cwd: Path) -> dict[str, str]:
    cwd.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([contract_python(), str(SCRIPT), json.dumps(args), "2"], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False,
                          env={"PYTHONPATH": str(SCRIPT.parent), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def with_store(args: list[str], store: str, log_path: str | None) -> list[str]:
    """The rendered arguments with the run's roots on `store` (and the adapter's log_path)."""
    out = []
    for arg in args:
        key, _, value = arg.partition("=")
        if key in ("trainer.export_path", "trainer.ckpt_path") or (
                key == "trainer.log_path" and log_path is None):
            value = json.dumps(json.loads(value).replace("/srv/store", store))
        elif key == "trainer.log_path":
            value = json.dumps(log_path)
        out.append(f"{key}={value}")
    return out


def test_logs_and_eval_dumps_land_in_the_runs_folder_in_the_store(
        s3_server: ObjectStoreServer, s3_store: str, tmp_path: Path) -> None:
    rendered = cli_args(FINAL_ONLY)
    export = json.loads(next(a for a in rendered if a.startswith("trainer.export_path="))
                        .partition("=")[2]).replace("/srv/store", s3_store)
    # As launched before: a folder named `s3:` in SkyRL's working folder.
    before = skyrl_writes(with_store(rendered, s3_store, None), tmp_path / "before")
    assert before["dump_dir"] == (f"s3:/{export.removeprefix('s3://')}/dumped_evals/"
                                  "global_step_2_evals")
    assert (tmp_path / "before" / before["dump_dir"] / "aggregated_results.jsonl").is_file()
    assert before["log_path"].startswith(str(tmp_path / "before" / "s3:") + "/")

    work = work_root(tmp_path / "node-cache", "colocated-1x8@2026.11.29", "a1")
    written = skyrl_writes(with_store(rendered, s3_store, str(work / LOGS)), work / CWD)
    assert written["log_path"] == str(work / LOGS)
    attempt = f"{s3_store}/colocated-1x8/2026.11.29/attempts/a1"
    moved = collect(str(work), attempt)
    host = socket.gethostname()
    assert moved == [
        f"{attempt}/skyrl-logs/{host}/infra-000000_000000.log",
        f"{export}/dumped_evals/global_step_2_evals/aggregated_results.jsonl",
    ]
    fs = s3_server.filesystem()
    assert fs.cat_file(moved[1]) == b'{"eval/all/avg_score": 1.0}\n'
    assert fs.cat_file(moved[0]) == b"infra log\n"
    assert not work.exists()
