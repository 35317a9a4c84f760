"""Issue 13: kill -9 of the whole launcher, then a relaunch, ends with the uninterrupted weights.

`rlaunch launch` runs a tiny countdown smoke run (30 GRPO steps, a checkpoint every 5) on a local
Ray head it starts in its own state dir. Once the job's first checkpoint is in the store, the
launcher's whole process group gets SIGKILL. Then:

- every process of that head is gone within a bounded time (its supervisor noticed its owner's
  death), and no Ray process names the head's temp dir;
- the relaunch settles the attempt its killed launcher left unfinished as LOST, starts a new
  head, resumes from the checkpoint and finishes;
- the final weights are byte-identical to those of the same spec launched without interruption
  (another name, same inputs, same store).

That uninterrupted launch runs with its stderr on a pseudo-terminal: its training steps show as
a bar there (issue 16), while its stdout, a file, gets the job's plain lines.
"""

from __future__ import annotations

import json
import os
import pty
import signal
import threading
from pathlib import Path

import yaml

from executors.support import finished, kill_group_once, launcher, wait_gone
from rlaunch.executors.local_head import read_record
from rlaunch.ledger import Ledger
from runtimes.smoke.demo import smoke_spec
from runtimes.smoke.smoke_helpers import TINY_SPEC

STEPS = 30
# Steps take ~0.1 s: 25 of them after the first checkpoint leave time to kill mid-training. 150
# SFT steps (~5 s) give a model that earns some reward, so GRPO moves the weights.
SHAPE = {"max_training_steps": STEPS, "ckpt_interval": 5, "train_rows": 512, "sft_steps": 150}


def spec_file(root: Path, name: str, store: Path) -> Path:
    """A countdown smoke spec: tiny model and batches; the inputs are named apart from the
    run, so two runs of different names share them."""
    spec = smoke_spec(name="kill9", **{**TINY_SPEC, **SHAPE})
    spec["name"] = name
    spec["execution"]["store_prefix"] = str(store)
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


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


def weights(store: Path, name: str) -> str:
    manifest = json.loads((store / name / "dev" / "terminal.json").read_text())
    assert manifest["final_step"] == STEPS
    lines = Path(manifest["metrics_path"]).read_text().splitlines()
    last = [entry for entry in map(json.loads, lines) if "eval" not in entry][-1]
    # The policy moved away from the reference: the weights compared are trained ones.
    assert last["step"] == STEPS and last["kl"] > 0, last
    return manifest["weights_sha256"]


def test_kill_9_of_the_launcher_then_a_relaunch_ends_with_the_uninterrupted_weights(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    log = tmp_path / "launch.log"
    # The reference: launched once, never interrupted (it also builds the shared inputs), with
    # its stderr on a terminal (issue 16: the training steps show as a bar there).
    terminal = Terminal()
    whole = launcher(["launch", str(spec_file(tmp_path, "kill9-whole", store))], tmp_path, log,
                     terminal.follower)
    plain = finished(whole, log)
    shown = terminal.close().decode(errors="replace")
    assert f"training: step {STEPS}/{STEPS}" in shown and "\x1b[" in shown, shown[-2000:]
    # The job's output went to stdout (a file here) as it was, one plain line per step.
    assert f"step {STEPS}/{STEPS} | reward" in plain and "\x1b" not in plain

    spec = spec_file(tmp_path, "kill9-killed", store)
    checkpoints = store / "kill9-killed" / "dev" / "checkpoints"
    pointer = checkpoints / "latest_ckpt_global_step.txt"
    first = launcher(["launch", str(spec)], tmp_path, log)
    seen: set[int] = set()
    try:
        kill_group_once(first, pointer, log, tmp_path, seen)
        # Read once the head is gone: its job trains on (and may checkpoint again) until then.
        killed_at = int(pointer.read_text())
        assert 0 < killed_at < STEPS

        text = finished(launcher(["launch", str(spec)], tmp_path, log), log)
    finally:
        for pid in wait_gone(seen, 1):
            os.kill(pid, signal.SIGKILL)
    attempts = Ledger(str(store)).read("kill9-killed", "dev")["attempts"]
    assert [attempt["status"] for attempt in attempts] == ["LOST", "SUCCEEDED"]
    assert (f"rlaunch: kill9-killed@dev attempt {attempts[0]['attempt_id']} was left "
            f"PENDING and its job is gone; recorded as LOST") in text
    assert f"resumed from {checkpoints / f'global_step_{killed_at}'}" in text
    assert weights(store, "kill9-killed") == weights(store, "kill9-whole")
    # The relaunch stopped the head it started.
    assert read_record(tmp_path / "heads") is None
