"""The real experiments through the real ./pants: check, package, run, and the dependency graph."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from conftest import BROKEN_FIXTURES
from test_packaged_bytes import STORE as GOLDEN_STORE

from contract.skyrl_env import contract_python
from rlaunch.render import skyrl_cli_args

PantsRunner = Callable[..., "subprocess.CompletedProcess[str]"]

RUNS = (
    "experiments/countdown:launch",
    "experiments/countdown:smoke",
    # The points of the countdown sweep (rl_sweep_runs) and its one smoke.
    "experiments/countdown:sweep-kl0.001-lr0.0003",
    "experiments/countdown:sweep-kl0.001-lr0.001",
    "experiments/countdown:sweep-kl0.01-lr0.0003",
    "experiments/countdown:sweep-kl0.01-lr0.001",
    "experiments/countdown:sweep-smoke",
    # The countdown pipeline: stage 2 reads stage 1's export.
    "experiments/countdown/chain:chain-grpo1",
    "experiments/countdown/chain:chain-grpo2",
    "experiments/qwen2.5-1.5b-gsm8k:grpo",
    "experiments/qwen2.5-1.5b-gsm8k:smoke",
    # :grpo on SkyRL 0.4.0, at a fresh version.
    "experiments/qwen2.5-1.5b-gsm8k:grpo-skyrl-0.4.0",
    "experiments/qwen2.5-1.5b-gsm8k:smoke-skyrl-0.4.0",
    "experiments/qwen2.5-1.5b-gsm8k:grpo-stage2",
    "experiments/qwen2.5-1.5b-gsm8k:stage2-smoke",
    # Eval stages on GPUs (SkyRL's eval-only entrypoint) of :grpo's and :grpo-stage2's exports.
    "experiments/qwen2.5-1.5b-gsm8k:grpo-eval",
    "experiments/qwen2.5-1.5b-gsm8k:grpo-eval-smoke",
    "experiments/qwen2.5-1.5b-gsm8k:grpo-stage2-eval",
    "experiments/qwen2.5-1.5b-gsm8k:grpo-stage2-eval-smoke",
    "experiments/qwen2.5-1.5b-instruct-ref-2x8:grpo",
    "experiments/qwen2.5-1.5b-instruct-ref-2x8:smoke",
    "experiments/qwen2.5-14b-separate-ref:grpo",
    "experiments/qwen2.5-14b-separate-ref:smoke",
    "experiments/qwen3-30b-a3b-megatron:grpo",
    "experiments/qwen3-30b-a3b-megatron:smoke",
)
# The countdown runs (experiments/countdown and its chain/) are on the smoke runtime; the rest
# are SkyRL runs.
COUNTDOWN = ("experiments/countdown:", "experiments/countdown/")
# The GPU runs name their own store, so $RLAUNCH_STORE changes none of their bytes; it is part of
# the render process' cache key (rlaunch_pants.goals.package.STORE_ENV). Packaged with the
# goldens' store, as test_packaged_bytes packages them, the render processes of one test are
# cache hits for the other (~0.7 s each on a fresh cache).
GPU_RUN_ENV = {"RLAUNCH_STORE": GOLDEN_STORE}


def run_harness(repo_root: Path, harness: str, cases: Path, tmp_path: Path,
                release: str = "0.3.0") -> dict[str, Any]:
    """The per-case results of a tests/contract harness run on `cases` in the SkyRL contract
    env of `release` (the real torch and ray there)."""
    result_path = tmp_path / f"result-{release}.json"
    done = subprocess.run(
        [contract_python(release), str(repo_root / "tests/contract" / harness), str(cases),
         str(result_path)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(result_path.read_text())
    assert report.get("skyrl_version", release) == release
    results: dict[str, Any] = report["results"]
    return results


def test_every_experiment_passes_a_whole_repo_check(pants: PantsRunner) -> None:
    result = pants("check", "::")
    assert result.returncode == 0, result.stderr
    assert "✓ rlaunch-preflight succeeded." in result.stderr
    for run in RUNS:
        assert f"- {run}:\n{run} (" in result.stderr, run
    # The broken recipes under tests/fixtures are out of `::` (pants.toml ignores them).
    assert "tests/fixtures" not in result.stderr


def test_everything_parses_broken_recipes_included(pants: PantsRunner) -> None:
    result = pants(*BROKEN_FIXTURES, "list", "::")
    assert result.returncode == 0, result.stderr
    listed = set(result.stdout.split())
    assert set(RUNS) <= listed
    assert "tests/fixtures/broken:tp8-on-12-heads" in listed


def test_address_fields_are_dependencies(pants: PantsRunner) -> None:
    result = pants("dependencies", "experiments/qwen2.5-1.5b-gsm8k:grpo")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "build-support:prelude",
        "experiments/datasets:gsm8k-test-prompts",
        "experiments/datasets:gsm8k-train-prompts",
        "experiments/models/qwen2.5-1.5b-instruct:qwen2.5-1.5b-instruct",
        "experiments/qwen2.5-1.5b-gsm8k:colocated-1x8",
        "experiments/qwen2.5-1.5b-gsm8k:h100-1x8",
        # The run's `skyrl_settings` target.
        "experiments/runtimes:h100-gsm8k",
        "experiments/runtimes:skyrl-0.3.0",
    ]
    result = pants("dependents", "--transitive", "experiments/countdown:char_tokenizer")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "experiments/countdown:launch",
        "experiments/countdown:sft_model",
        "experiments/countdown:smoke",
        "experiments/countdown:sweep",
        "experiments/countdown:sweep-kl0.001-lr0.0003",
        "experiments/countdown:sweep-kl0.001-lr0.001",
        "experiments/countdown:sweep-kl0.01-lr0.0003",
        "experiments/countdown:sweep-kl0.01-lr0.001",
        "experiments/countdown:sweep-smoke",
        "experiments/countdown/chain:chain-eval",
        "experiments/countdown/chain:chain-grpo1",
        "experiments/countdown/chain:chain-grpo2",
    ]


def test_a_separate_reference_model_is_a_dependency_and_the_rendered_reference(
    pants: PantsRunner, repo_root: Path, distdir: str
) -> None:
    run = "experiments/qwen2.5-1.5b-instruct-ref-2x8:grpo"
    result = pants("dependencies", run)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "build-support:prelude",
        "experiments/datasets:gsm8k-test-prompts",
        "experiments/datasets:gsm8k-train-prompts",
        "experiments/models/qwen2.5-1.5b-instruct:qwen2.5-1.5b-instruct",
        "experiments/models/qwen2.5-1.5b:qwen2.5-1.5b",
        "experiments/qwen2.5-1.5b-instruct-ref-2x8:colocated-2x8",
        "experiments/qwen2.5-1.5b-instruct-ref-2x8:h100-2x8",
        "experiments/runtimes:h100-gsm8k",
        "experiments/runtimes:skyrl-0.3.0",
    ]
    result = pants(f"--pants-distdir={distdir}", "package", run, env=GPU_RUN_ENV)
    assert result.returncode == 0, result.stderr
    folder = repo_root / distdir / "experiments/qwen2.5-1.5b-instruct-ref-2x8/grpo"
    assert (folder / "identities.txt").read_text() == (
        "run  gsm8k-grpo-qwen2.5-1.5b-base-instruct-ref@2026.11.29\n"
        "model  qwen2.5-1.5b@2026.11.01\n"
        "tokenizer  qwen2.5-1.5b@2026.11.01\n"
        "reference_model  qwen2.5-1.5b-instruct@2026.11.01\n"
        "train_data  gsm8k-train-prompts@2026.11.30\n"
        "train_data.deps.source  gsm8k-train@2026.11.01\n"
        "eval_data  gsm8k-test-prompts@2026.11.30\n"
        "eval_data.deps.source  gsm8k-test@2026.11.01\n"
    )
    spec = json.loads((folder / "spec.json").read_text())
    assert spec["model"]["repo_id"] == "Qwen/Qwen2.5-1.5B"
    assert spec["reference_model"]["repo_id"] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert spec["reference_model"]["revision"] == "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
    # The runtime's reference loads the Instruct weights, the policy the base ones.
    store = "gs://rl-posttraining-store/rlaunch"
    yaml_text = (folder / "launch.yaml").read_text()
    assert f"    ref:\n      model:\n        path: {store}/qwen2.5-1.5b-instruct/2026.11.01\n" in (
        yaml_text
    )
    assert f"      model:\n        path: {store}/qwen2.5-1.5b/2026.11.01\n" in yaml_text
    # SkyRL's PromptDataset reads the runtime-format file inside the prompt artifact.
    assert (
        f"  data:\n    train_data:\n    - {store}/gsm8k-train-prompts/2026.11.30/prompts.parquet\n"
        f"    val_data:\n    - {store}/gsm8k-test-prompts/2026.11.30/prompts.parquet\n"
    ) in yaml_text


def test_every_run_declares_extra_skyrl_settings(pants: PantsRunner) -> None:
    result = pants("peek", *RUNS)
    assert result.returncode == 0, result.stderr
    targets = json.loads(result.stdout)
    assert sorted(target["address"] for target in targets) == sorted(RUNS)
    for target in targets:
        assert target["settings"], target["address"]
    # The GPU runs share a skyrl_settings target; the countdown runs write their own.
    shared = [t["address"] for t in targets if t["skyrl_settings"]]
    assert shared and all(not address.startswith(COUNTDOWN) for address in shared)


def test_peek_shows_the_fields_as_written(pants: PantsRunner) -> None:
    result = pants("peek", "experiments/countdown:sft_model")
    assert result.returncode == 0, result.stderr
    assert '"deps": {\n      "data": ":countdown_data",' in result.stdout
    assert '"builder": "sft_model"' in result.stdout


def test_help_documents_the_run_target(pants: PantsRunner) -> None:
    result = pants("help", "rl_run")
    assert result.returncode == 0, result.stderr
    for text in ("`rl_run` target", "role_plan", "smoke_of", "resume", "run uncached"):
        assert text in " ".join(result.stdout.split()), text
    # The world rules `check` skips, as the library registers them (VER005 included).
    for code in ("VER002", "VER003", "VER004", "VER005", "EXEC004"):
        assert f"\n    {code}: " in result.stdout, code
    # Each field's help ends with the line a BUILD file writes.
    assert '\n        reference_model="experiments/models/qwen2.5-1.5b-instruct",\n' in (
        result.stdout
    )
    result = pants("help", "rlaunch-preflight")
    assert result.returncode == 0, result.stderr
    assert "The rules that depend on the world are NOT run by `check`" in " ".join(
        result.stdout.split()
    )
    for code in ("VER002", "VER003", "VER004", "VER005", "EXEC004"):
        assert f"\n    {code}: " in result.stdout, code


def test_packaging_twice_gives_identical_bytes(
    pants: PantsRunner, repo_root: Path, distdir: str
) -> None:
    targets = ("experiments/countdown:launch", "experiments/qwen3-30b-a3b-megatron:grpo")
    first = pants(f"--pants-distdir={distdir}", "package", *targets)
    assert first.returncode == 0, first.stderr
    folder = repo_root / distdir / "experiments/qwen3-30b-a3b-megatron/grpo"
    assert sorted(path.name for path in folder.iterdir()) == [
        "identities.txt",
        "launch.yaml",
        "spec.json",
    ]
    before = {
        path: path.read_bytes() for path in (repo_root / distdir).rglob("*") if path.is_file()
    }
    shutil.rmtree(repo_root / distdir)
    # Without the process cache, so that the YAML is rendered again, not copied from the cache.
    second = pants("--no-local-cache", f"--pants-distdir={distdir}", "package", *targets)
    assert second.returncode == 0, second.stderr
    after = {path: path.read_bytes() for path in (repo_root / distdir).rglob("*") if path.is_file()}
    assert after == before
    assert (folder / "identities.txt").read_text() == (
        "run  gsm8k-grpo-qwen3-30b-a3b@2026.11.29\n"
        "model  qwen3-30b-a3b@2026.11.01\n"
        "tokenizer  qwen3-30b-a3b@2026.11.01\n"
        "train_data  gsm8k-train-prompts@2026.11.30\n"
        "train_data.deps.source  gsm8k-train@2026.11.01\n"
        "eval_data  gsm8k-test-prompts@2026.11.30\n"
        "eval_data.deps.source  gsm8k-test@2026.11.01\n"
    )


def test_run_dry_run_preflights_and_writes_the_yaml(
    pants: PantsRunner, repo_root: Path, distdir: str, tmp_path: Path
) -> None:
    result = pants(
        f"--pants-distdir={distdir}",
        "run",
        "experiments/countdown:launch",
        "--",
        "--dry-run",
        env={"RLAUNCH_STORE": str(tmp_path / "store")},
    )
    assert result.returncode == 0, result.stderr
    written = repo_root / distdir / "experiments/countdown/launch/launch.yaml"
    assert f"wrote {written}" in result.stderr and "nothing submitted" in result.stderr
    assert f"  store_prefix: {tmp_path / 'store'}\n" in written.read_text()


def test_run_builds_an_artifact_then_reuses_it(pants: PantsRunner, tmp_path: Path) -> None:
    env = {"RLAUNCH_STORE": str(tmp_path / "store")}
    first = pants("run", "experiments/countdown:char_tokenizer", env=env)
    assert first.returncode == 0, first.stderr
    assert "char_tokenizer@2026.11.29.1: 1 built, 0 up to date" in first.stdout
    again = pants("run", "experiments/countdown:char_tokenizer", env=env)
    assert again.returncode == 0, again.stderr
    assert "char_tokenizer@2026.11.29.1: 0 built, 1 up to date" in again.stdout
    fingerprint = [line for line in first.stdout.splitlines() if "fingerprint:" in line]
    assert fingerprint and fingerprint == [
        line for line in again.stdout.splitlines() if "fingerprint:" in line
    ]


def test_skyrl_accepts_every_packaged_gpu_launch_yaml(
    pants: PantsRunner, repo_root: Path, distdir: str, tmp_path: Path
) -> None:
    """Every SkyRL run's packaged launch YAML, as ./pants writes it, through its own release's
    loader and validate_cfg (SkyRL 0.3.0 or 0.4.0, as the run pins) in that release's contract
    env (tests/contract/skyrl_harness.py), in both the YAML and the command-line form; its data
    are the runtime-format .parquet files."""
    runs = [run for run in RUNS if not run.startswith(COUNTDOWN)]
    result = pants(f"--pants-distdir={distdir}", "package", *runs, env=GPU_RUN_ENV)
    assert result.returncode == 0, result.stderr
    cases: dict[str, dict[str, Any]] = {}
    releases: dict[str, list[str]] = {}
    for run in runs:
        folder, name = run.split(":")
        document = yaml.safe_load((repo_root / distdir / folder / name / "launch.yaml").read_text())
        skyrl = document["skyrl"]
        # Each run declares extra settings; each reaches the subtree at its dotted name.
        spec = json.loads((repo_root / distdir / folder / name / "spec.json").read_text())
        assert spec["settings"], run
        release = spec["runtime"]["package"].removeprefix("skyrl==")
        assert document["runtime"]["package"] == f"skyrl=={release}"
        releases.setdefault(release, []).append(run)
        for setting, value in spec["settings"].items():
            held = skyrl
            for part in setting.split("."):
                held = held[part]
            assert held == value, (run, setting)
        data = skyrl["data"]["train_data"] + skyrl["data"]["val_data"]
        assert data and all(path.endswith("/prompts.parquet") for path in data), (run, data)
        # With wandb, validate_cfg reads WANDB_API_KEY: a launch-time fact, not a config one.
        skyrl["trainer"]["logger"] = "console"
        cases[run] = {"skyrl": skyrl, "cli_args": skyrl_cli_args(skyrl)}
    # Runs on both releases, each through its own release's parser and validator.
    assert sorted(releases) == ["0.3.0", "0.4.0"]
    results: dict[str, Any] = {}
    for release, pinned in releases.items():
        cases_path = tmp_path / f"cases-{release}.yaml"
        cases_path.write_text(yaml.safe_dump({run: cases[run] for run in pinned}, sort_keys=False))
        results.update(run_harness(repo_root, "skyrl_harness.py", cases_path, tmp_path, release))
    refused = {run: outcome["error"] for run, outcome in results.items() if not outcome["accepted"]}
    assert refused == {}
    assert all(outcome["cli_equals_yaml"] is True for outcome in results.values())
    # SkyRL holds every key as written, the settings included.
    assert {run: outcome["held"] for run, outcome in results.items()} == {
        run: case["skyrl"] for run, case in cases.items()}
    assert sorted(results) == sorted(runs)


def test_a_gpu_eval_stage_packages_a_yaml_skyrls_eval_entrypoint_accepts(
    pants: PantsRunner, repo_root: Path, distdir: str, tmp_path: Path
) -> None:
    """`./pants package` of the GSM8K eval of :grpo's export writes a launch YAML on SkyRL's
    eval-only entrypoint whose model is :grpo's export; its overrides, with the node-local
    export path the skyrl adapter gives SkyRL, pass `main_generate.main`'s own steps
    (tests/contract/eval_harness.py) and load the eval dataset."""
    run = "experiments/qwen2.5-1.5b-gsm8k:grpo-eval"
    result = pants(f"--pants-distdir={distdir}", "package", run, env=GPU_RUN_ENV)
    assert result.returncode == 0, result.stderr
    folder = repo_root / distdir / "experiments/qwen2.5-1.5b-gsm8k/grpo-eval"
    document = yaml.safe_load((folder / "launch.yaml").read_text())
    store = "gs://rl-posttraining-store/rlaunch"
    assert document["runtime"]["entrypoint"] == "skyrl.train.entrypoints.main_generate"
    assert document["run"]["id"] == "gsm8k-grpo-eval-qwen2.5-1.5b@2026.11.29"
    model = document["inputs"]["model"]
    assert (model["type"], model["identity"], model["uri"]) == (
        "run_export", "gsm8k-grpo-qwen2.5-1.5b@2026.11.29",
        f"{store}/gsm8k-grpo-qwen2.5-1.5b/2026.11.29/export")
    assert document["artifacts"]["export_root"] == \
        f"{store}/gsm8k-grpo-eval-qwen2.5-1.5b/2026.11.29/export"
    skyrl = document["skyrl"]
    skyrl["trainer"]["logger"] = "console"  # wandb: SkyRL reads WANDB_API_KEY at launch
    skyrl["trainer"]["export_path"] = str(tmp_path / "node-cache" / "evals")
    cases_path = tmp_path / "cases.json"
    cases_path.write_text(json.dumps({run: {"cli_args": skyrl_cli_args(skyrl)}}))
    outcome = run_harness(repo_root, "eval_harness.py", cases_path, tmp_path)[run]
    assert outcome["accepted"], outcome
    held = outcome["held"]
    assert (held["policy_model_path"], held["val_data"], held["eval_interval"],
            held["engine_gpus"], held["loads_eval_dataset"]) == (
        f"{store}/gsm8k-grpo-qwen2.5-1.5b/2026.11.29/export",
        [f"{store}/gsm8k-test-prompts/2026.11.30/prompts.parquet"], 10, [8, 1, 1, 1], True)
