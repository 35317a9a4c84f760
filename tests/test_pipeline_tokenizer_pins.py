"""A stage that pins its tokenizer apart from its upstream's, for real: two tiny countdown smoke
stages on a local Ray head (CPU), stage 2's model the export of stage 1, every input built by
the countdown builders into a real store.

- Stage 2 pins `chain-tokenizer-copy@dev`: another name, the files of stage 1's
  `chain-tokenizer@dev`. Preflight (what `./pants check` runs) passes with the PIPE002 warning;
  `rlaunch launch` of stage 2's spec launches both stages, and both succeed.
- Stage 2 pins `chain-tokenizer-swapped@dev`, in which '+' and '-' trade ids. Launched alone
  (`--only`, stage 1 finished), its launch compares the tokenizer with the one stage 1's
  export carries (the smoke runtime writes `tokenizer.json` beside the weights) and refuses
  with LAUNCH002 before anything is recorded or a head starts; as a pipeline, it is refused
  before any stage launches.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from executors.support import SRC, finished, launcher
from pipeline.tokenizer_stages import (
    STAGE1,
    STAGE2,
    SWAPPED,
    parsed,
    second_stage,
    swapped_finding,
    write_spec,
)
from rlaunch.executors.local_head import read_record
from rlaunch.ledger import Ledger
from rlaunch.spec import fingerprint

LAUNCH_S = 600.0


def statuses(store: Path, name: str) -> list[str]:
    return [attempt["status"] for attempt in Ledger(str(store)).read(name, "dev")["attempts"]]


def test_a_tokenizer_pinned_apart_launches_when_its_files_agree_and_is_refused_when_not(
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    store = tmp_path / "store"
    copy = write_spec(tmp_path, second_stage("chain-tokenizer-copy"))
    pin = fingerprint(parsed(second_stage("chain-tokenizer-copy")).tokenizer)[:19]
    warning = (
        "warning PIPE002 tokenizer, model.run.tokenizer: model is the export of tok-stage1@dev, "
        f"trained with tokenizer chain-tokenizer@dev ({pin}), but this run's tokenizer is "
        f"chain-tokenizer-copy@dev ({pin}): two pins, which may hold one tokenizer (the spec "
        "cannot tell). The launch compares their vocabularies and special tokens in the store "
        "(LAUNCH002) and refuses it if an id means another string")
    checked = subprocess.run([sys.executable, "-m", "rlaunch", "preflight", str(copy)],
                             capture_output=True, text=True, env={"PYTHONPATH": str(SRC)},
                             check=False, timeout=120)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    assert lines[0] == f"{copy} ({STAGE2}@dev): ok, 0 errors, 1 warning"
    assert lines[1] == warning
    assert lines[2] == ("    fix: To silence this, set tokenizer to the tokenizer tok-stage1 "
                        "trained with (chain-tokenizer@dev).")

    log = tmp_path / "launch.log"
    text = finished(launcher(["launch", "--store", str(store), str(copy)], tmp_path, log),
                    log, LAUNCH_S)
    assert f"pipeline of {STAGE2}@dev: 2 launched, 0 reused; every stage finished" in text
    lines = text.splitlines()
    at = lines.index(f"[2/2] {copy} ({STAGE2}@dev): ok, 0 errors, 1 warning")
    assert lines[at + 1] == warning
    assert not [line for line in lines if "LAUNCH002 tokenizer" in line]
    assert statuses(store, STAGE1) == statuses(store, STAGE2) == ["SUCCEEDED"]
    # What stage 2's launch compared: the tokenizer stage 1's export carries.
    export = store / STAGE1 / "dev" / "export"
    assert json.loads((export / "tokenizer.json").read_text())["type"] == "rlaunch-char"
    seconds = time.monotonic() - started

    swapped = write_spec(tmp_path, second_stage("chain-tokenizer-swapped", SWAPPED))
    finding = swapped_finding()
    mark = len(log.read_text())
    alone = launcher(["launch", "--only", "--store", str(store), str(swapped)], tmp_path, log)
    assert alone.wait(timeout=LAUNCH_S) == 1, log.read_text()[mark:]
    lines = log.read_text()[mark:].splitlines()
    at = lines.index(f"the materialized inputs ({STAGE2}@dev): refused, 1 error, 0 warnings")
    assert lines[at + 1:at + 3] == finding
    assert statuses(store, STAGE2) == ["SUCCEEDED"]
    assert "submitted" not in log.read_text()[mark:]
    assert read_record(tmp_path / "heads") is None

    mark = len(log.read_text())
    chain = launcher(["launch", "--store", str(store), str(swapped)], tmp_path, log)
    assert chain.wait(timeout=LAUNCH_S) == 1, log.read_text()[mark:]
    lines = log.read_text()[mark:].splitlines()
    at = lines.index(f"pipeline of {STAGE2}@dev: refused")
    assert lines[at + 1:at + 5] == [
        f"[2/2] {STAGE2}@dev: refused before any stage launches",
        f"the tokenizers in the store ({STAGE2}@dev): refused, 1 error, 0 warnings", *finding]
    assert statuses(store, STAGE1) == statuses(store, STAGE2) == ["SUCCEEDED"]
    print(f"two stages launched in {seconds:.0f} s; refusals in "
          f"{time.monotonic() - started - seconds:.0f} s")
