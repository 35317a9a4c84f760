"""The smoke runtime end to end in this process, on a private Ray head (smoke/__main__.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from safetensors.torch import load_file

from rlaunch.models.tiny import load_pretrained, weights_sha256
from rlaunch.runtimes.smoke.__main__ import main
from rlaunch.store import RECORD_FILE

from .demo import build_inputs, render_smoke, smoke_spec, write_records
from .smoke_helpers import TINY_SPEC, write_launch


def test_colocated_run_writes_checkpoints_export_metrics_and_manifest(finished_run) -> None:
    path, document, status, _ = finished_run
    assert status == 0
    artifacts = document["artifacts"]
    manifest = json.loads(Path(artifacts["terminal_manifest"]).read_text())
    assert manifest["status"] == "succeeded"
    assert manifest["run_id"] == "countdown-smoke@dev"
    assert manifest["fingerprint"] == document["run"]["fingerprint"]
    assert manifest["runtime_fingerprint"] == document["runtime"]["fingerprint"]
    assert manifest["final_step"] == 8 and manifest["export_path"] == artifacts["export_root"]
    assert manifest["metrics"]["steps"] == 8
    assert set(manifest["metrics"]["eval"]) == {"initial", "final"}
    # Where the attempt's time went, in the order the phases first ended.
    timings = manifest["metrics"]["timings_s"]
    assert [name for name, _ in timings] == [
        "reading inputs", "connecting to Ray", "workers", "evals", "training", "checkpoints",
        "export", "stopping workers"]
    assert all(seconds >= 0 for _, seconds in timings)
    model, _ = load_pretrained(artifacts["export_root"])
    assert weights_sha256(model.state_dict()) == manifest["weights_sha256"]

    root = Path(artifacts["checkpoint_root"])
    assert sorted(p.name for p in root.iterdir()) == [
        "global_step_6", "global_step_8", "latest_ckpt_global_step.txt", "runtime.json"]
    assert (root / "latest_ckpt_global_step.txt").read_text() == "8\n"
    assert json.loads((root / "runtime.json").read_text())["runtime_fingerprint"] == \
        document["runtime"]["fingerprint"]
    step = root / "global_step_8"
    assert sorted(p.name for p in (step / "policy_rank1").iterdir()) == [
        "model.safetensors", "optimizer.pt", "rng.pt"]
    state = json.loads((step / "trainer_state.json").read_text())
    assert state["global_step"] == 8
    assert state["data_position"] == {"batch_in_epoch": 8, "consumed_prompts": 32, "epoch": 0,
                                      "steps_per_epoch": 16}
    # Data parallel ranks all-reduce their gradients: they end with the same weights.
    ranks = [weights_sha256(load_file(str(step / f"policy_rank{r}" / "model.safetensors")))
             for r in (0, 1)]
    assert ranks == [manifest["weights_sha256"]] * 2

    lines = [json.loads(line) for line in Path(manifest["metrics_path"]).read_text().splitlines()]
    steps = [line for line in lines if "step" in line and "eval" not in line]
    assert [line["step"] for line in steps] == list(range(1, 9))
    assert {"reward_mean", "kl", "policy_loss", "tokens_per_s", "step_time_s"} <= set(steps[0])
    assert [line["eval"] for line in lines if "eval" in line] == ["initial", "final"]
    assert (Path(manifest["metrics_path"]).parent / "launch.yaml").read_text() == path.read_text()


def test_console_shows_the_placement_and_one_line_per_step(finished_run) -> None:
    console = finished_run[3]
    assert "colocated-node0 (2 x GPU, STRICT_PACK): gpu0=policy:0,ref:0,rollout:0; " \
           "gpu1=policy:1,ref:1,rollout:1" in console
    steps = [line for line in console.splitlines() if line.startswith("step ")]
    assert [line.split(" |")[0] for line in steps] == [f"step {n}/8" for n in range(1, 9)]
    assert all(" | reward " in line and " | kl " in line and " | loss " in line
               and " tok/s | " in line and line.endswith(" s/step") for line in steps)
    assert console.splitlines()[-1].startswith("timings: reading inputs ")


def test_resume_from_path_ends_with_the_same_weights(finished_run, tiny_model_dir: Path,
                                                     tmp_path: Path, capsys) -> None:
    first = finished_run[1]
    first_manifest = json.loads(Path(first["artifacts"]["terminal_manifest"]).read_text())
    spec = smoke_spec(**TINY_SPEC)
    spec["version"] = "resumed"
    spec["resume"] = {"mode": "from_path", "compatible_runtimes": [],
                      "path": str(Path(first["artifacts"]["checkpoint_root"]) / "global_step_6")}
    text, document = render_smoke(spec, str(tmp_path))
    build_inputs(document, train_rows=64, eval_rows=16, model_source=tiny_model_dir)
    (tmp_path / "launch.yaml").write_text(text)
    assert main([str(tmp_path / "launch.yaml")]) == 0
    out = capsys.readouterr().out
    assert "training steps 7..8" in out and "step 7/8 |" in out and "step 6/8 |" not in out
    manifest = json.loads(Path(document["artifacts"]["terminal_manifest"]).read_text())
    assert manifest["weights_sha256"] == first_manifest["weights_sha256"]


def test_disaggregated_megatron_plan_with_kl_in_reward_runs_on_separate_gpus(
    ray_head, tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    path, document = write_launch(
        tmp_path, tiny_model_dir, gpus_per_node=3, policy_gpus_per_node=2, colocate_all=False,
        strategy="megatron", policy_tp=2, num_engines=1, use_kl_loss=False,
        use_kl_in_reward=True, advantage_estimator="rloo", max_training_steps=2,
    )
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "placement (3 simulated GPUs):\n" \
           "policy-node0 (2 x GPU, STRICT_PACK): gpu0=policy:0,ref:0; gpu1=policy:1,ref:1\n" \
           "rollout-engine0 (1 x GPU, STRICT_PACK): gpu2=rollout:0\n" in out
    assert "step 2/2 |" in out


def test_a_plan_the_cluster_cannot_place_exits_1(ray_head, tiny_model_dir: Path, tmp_path: Path,
                                                 capsys, monkeypatch) -> None:
    monkeypatch.setenv("SKYRL_RAY_PG_TIMEOUT_IN_S", "2")
    path, document = write_launch(tmp_path, tiny_model_dir, gpus_per_node=8,
                                  micro_train_batch_size_per_gpu=1)
    assert main([str(path)]) == 1
    err = capsys.readouterr().err
    assert "error: cannot place the role plan of countdown-smoke@dev: placement group(s) not " \
           "ready after 2 s: colocated-node0 (8 x {GPU: 1, CPU: 0.1}, STRICT_PACK)" in err
    assert not Path(document["artifacts"]["terminal_manifest"]).exists()


def test_missing_inputs_exit_2_before_ray_is_touched(tiny_model_dir: Path, tmp_path: Path,
                                                     capsys) -> None:
    path, document = write_launch(tmp_path, tiny_model_dir)
    data = Path(document["inputs"]["train_data"]["uri"])
    (data / "train.parquet").unlink()
    assert main([str(path)]) == 2
    assert capsys.readouterr().err.startswith(
        f"error: inputs.train_data: countdown-smoke-data@dev at {data} does not match its record "
        "(train.parquet: missing); "
    )
    # A record that agrees with the folder passes the store's check; the format check remains.
    write_records(document)
    assert main([str(path)]) == 2
    assert capsys.readouterr().err == (
        f"error: inputs.train_data.uri is {data}: expected train.parquet there (it has "
        "eval.parquet); build the dataset artifact first (a countdown_data builder writes "
        "train.parquet and eval.parquet)\n"
    )


def test_an_input_without_a_build_record_exits_2(tiny_model_dir: Path, tmp_path: Path,
                                                  capsys) -> None:
    path, document = write_launch(tmp_path, tiny_model_dir)
    model = Path(document["inputs"]["model"]["uri"])
    (model / RECORD_FILE).unlink()
    assert main([str(path)]) == 2
    assert capsys.readouterr().err.startswith(
        f"error: inputs.model: countdown-smoke-sft@dev is not built: {model} has files but no "
        f"build record ({RECORD_FILE} is written last by a finished build)"
    )
    assert not Path(document["artifacts"]["attempts_root"]).exists()


def test_a_root_from_another_runtime_is_refused(tiny_model_dir: Path, tmp_path: Path,
                                                capsys) -> None:
    path, document = write_launch(tmp_path, tiny_model_dir)
    root = Path(document["artifacts"]["checkpoint_root"])
    (root / "global_step_2").mkdir(parents=True)
    (root / "runtime.json").write_text(json.dumps({"runtime_fingerprint": "sha256:other"}))
    assert main([str(path)]) == 2
    err = capsys.readouterr().err
    assert f"error: checkpoint root {root} was written by runtime sha256:other" in err


def test_usage(capsys) -> None:
    assert main([]) == 2
    assert capsys.readouterr().err == "usage: python -m rlaunch.runtimes.smoke LAUNCH_YAML\n"


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed")
def test_a_calendar_run_logs_without_wandb_and_runs_once(ray_head, tiny_model_dir: Path,
                                                         tmp_path: Path, capsys) -> None:
    path, document = write_launch(tmp_path, tiny_model_dir, version="2026.11.29",
                                  logger="wandb", max_training_steps=1)
    assert document["skyrl"]["trainer"]["logger"] == "wandb"
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "wandb: not installed; logging to the console and metrics.jsonl only\n" in out
    assert "step 1/1 |" in out
    manifest_path = Path(document["artifacts"]["terminal_manifest"])
    manifest = json.loads(manifest_path.read_text())
    assert manifest["status"] == "succeeded"
    # The second launch of the finished calendar version is refused before anything starts.
    assert main([str(path)]) == 2
    assert capsys.readouterr().err == (
        f"error: countdown-smoke@2026.11.29 already finished: its terminal manifest "
        f"{manifest_path} is written (final step 1, attempt {manifest['attempt_id']}, weights "
        f"{manifest['weights_sha256']}); a calendar version runs once. To train again, bump "
        "run.version (e.g. 2026.11.29.1) or use a dev version\n"
    )
    assert json.loads(manifest_path.read_text()) == manifest
