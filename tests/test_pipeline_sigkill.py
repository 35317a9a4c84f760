"""Issue 15: kill -9 of a pipeline during stage 2, then running it again, resumes stage 2 (stage 1
reused) and ends with the weights of an uninterrupted chain.

Two tiny countdown smoke runs, stage 2's model the export of stage 1, both `resume.mode latest`,
are launched by `rlaunch launch <stage 2's spec>` (the pipeline path) on a local Ray head of the
launcher's own. Once stage 2's first checkpoint is in the store, the launcher's process group
gets SIGKILL; once the head's processes are gone, the same command runs again:

- its plan reuses stage 1 and launches stage 2, which settles its killed attempt as LOST and
  resumes from its checkpoint (the runtime says so in the attempt's job log): stage 2's record
  ends [LOST, SUCCEEDED], stage 1's has its one attempt;
- stage 2's final weights are byte-identical to stage 2's of the same chain launched without
  interruption in another store, and are trained (they are not stage 1's export).
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import yaml

from executors.support import finished, kill_group_once, launcher, wait_gone
from rlaunch.executors.local_head import read_record
from rlaunch.ledger import Ledger
from runtimes.smoke.demo import smoke_spec
from runtimes.smoke.smoke_helpers import TINY_SPEC

STAGE1, STAGE2 = "chain-stage1", "chain-stage2"
STEPS = {STAGE1: 6, STAGE2: 30}
# Stage 2 checkpoints every 5 steps (~0.1 s each): 25 steps after its first checkpoint leave
# time to kill it mid-training. 150 SFT steps give a model that earns some reward, so GRPO
# moves the weights.
SHAPE = {"ckpt_interval": 5, "train_rows": 512, "sft_steps": 150, "resume_mode": "latest"}
LAUNCH_S = 900.0


def stage(name: str) -> dict[str, Any]:
    """A countdown smoke run; its inputs are named apart from it, so both stages share them."""
    spec = smoke_spec(name="chain", **{**TINY_SPEC, **SHAPE, "max_training_steps": STEPS[name]})
    spec["name"] = name
    return spec


def chain_launch(root: Path, store: Path) -> list[str]:
    """`rlaunch launch` of stage 2's spec (its model the export of stage 1) into `store`."""
    second = stage(STAGE2)
    second["model"] = {"type": "run_export", "name": STAGE1, "version": "dev",
                       "run": stage(STAGE1)}
    path = root / f"{store.name}.yaml"
    path.write_text(yaml.safe_dump(second))
    return ["launch", "--store", str(store), str(path)]


def manifest(store: Path, name: str) -> dict[str, Any]:
    written = json.loads((store / name / "dev" / "terminal.json").read_text())
    assert written["final_step"] == STEPS[name]
    return written


def statuses(store: Path, name: str) -> list[str]:
    return [attempt["status"] for attempt in Ledger(str(store)).read(name, "dev")["attempts"]]


def test_kill_9_during_stage_2_then_again_resumes_stage_2_with_the_uninterrupted_weights(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    log = tmp_path / "launch.log"
    whole = tmp_path / "whole"
    finished(launcher(chain_launch(tmp_path, whole), tmp_path, log), log, LAUNCH_S)

    store = tmp_path / "killed"
    command = chain_launch(tmp_path, store)
    checkpoints = store / STAGE2 / "dev" / "checkpoints"
    pointer = checkpoints / "latest_ckpt_global_step.txt"
    first = launcher(command, tmp_path, log)
    seen: set[int] = set()
    try:
        kill_group_once(first, pointer, log, tmp_path, seen, timeout_s=LAUNCH_S)
        # Read once the head is gone: its job trains on (and may checkpoint again) until then.
        killed_at = int(pointer.read_text())
        assert 0 < killed_at < STEPS[STAGE2]
        assert statuses(store, STAGE1) == ["SUCCEEDED"]

        mark = len(log.read_text())
        text = finished(launcher(command, tmp_path, log), log, LAUNCH_S)[mark:]
    finally:
        for pid in wait_gone(seen, 1):
            os.kill(pid, signal.SIGKILL)
    stage1_attempt = Ledger(str(store)).read(STAGE1, "dev")["attempts"][0]["attempt_id"]
    lines = text.splitlines()
    assert lines[0] == (f"pipeline of {STAGE2}@dev: 2 run(s), upstream first; 1 to launch, "
                        "1 reused"), text[-4000:]
    assert f"  reuse   [1/2] {STAGE1}@dev: finished: attempt {stage1_attempt} SUCCEEDED" in lines
    assert any(re.fullmatch(rf"  launch  \[2/2\] {STAGE2}@dev: its last attempt \S+ is "
                            r"(PENDING|RUNNING)", line) for line in lines), text[-4000:]
    assert f"[1/2] {STAGE1}@dev: launching" not in lines
    assert f"pipeline of {STAGE2}@dev: 1 launched, 1 reused; every stage finished" in lines

    assert statuses(store, STAGE1) == ["SUCCEEDED"]
    assert statuses(store, STAGE2) == ["LOST", "SUCCEEDED"]
    # Each attempt of stage 2 records the export it read (for the plan), the content its
    # runtime recorded in the checkpoint root (for resuming).
    trained_from = json.loads((checkpoints / "runtime.json").read_text())["run_exports"]
    read = {f"{STAGE1}@dev": {"content": trained_from["model"]["content"],
                              "attempt_id": stage1_attempt}}
    assert [attempt["run_exports"] for attempt in
            Ledger(str(store)).read(STAGE2, "dev")["attempts"]] == [read, read]
    resumed = manifest(store, STAGE2)
    assert resumed["resumed_from_step"] == killed_at
    job_log = (store / STAGE2 / "dev" / "attempts" / resumed["attempt_id"] / "job.log")
    assert f"resumed from {checkpoints / f'global_step_{killed_at}'}" in job_log.read_text()

    # Stage 1 ran once in each store, to the same weights; stage 2 trained on from them (the
    # policy moved away from its reference, stage 1's export) to the uninterrupted weights.
    assert manifest(store, STAGE1)["weights_sha256"] == manifest(whole, STAGE1)["weights_sha256"]
    assert resumed["weights_sha256"] == manifest(whole, STAGE2)["weights_sha256"]
    assert resumed["weights_sha256"] != manifest(store, STAGE1)["weights_sha256"]
    history = [json.loads(line) for line in Path(resumed["metrics_path"]).read_text().splitlines()]
    last = [entry for entry in history if "eval" not in entry][-1]
    assert last["step"] == STEPS[STAGE2] and last["kl"] > 0, last
    # The relaunch stopped the head it started.
    assert read_record(tmp_path / "heads") is None
    print(f"kill -9 during stage 2 and again: {time.monotonic() - started:.0f} s")
