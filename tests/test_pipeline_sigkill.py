"""Issues 13 and 15: kill -9 of a pipeline's launcher during stage 2, then running it again,
resumes stage 2 (stage 1 reused) and ends with the weights of an uninterrupted stage 2.

Two tiny countdown smoke runs, stage 2's model the export of stage 1, both `resume.mode latest`,
are launched by `rlaunch launch <stage 2's spec>` (the pipeline path, each stage through the one
launch path) on a local Ray head of the launcher's own. Once stage 2's first checkpoint is in
the store, the launcher's process group gets SIGKILL: every process of its head is gone within
a bounded time (its supervisor noticed its owner's death). Then the same command runs again:

- its plan reuses stage 1 and launches stage 2, which settles its killed attempt as LOST and
  resumes from its checkpoint (the runtime says so in the attempt's job log): stage 2's record
  ends [LOST, SUCCEEDED], stage 1's has its one attempt;
- stage 2's final weights are byte-identical to those of another run of the same stage 2 spec
  (another name, the same store) launched without interruption from the same export of stage 1,
  and are trained (they are not stage 1's export).

The inputs are calendar-versioned: built by the first launch, reused by the others. The
uninterrupted launch runs with its stderr on a pseudo-terminal: its training steps show as a
bar there (issue 16), while its stdout, a file, gets the pipeline's plain lines.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from executors.support import finished, kill_group_once, launcher, wait_gone
from rlaunch.executors.local_head import read_record
from rlaunch.ledger import Ledger
from runtimes.smoke.demo import smoke_spec
from runtimes.smoke.smoke_helpers import TINY_SPEC

STAGE1, STAGE2, WHOLE = "chain-stage1", "chain-stage2", "chain-whole"
STEPS = {STAGE1: 6, STAGE2: 30, WHOLE: 30}
# Stage 2 checkpoints every 5 steps (~0.1 s each): 25 steps after its first checkpoint leave
# time to kill it mid-training. 150 SFT steps give a model that earns some reward, so GRPO
# moves the weights.
SHAPE = {"ckpt_interval": 5, "train_rows": 512, "sft_steps": 150, "resume_mode": "latest",
         "inputs_version": "2026.11.01"}
LAUNCH_S = 900.0


def stage(name: str) -> dict[str, Any]:
    """A countdown smoke run; its inputs are named apart from it, so all runs share them."""
    spec = smoke_spec(name="chain", **{**TINY_SPEC, **SHAPE, "max_training_steps": STEPS[name]})
    spec["name"] = name
    return spec


def chain_launch(root: Path, store: Path, name: str) -> list[str]:
    """`rlaunch launch` of the spec of `name`, a stage 2 (its model the export of stage 1),
    into `store`."""
    second = stage(name)
    second["model"] = {"type": "run_export", "name": STAGE1, "version": "dev",
                       "run": stage(STAGE1)}
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(second))
    return ["launch", "--store", str(store), str(path)]


class Terminal:
    """A pseudo-terminal for a launcher's stderr, read on a thread as it is written."""

    def __init__(self) -> None:
        self.leader, self.follower = pty.openpty()
        self.shown = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.leader, 65536)
            except OSError:  # the last writer closed it
                return
            if not data:
                return
            self.shown += data

    def close(self) -> bytes:
        self._reader.join(timeout=10)
        os.close(self.leader)
        return bytes(self.shown)


def manifest(store: Path, name: str) -> dict[str, Any]:
    written = json.loads((store / name / "dev" / "terminal.json").read_text())
    assert written["final_step"] == STEPS[name]
    return written


def attempts(store: Path, name: str) -> list[dict[str, Any]]:
    return Ledger(str(store)).read(name, "dev")["attempts"]


def statuses(store: Path, name: str) -> list[str]:
    return [attempt["status"] for attempt in attempts(store, name)]


def test_kill_9_during_stage_2_then_again_resumes_stage_2_with_the_uninterrupted_weights(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    log = tmp_path / "launch.log"
    store = tmp_path / "store"
    command = chain_launch(tmp_path, store, STAGE2)
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
    stage1_attempt = attempts(store, STAGE1)[0]["attempt_id"]
    lines = text.splitlines()
    assert lines[0] == (f"pipeline of {STAGE2}@dev: 2 run(s), upstream first; 1 to launch, "
                        "1 reused"), text[-4000:]
    assert f"  reuse   [1/2] {STAGE1}@dev: finished: attempt {stage1_attempt} SUCCEEDED" in lines
    assert any(re.fullmatch(rf"  launch  \[2/2\] {STAGE2}@dev: its last attempt \S+ is "
                            r"(PENDING|RUNNING)", line) for line in lines), text[-4000:]
    assert f"[1/2] {STAGE1}@dev: launching" not in lines
    lost = attempts(store, STAGE2)[0]["attempt_id"]
    assert (f"[2/2] rlaunch: {STAGE2}@dev attempt {lost} was left PENDING and its job is gone; "
            "recorded as LOST") in lines
    assert f"pipeline of {STAGE2}@dev: 1 launched, 1 reused; every stage finished" in lines
    assert statuses(store, STAGE2) == ["LOST", "SUCCEEDED"]
    # The relaunch stopped the head it started.
    assert read_record(tmp_path / "heads") is None

    # The reference: the same stage 2 spec under another name, launched once, never
    # interrupted, from the same export of stage 1 (reused), its stderr on a terminal.
    terminal = Terminal()
    mark = len(log.read_text())
    whole = launcher(chain_launch(tmp_path, store, WHOLE), tmp_path, log, terminal.follower)
    plain = finished(whole, log, LAUNCH_S)[mark:]
    shown = terminal.close().decode(errors="replace")
    assert plain.splitlines()[0] == (f"pipeline of {WHOLE}@dev: 2 run(s), upstream first; "
                                     "1 to launch, 1 reused"), plain[-4000:]
    # Issue 16: the stage's training steps show as a bar on the terminal; stdout (a file
    # here) gets the pipeline's plain lines.
    steps = STEPS[WHOLE]
    assert f"training: step {steps}/{steps}" in shown and "\x1b[" in shown, shown[-2000:]
    assert f"[2/2] {WHOLE}@dev: SUCCEEDED in " in plain and "\x1b" not in plain

    assert statuses(store, STAGE1) == ["SUCCEEDED"]
    assert statuses(store, WHOLE) == ["SUCCEEDED"]
    # Each attempt of a stage 2 records the export it read (for the plan), the content its
    # runtime recorded in the checkpoint root (for resuming): the one attempt of stage 1.
    trained_from = json.loads((checkpoints / "runtime.json").read_text())["run_exports"]
    read = {f"{STAGE1}@dev": {"content": trained_from["model"]["content"],
                              "attempt_id": stage1_attempt}}
    assert [attempt["run_exports"] for attempt in attempts(store, STAGE2)] == [read, read]
    assert [attempt["run_exports"] for attempt in attempts(store, WHOLE)] == [read]
    resumed = manifest(store, STAGE2)
    assert resumed["resumed_from_step"] == killed_at
    job_log = (store / STAGE2 / "dev" / "attempts" / resumed["attempt_id"] / "job.log")
    assert f"resumed from {checkpoints / f'global_step_{killed_at}'}" in job_log.read_text()

    # Stage 2 trained on from stage 1's export (the policy moved away from its reference) to
    # the uninterrupted weights.
    assert resumed["weights_sha256"] == manifest(store, WHOLE)["weights_sha256"]
    assert resumed["weights_sha256"] != manifest(store, STAGE1)["weights_sha256"]
    history = [json.loads(line) for line in Path(resumed["metrics_path"]).read_text().splitlines()]
    last = [entry for entry in history if "eval" not in entry][-1]
    assert last["step"] == STEPS[STAGE2] and last["kl"] > 0, last
    assert read_record(tmp_path / "heads") is None
    print(f"kill -9 during stage 2, again, and the reference: {time.monotonic() - started:.0f} s")
