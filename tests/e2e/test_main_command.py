"""The README's main job, for real: `./pants run experiments/countdown:launch` builds the
countdown artifacts, submits to a local Ray head, trains with GRPO, exports, and says where
everything is; its smoke run, launched first, records the success its full run relies on.

The artifacts are built once for the session from an empty store (`countdown_inputs`, the same
builders through `./pants run` of the SFT model); the smoke run finds them in its store and
reuses them. Both runs are submitted to the session's countdown head (`countdown_head`)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

PantsRunner = Callable[..., "subprocess.CompletedProcess[str]"]


def test_smoke_then_main_command_train_export_and_record(
    pants: PantsRunner, repo_root: Path, distdir: str,
    countdown_inputs: tuple[Path, subprocess.CompletedProcess[str]], countdown_store: Path,
    countdown_head: Path,
) -> None:
    store = countdown_store
    env = {"RLAUNCH_STORE": str(store), "RLAUNCH_LOCAL_HEAD_DIR": str(countdown_head)}
    built = countdown_inputs[1]
    assert "built sft_model@2026.11.30.1" in built.stdout + built.stderr

    smoke = pants(f"--pants-distdir={distdir}", "run", "experiments/countdown:smoke", env=env)
    assert smoke.returncode == 0, smoke.stdout[-3000:] + smoke.stderr[-3000:]
    assert "sft_model@2026.11.30.1 up to date" in smoke.stdout + smoke.stderr
    assert "built sft_model" not in smoke.stdout + smoke.stderr
    assert "countdown-grpo-smoke@dev attempt" in smoke.stderr
    assert "rlaunch: reusing the local Ray head at " in smoke.stderr
    assert ": SUCCEEDED" in smoke.stderr

    launch = pants(f"--pants-distdir={distdir}", "run", "experiments/countdown:launch", env=env)
    output = launch.stdout + launch.stderr
    assert launch.returncode == 0, output[-6000:]
    # Built once, reused by both runs.
    assert "built sft_model" not in output
    assert "step 60/60 | reward " in launch.stdout
    assert ": SUCCEEDED" in launch.stderr

    run_root = store / "countdown-grpo" / "dev"
    assert f"manifest {run_root / 'terminal.json'}" in launch.stdout
    manifest = json.loads((run_root / "terminal.json").read_text())
    assert manifest["final_step"] == 60
    export = run_root / "export"
    assert sorted(p.name for p in export.iterdir()) >= [
        "config.json", "model.safetensors", "tokenizer.json"]
    (attempt,) = (run_root / "attempts").iterdir()
    metrics = (attempt / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in metrics if '"step"' in line][-1] == 60
    yaml_path = repo_root / distdir / "experiments/countdown/launch/launch.yaml"
    assert f"checkpoint_root: {run_root / 'checkpoints'}" in yaml_path.read_text()
    curves = yaml_path.parent / "curves.png"
    assert (f"rlaunch: curves of countdown-grpo@dev (reward, eval reward, KL by step): {curves}"
            in launch.stderr)
    assert curves.read_bytes().startswith(b"\x89PNG")
    # The last line says where the time went, the job's runtime phases among them.
    last = launch.stderr.strip().splitlines()[-1]
    assert last.startswith("rlaunch: timings of countdown-grpo@dev ("), last
    assert ", inputs " in last and " (its runtime: reading inputs " in last, last
    assert last.endswith(" s") and ", curves " in last, last

    ledger = json.loads((store / "_ledger" / "countdown-grpo" / "dev.json").read_text())
    assert ledger["status"] == "SUCCEEDED"
    (smoke_result,) = ledger["smoke_results"]
    assert smoke_result["smoke"] == "countdown-grpo-smoke@dev"
    assert smoke_result["status"] == "SUCCEEDED"
