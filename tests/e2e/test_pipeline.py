"""A pipeline for real: `./pants run experiments/countdown/chain:chain-eval` from a store that
holds only the countdown inputs (built once for the session) reuses the SFT model, launches GRPO
stage 1, records its export, launches stage 2 from it, then builds the eval report of the SFT
model and both exports; run again, it launches nothing and says so. The BUILD graph follows
the handoffs: every stage is a (transitive) dependent of the SFT model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

PantsRunner = Callable[..., "subprocess.CompletedProcess[str]"]

STAGE1 = "countdown-chain-grpo1@dev"
STAGE2 = "countdown-chain-grpo2@dev"
EVAL = "chain-eval@dev"
CHAIN = "experiments/countdown/chain"
RESULT = r"SUCCEEDED in \d+ s \| 8 steps, reward (\d\.\d{3}) -> \d\.\d{3}, eval \d\.\d{3}"


def test_the_countdown_chain_runs_once_then_is_reused(
    pants: PantsRunner, repo_root: Path, distdir: str, countdown_store: Path,
    countdown_head: Path,
) -> None:
    store = countdown_store  # the countdown inputs, built once for the session
    env = {"RLAUNCH_STORE": str(store), "RLAUNCH_LOCAL_HEAD_DIR": str(countdown_head)}
    first = pants(f"--pants-distdir={distdir}", "run", f"{CHAIN}:chain-eval",
                  env=env)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-4000:]
    lines = first.stdout.splitlines()
    assert lines[:6] == [
        f"pipeline of {EVAL}: 2 run(s), upstream first; 2 to launch, 0 reused",
        "  reuse   countdown_data@2026.11.30: built, same fingerprint",
        "  reuse   char_tokenizer@2026.11.29.1: built, same fingerprint",
        "  reuse   sft_model@2026.11.30.1: built, same fingerprint",
        f"  launch  [1/2] {STAGE1}: never launched",
        f"  launch  [2/2] {STAGE2}: never launched",
    ]
    assert lines[6] == f"[1/2] {STAGE1}: launching"
    assert re.fullmatch(rf"\[1/2\] {STAGE1}: {RESULT}", lines[7]), lines[7]
    assert lines[8] == f"[2/2] {STAGE2}: launching"
    assert re.fullmatch(rf"\[2/2\] {STAGE2}: {RESULT}", lines[9]), lines[9]
    assert lines[10] == f"pipeline of {EVAL}: 2 launched, 0 reused; every stage finished"
    assert "[2/2] recorded the export of countdown-chain-grpo1@dev as an input" in first.stderr
    assert "recorded the export of countdown-chain-grpo2@dev as an input" in first.stdout
    for slot, model in (("grpo1", STAGE1), ("grpo2", STAGE2), ("sft", "sft_model@2026.11.30.1")):
        assert any(re.fullmatch(rf"{EVAL}: {slot} {model} on 256 problems of "
                                r"countdown_data@2026.11.30: mean reward \d\.\d{3}, solved "
                                r"\d\.\d{3}", line) for line in lines), slot

    # Stage 2 read stage 1's export, by identity and fingerprint, from the export folder.
    export = store / "countdown-chain-grpo1/dev/export"
    record = json.loads((export / "_record.json").read_text())
    assert (record["identity"], record["type"]) == (STAGE1, "run_export")
    yaml_path = repo_root / distdir / CHAIN / "chain-eval/countdown-chain-grpo2/launch.yaml"
    model = yaml.safe_load(yaml_path.read_text())["inputs"]["model"]
    assert (model["identity"], model["uri"], model["fingerprint"]) == (
        STAGE1, str(export), record["fingerprint"])

    listed = subprocess.run([sys.executable, "-m", "rlaunch", "ls", "--store", str(store),
                             "--json"], capture_output=True, text=True, check=False)
    assert listed.returncode == 0, listed.stderr
    runs = {run["identity"]: run for run in json.loads(listed.stdout)}
    for identity in (STAGE1, STAGE2):
        assert runs[identity]["status"] == "SUCCEEDED" and runs[identity]["steps"] == 8
    # Stage 2 starts from stage 1's trained weights, not from the SFT model stage 1 started at.
    assert runs[STAGE2]["reward_first"] != runs[STAGE1]["reward_first"]

    # The eval report, in the store: each export scored greedily by the countdown reward on the
    # eval rows the runtime's own end-of-run eval uses.
    report = json.loads((store / "chain-eval/dev/report.json").read_text())
    assert report["rows"] == 256 and sorted(report["models"]) == ["grpo1", "grpo2", "sft"]
    for slot, identity in (("grpo1", STAGE1), ("grpo2", STAGE2)):
        assert report["models"][slot]["model"] == identity
        assert report["models"][slot]["mean_reward"] == pytest.approx(
            runs[identity]["eval_reward"], abs=0.01)
    samples = (store / "chain-eval/dev/samples.jsonl").read_text().splitlines()
    assert len(samples) == 3 * 256

    again = pants(f"--pants-distdir={distdir}", "run", f"{CHAIN}:chain-eval",
                  env=env)
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-4000:]
    attempts = [runs[identity]["last_attempt"] for identity in (STAGE1, STAGE2)]
    assert again.stdout.splitlines()[:4] == [
        f"pipeline of {EVAL}: 2 run(s), upstream first; 0 to launch, 2 reused",
        f"  reuse   [1/2] {STAGE1}: finished: attempt {attempts[0]} SUCCEEDED",
        f"  reuse   [2/2] {STAGE2}: finished: attempt {attempts[1]} SUCCEEDED",
        f"pipeline of {EVAL}: every stage finished with this spec; nothing launched",
    ]
    assert "submitted" not in again.stderr
    assert f"{STAGE1} (a run's export) up to date" in again.stdout


def test_a_change_to_the_sft_model_selects_every_stage(pants: PantsRunner) -> None:
    result = pants("dependents", "--transitive", "experiments/countdown:sft_model")
    assert result.returncode == 0, result.stderr
    dependents = result.stdout.split()
    for stage in ("chain-grpo1", "chain-grpo2", "chain-eval"):
        assert f"{CHAIN}:{stage}" in dependents
    direct = pants("dependencies", f"{CHAIN}:chain-grpo2")
    assert f"{CHAIN}:chain-grpo1" in direct.stdout.split()
    assert "experiments/countdown:sft_model" not in direct.stdout.split()
