"""An eval stage on SkyRL, through SkyRL 0.3.0's own eval-only entrypoint on this CPU: the files
SkyRL writes, and the report the adapter makes of them (rlaunch.runtimes.skyrl_eval).

In the SkyRL rehearsal env (scripts/skyrl-rehearsal-env), on the session's local Ray head
(tests/e2e/conftest.py, skyrl_head: rlaunch.executors.local_head, as a rehearsal starts it; the
eval's colocation group takes one of its two simulated GPUs), `python -m
rlaunch.runtimes.skyrl_cpu skyrl.train.entrypoints.main_generate <overrides>` runs what
`main_generate.main` runs: `SkyRLTrainConfig.from_cli_overrides`, `validate_generator_cfg`,
`initialize_ray`, then in a Ray task SkyRL's `EvalOnlyEntrypoint` (tokenizer, PromptDataset,
colocation placement group, generator, `skyrl.train.evaluate.evaluate`, the gsm8k env's reward,
`dump_per_dataset_eval_results`), with only the inference engines on CPU
(rlaunch.runtimes.skyrl_cpu, 6.). The model is tests/contract/make_tiny_model.py's (2 layers,
random weights), the rows GSM8K problems of tests/gsm8kdata.py in the runtime format
(rlaunch.tasks.prompts), from two data sources. Once per module (Ray start and one eval of
three rows); the tests read what SkyRL wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import gsm8kdata
from contract.skyrl_env import REPO_ROOT, rehearsal_python
# Read out of each release's source by the contract test.
from contract.test_skyrl_eval_contract import DUMP_KEYS
from rlaunch.executors.local_head import read_record
from rlaunch.render import LaunchDocument, render_launch
from rlaunch.runtimes.skyrl_eval import dump_folder, eval_manifest
from rlaunch.runtimes.skyrl_outputs import OutputError
from rlaunch.runtimes.worker_env import JOB_CONFIG_ENV
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.store.fs import open_location
from rlaunch.tasks.parquet import write_prompts
from rlaunch.tasks.prompts import prompt_row

EVAL_ENTRYPOINT = "skyrl.train.entrypoints.main_generate"
SOURCES = ["openai/gsm8k", "openai/gsm8k", "local"]
PROMPTS = [f"<|im_start|>ss{apples}ss{more}.sss?'ssss.<|im_end|><|im_start|>sss"
           for apples, more in ((103, 1700), (104, 1707), (105, 1714))]
"""The prompts of `rows()` as SkyRL's dump has them: `tokenizer.decode` of the prompt's ids
(dump_per_dataset_eval_results), under make_tokenizer.py's word-level tokenizer and its ChatML
template."""
# What an eval stage's launch hands SkyRL (experiments/tiny-gsm8k's geometry: one simulated
# GPU, the policy and one engine colocated), at a rehearsal's sizes.
OVERRIDES = {
    "trainer.placement.colocate_all": "true",
    "trainer.placement.policy_num_gpus_per_node": "1",
    "trainer.placement.ref_num_gpus_per_node": "1",
    "generator.inference_engine.num_engines": "1",
    "trainer.eval_batch_size": "3",
    "trainer.eval_interval": "1",
    "trainer.dump_eval_results": "true",
    "generator.eval_sampling_params.max_generate_length": "24",
    "trainer.logger": "console",
    "environment.env_class": "gsm8k",
    "data.dataloader.num_workers": "0",
}


def rows() -> list[dict[str, Any]]:
    """Three GSM8K test problems as prompt_parquet writes them, the last from another source."""
    out = []
    for index, source in enumerate(SOURCES):
        problem = gsm8kdata.problem(100 + index)
        out.append(prompt_row(
            content=gsm8kdata.TEMPLATE.format(question=problem["question"]), env_class="gsm8k",
            method="rule", ground_truth=problem["answer"].rsplit("#### ", 1)[1].replace(",", ""),
            data_source=source, split="test", index=index))
    return out


class Evaluated:
    def __init__(self, root: Path, output: str) -> None:
        self.root = root
        self.output = output
        self.folder = dump_folder(root / "export")


@pytest.fixture(scope="module")
def evaluated(tiny_model: Path, skyrl_head: Path, tmp_path_factory: pytest.TempPathFactory
              ) -> Evaluated:
    python = rehearsal_python()
    root = tmp_path_factory.mktemp("skyrl-eval")
    write_prompts(root / "test.parquet", rows())
    record = read_record(skyrl_head)
    assert record is not None, skyrl_head
    # A driver of the head as a job's is (tests/runtimes/test_worker_env.py, on_head): the
    # head listens on 127.0.0.1 only, and Ray's workers import rlaunch from the job's path.
    src = str(REPO_ROOT / "src")
    env = {**os.environ, "RAY_ADDRESS": record.gcs_address, "PYTHONPATH": src,
           JOB_CONFIG_ENV: json.dumps({"runtime_env": {"env_vars": {"PYTHONPATH": src}},
                                       "metadata": {}}),
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
    overrides = {**OVERRIDES, "trainer.policy.model.path": str(tiny_model),
                 "data.val_data": json.dumps([str(root / "test.parquet")]),
                 "trainer.export_path": str(root / "export"),
                 "trainer.log_path": str(root / "logs")}
    done = subprocess.run(
        [python, "-m", "rlaunch.runtimes.skyrl_cpu", EVAL_ENTRYPOINT,
         *(f"{key}={value}" for key, value in overrides.items())],
        cwd=root, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    return Evaluated(root, done.stdout + done.stderr)


def eval_launch(store: str) -> LaunchDocument:
    spec = worked_example("colocated-1x8")
    spec["runtime"]["entrypoint"] = EVAL_ENTRYPOINT
    return LaunchDocument.parse(yaml.safe_load(
        render_launch(parse_spec(spec), store_prefix=store, launcher_commit=None)))


def read(uri: str) -> str:
    location = open_location(uri, what="test")
    return location.fs.cat_file(location.root).decode("utf-8")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_skyrls_eval_only_entrypoint_dumps_every_sample_per_data_source(
    evaluated: Evaluated,
) -> None:
    folder = evaluated.folder
    # evaluate's folder for global_step None, one file per sanitized data source, and the
    # aggregate (dump_per_dataset_eval_results).
    assert sorted(path.name for path in folder.iterdir()) == [
        "aggregated_results.jsonl", "local.jsonl", "openai_gsm8k.jsonl"]
    samples = {name: lines(folder / f"{name}.jsonl") for name in ("openai_gsm8k", "local")}
    assert [len(found) for found in samples.values()] == [2, 1]
    expected = rows()
    for found, want, prompt in zip([*samples["openai_gsm8k"], *samples["local"]], expected,
                                   PROMPTS):
        assert tuple(found) == DUMP_KEYS
        assert (found["env_class"], found["data_source"]) == ("gsm8k", want["data_source"])
        # The row's fields reach the env as extras, with SkyRL's max_turns.
        assert found["env_extras"] == {"data_source": want["data_source"],
                                       "reward_spec": want["reward_spec"],
                                       "extra_info": want["extra_info"], "max_turns": 1}
        # The prompt SkyRL decoded: the row's message under the model's chat template, in the
        # word-level tokenizer's words (make_tokenizer.py's corpus).
        assert found["input_prompt"] == prompt
        # 24 tokens (the rehearsal's max_generate_length), no eos of a random 2-layer model:
        # per-token rewards, all 0 (the gsm8k env finds no "#### <answer>").
        assert found["stop_reason"] == "length"
        assert found["score"] == [0.0] * 24
    [metrics] = lines(folder / "aggregated_results.jsonl")
    timings = [key for key in metrics if key.startswith(
        "eval/all/generate/trajectory_completion_time_")]
    assert timings == [f"eval/all/generate/trajectory_completion_time_{stat}"
                       for stat in ("mean", "p90", "max")]
    assert {key: metrics[key] for key in metrics if key not in timings} == {
        "eval/openai_gsm8k/avg_score": 0.0, "eval/openai_gsm8k/pass_at_1": 0.0,
        "eval/openai_gsm8k/mean_positive_reward": 0.0,
        "eval/local/avg_score": 0.0, "eval/local/pass_at_1": 0.0,
        "eval/local/mean_positive_reward": 0.0,
        "eval/all/avg_score": 0.0, "eval/all/pass_at_1": 0.0,
        "eval/all/mean_positive_reward": 0.0,
        "eval/all/generate/min_num_tokens": 24, "eval/all/generate/max_num_tokens": 24,
        "eval/all/generate/avg_num_tokens": 24.0, "eval/all/generate/std_num_tokens": 0.0,
        "eval/all/generate/avg_tokens_non_zero_rewards": 0.0,
        "eval/all/generate/avg_tokens_zero_rewards": 24.0,
        "eval/all/generate/avg_assistant_tokens": 24.0,
        "eval/all/generate/min_assistant_tokens": 24,
        "eval/all/generate/max_assistant_tokens": 24,
        "eval/all/generate/std_assistant_tokens": 0.0,
        "eval/all/generate/tokens_per_turn_mean": 24.0,
        "eval/all/generate/tokens_per_turn_std": 0.0,
        "eval/all/generate/tokens_per_turn_max": 24,
    }
    # SkyRL's main_generate logs the metrics its Ray task returned.
    assert "Metrics from eval only run: {'eval/openai_gsm8k/avg_score': 0.0" in evaluated.output


def test_the_report_is_made_from_the_dump_skyrl_wrote(evaluated: Evaluated,
                                                      tmp_path: Path) -> None:
    launch = eval_launch(str(tmp_path / "store"))
    manifest = eval_manifest(launch, evaluated.folder, attempt_id="20261201T000000Z-abcdef",
                             wandb_url=None)
    export = launch.artifacts.export_root
    assert export == f"{tmp_path}/store/colocated-1x8/2026.11.29/export"
    [metrics] = lines(evaluated.folder / "aggregated_results.jsonl")
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
                             "mean_reward": 0.0, "solved_fraction": 0.0, "pass_at_1": 0.0}},
        "skyrl_metrics": metrics,
    }
    # One line per answer SkyRL dumped, files in name order (local.jsonl, openai_gsm8k.jsonl).
    dumped = [*lines(evaluated.folder / "local.jsonl"),
              *lines(evaluated.folder / "openai_gsm8k.jsonl")]
    assert [json.loads(line) for line in read(f"{export}/samples.jsonl").splitlines()] == [
        {"model": "model", "data_source": sample["data_source"],
         "prompt": sample["input_prompt"], "completion": sample["output_response"],
         "reward": 0.0, "stop_reason": sample["stop_reason"]}
        for sample in dumped
    ]
    assert [sample["data_source"] for sample in dumped] == ["local", "openai/gsm8k",
                                                            "openai/gsm8k"]
    assert {key: manifest[key] for key in ("status", "run_id", "final_step", "export_path",
                                           "report_path", "mean_reward", "rows",
                                           "weights_sha256")} == {
        "status": "succeeded", "run_id": "colocated-1x8@2026.11.29", "final_step": None,
        "export_path": export, "report_path": f"{export}/report.json", "mean_reward": 0.0,
        "rows": 3, "weights_sha256": None,
    }
    assert sorted(manifest["export_files"]) == ["report.json", "samples.jsonl"]


def test_a_dump_that_is_not_what_skyrl_scored_is_refused(evaluated: Evaluated,
                                                         tmp_path: Path) -> None:
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
    # SkyRL's dump, one sample's score changed: the mean is no longer SkyRL's.
    shutil.copytree(evaluated.folder, folder)
    [local] = lines(folder / "local.jsonl")
    (folder / "local.jsonl").write_text(json.dumps(dict(local, score=1.0)) + "\n")
    with pytest.raises(OutputError) as changed:
        eval_manifest(launch, folder, attempt_id="a", wandb_url=None)
    assert str(changed.value) == (
        "the dumped samples' mean reward 0.3333333333333333 is not SkyRL's eval/all/avg_score "
        "0.0 in aggregated_results.jsonl: the dump is incomplete or from another run"
    )
    (folder / "local.jsonl").write_text(json.dumps(dict(local, score="1.0")) + "\n")
    with pytest.raises(OutputError) as typed:
        eval_manifest(launch, folder, attempt_id="a", wandb_url=None)
    assert str(typed.value) == (
        f"{folder}/local.jsonl:1: score '1.0' is neither a number nor a list of numbers"
    )
    assert not open_location(launch.artifacts.export_root, what="t").fs.exists(
        open_location(launch.artifacts.export_root, what="t").root)


def test_the_cpu_module_runs_only_skyrls_eval_only_entrypoint_as_a_program() -> None:
    # SkyRL's training entrypoint hands over to the module itself (override_entrypoint).
    done = subprocess.run(
        [rehearsal_python(), "-m", "rlaunch.runtimes.skyrl_cpu",
         "skyrl.train.entrypoints.main_base", "trainer.logger=console"],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}, capture_output=True,
        text=True, timeout=300, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-2:] == [
        "usage: python -m rlaunch.runtimes.skyrl_cpu skyrl.train.entrypoints.main_generate "
        "OVERRIDES...",
        "(SkyRL's training entrypoint, skyrl.train.entrypoints.main_base, hands over to this "
        "module itself: trainer.override_entrypoint=rlaunch.runtimes.skyrl_cpu)",
    ]
