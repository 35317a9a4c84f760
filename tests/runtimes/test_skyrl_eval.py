"""An eval stage on SkyRL: the dump SkyRL 0.3.0's eval-only entrypoint writes becomes the report
(rlaunch.runtimes.skyrl_eval), and the adapter runs it end to end with a stand-in entrypoint.

The dumps are written as SkyRL 0.3.0 writes them (tests/runtimes/skyrl_eval_dump.py, whose
names and keys tests/contract/test_skyrl_eval_contract.py reads out of SkyRL's own source)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from objectstores import ObjectStoreServer
from rlaunch.render import LaunchDocument, render_launch
from rlaunch.runtimes.skyrl_eval import eval_manifest
from rlaunch.runtimes.skyrl_outputs import OutputError
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.store.fs import open_location
from runtimes.skyrl_eval_dump import SAMPLES, eval_metrics, write_dump
from runtimes.test_skyrl_adapter import launch_in_store, write

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
EVAL_ENTRYPOINT = "skyrl.train.entrypoints.main_generate"
MEAN = (1.0 + 0.0 + 1.0) / 3


def eval_launch(store: str) -> LaunchDocument:
    spec = worked_example("colocated-1x8")
    spec["runtime"]["entrypoint"] = EVAL_ENTRYPOINT
    return LaunchDocument.parse(yaml.safe_load(
        render_launch(parse_spec(spec), store_prefix=store, launcher_commit=None)))


def read(uri: str) -> str:
    location = open_location(uri, what="test")
    return location.fs.cat_file(location.root).decode("utf-8")


def test_the_report_is_made_from_the_dump_skyrl_writes(tmp_path: Path) -> None:
    launch = eval_launch(str(tmp_path / "store"))
    folder = tmp_path / "export" / "dumped_evals" / "eval_only"
    write_dump(folder)
    manifest = eval_manifest(launch, folder, attempt_id="20261201T000000Z-abcdef",
                             wandb_url=None)
    export = launch.artifacts.export_root
    assert export == f"{tmp_path}/store/colocated-1x8/2026.11.29/export"
    report = json.loads(read(f"{export}/report.json"))
    assert report == {
        "schema_version": 1,
        "run": "colocated-1x8@2026.11.29",
        "fingerprint": launch.run.fingerprint,
        "runtime": f"skyrl {EVAL_ENTRYPOINT}",
        "data": "gsm8k-test-prompts@2026.11.30",
        "environment": "gsm8k",
        "rows": 3,
        "models": {"model": {"model": "qwen2.5-1.5b-instruct@2026.11.01",
                             "mean_reward": MEAN, "solved_fraction": 2 / 3,
                             "pass_at_1": 2 / 3}},
        "skyrl_metrics": eval_metrics(SAMPLES),
    }
    assert report["skyrl_metrics"]["eval/openai_gsm8k/avg_score"] == 0.5
    # One line per answer, files in name order (local.jsonl, then openai_gsm8k.jsonl).
    assert [json.loads(line) for line in read(f"{export}/samples.jsonl").splitlines()] == [
        {"model": "model", "data_source": "local", "prompt": "Cy runs 4 km... ####",
         "completion": "#### 8 ✓", "reward": 1.0, "stop_reason": "stop"},
        {"model": "model", "data_source": "openai/gsm8k", "prompt": "Ann has 3 apples... ####",
         "completion": "#### 1003", "reward": 1.0, "stop_reason": "stop"},
        {"model": "model", "data_source": "openai/gsm8k", "prompt": "Bo has 2 pens... ####",
         "completion": "#### 5", "reward": 0.0, "stop_reason": "length"},
    ]
    assert {key: manifest[key] for key in ("status", "run_id", "final_step", "export_path",
                                           "report_path", "mean_reward", "rows",
                                           "weights_sha256")} == {
        "status": "succeeded", "run_id": "colocated-1x8@2026.11.29", "final_step": None,
        "export_path": export, "report_path": f"{export}/report.json", "mean_reward": MEAN,
        "rows": 3, "weights_sha256": None,
    }
    assert sorted(manifest["export_files"]) == ["report.json", "samples.jsonl"]


def test_a_dump_that_is_not_what_skyrl_scored_is_refused(tmp_path: Path) -> None:
    launch = eval_launch(str(tmp_path / "store"))
    folder = tmp_path / "dump"
    with pytest.raises(OutputError) as missing:
        eval_manifest(launch, folder, attempt_id="a", wandb_url=None)
    assert str(missing.value) == (
        f"SkyRL exited 0 but wrote no aggregated_results.jsonl in {folder}: its eval-only run "
        "dumps there only with trainer.dump_eval_results on, on the node its eval task ran on "
        "(main_generate's eval_entrypoint, a Ray task); run the eval on a one-node allocation, "
        "or with RLAUNCH_NODE_CACHE on a filesystem every node shares"
    )
    write_dump(folder)
    (folder / "local.jsonl").unlink()  # a per-source file lost: the mean is no longer SkyRL's
    with pytest.raises(OutputError) as short:
        eval_manifest(launch, folder, attempt_id="a", wandb_url=None)
    assert str(short.value) == (
        "the dumped samples' mean reward 0.5 is not SkyRL's eval/all/avg_score "
        f"{MEAN!r} in aggregated_results.jsonl: the dump is incomplete or from another run"
    )
    (folder / "local.jsonl").write_text(json.dumps({"input_prompt": "p", "output_response": "r",
                                                    "score": "1.0", "data_source": "local"})
                                        + "\n")
    with pytest.raises(OutputError) as typed:
        eval_manifest(launch, folder, attempt_id="a", wandb_url=None)
    assert str(typed.value) == (
        f"{folder}/local.jsonl:1: score '1.0' is neither a number nor a list of numbers"
    )
    assert not open_location(launch.artifacts.export_root, what="t").fs.exists(
        open_location(launch.artifacts.export_root, what="t").root)


def stand_in_skyrl(tmp_path: Path) -> Path:
    """A `skyrl.train.entrypoints.main_generate` that writes the dump as SkyRL does."""
    root = tmp_path / "stand-in"
    package = root / "skyrl" / "train" / "entrypoints"
    package.mkdir(parents=True)
    for folder in (root / "skyrl", root / "skyrl" / "train", package):
        (folder / "__init__.py").write_text("")
    (package / "main_generate.py").write_text(
        "import sys\nfrom skyrl_eval_dump import stand_in_main\nsys.exit(stand_in_main())\n")
    return root


def test_the_adapter_runs_the_eval_and_writes_the_report_into_the_store(
    s3_server: ObjectStoreServer, s3_store: str, tmp_path: Path
) -> None:
    launch: dict[str, Any] = launch_in_store(s3_store, tmp_path)
    launch["runtime"]["entrypoint"] = EVAL_ENTRYPOINT
    environment = {
        **os.environ, **s3_server.env(),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(HERE),
                                       str(stand_in_skyrl(tmp_path))]),
        "RLAUNCH_NODE_CACHE": str(tmp_path / "node-cache"),
        "RLAUNCH_SKYRL_HANDOFF_MODULE": "echo_argv",
        "RLAUNCH_ATTEMPT_ID": "20261201T000000Z-abcdef",
    }
    environment.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-m", "rlaunch.runtimes.skyrl",
                           str(write(launch, tmp_path))], env=environment,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    dump_root = tmp_path / "node-cache" / "evals" / "colocated-1x8-2026.11.29" / \
        "20261201T000000Z-abcdef"
    export = f"{s3_store}/colocated-1x8/2026.11.29/export"
    assert (f"rlaunch: eval stage: SkyRL dumps its results under "
            f"{dump_root}/dumped_evals/eval_only; the report goes to {export}") in done.stdout
    # The handoff check (echo_argv here) got the same overrides, export_path node-local.
    [checked] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    assert f"trainer.export_path={json.dumps(str(dump_root))}" in checked
    assert "stand-in: dumped 3 eval samples" in done.stdout
    assert (f"rlaunch: done: eval of 3 samples, mean reward 0.6667; report "
            f"{export}/report.json; manifest {launch['artifacts']['terminal_manifest']}"
            ) in done.stdout
    report = json.loads(read(f"{export}/report.json"))
    assert report["models"]["model"]["mean_reward"] == MEAN
    manifest = json.loads(read(launch["artifacts"]["terminal_manifest"]))
    assert (manifest["status"], manifest["report_path"]) == ("succeeded",
                                                             f"{export}/report.json")
