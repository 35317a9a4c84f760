"""Two countdown smoke stages for the tokenizer-pin tests: stage 2's model is stage 1's export,
and stage 2 pins its tokenizer apart from stage 1's (another name; the same files, or two
characters swapped). Their inputs are real artifacts, built by the countdown builders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlaunch.ledger import Ledger, set_status, set_submission, start_attempt
from rlaunch.models.tokenizer import CHARACTERS, CharTokenizer
from rlaunch.paths import run_paths
from rlaunch.spec import RunSpec, fingerprint, parse_spec
from rlaunch.status import AttemptStatus
from runtimes.smoke.demo import smoke_spec
from runtimes.smoke.smoke_helpers import TINY_SPEC

STAGE1, STAGE2 = "tok-stage1", "tok-stage2"
# One simulated GPU: one trainer worker per stage (the pins do not depend on the geometry).
SHAPE = {**TINY_SPEC, "max_training_steps": 2, "sft_steps": 20, "train_rows": 32,
         "resume_mode": "none", "gpus_per_node": 1}
# '+' (id 14) and '-' (id 15) trade places: the same 50 strings, two ids meaning others.
SWAPPED = CHARACTERS.replace("+-", "-+")


def stage(name: str) -> dict[str, Any]:
    """A tiny countdown smoke run whose inputs are named `chain-*`, shared by both stages."""
    spec = smoke_spec(name="chain", **SHAPE)
    spec["name"] = name
    return spec


def second_stage(tokenizer: str, characters: str | None = None) -> dict[str, Any]:
    """Stage 2 from stage 1's export, with the tokenizer `tokenizer@dev` (char_tokenizer with
    `characters`; None: the default vocabulary, stage 1's)."""
    data = stage(STAGE2)
    data["tokenizer"] = dict(data["tokenizer"], name=tokenizer,
                             config={} if characters is None else {"characters": characters})
    data["model"] = {"type": "run_export", "name": STAGE1, "version": "dev",
                     "run": stage(STAGE1)}
    return data


def write_spec(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / f"{data['name']}-{data['tokenizer']['name']}.json"
    path.write_text(json.dumps(data))
    return path


def finish_with_skyrl_export(store: Path, upstream: RunSpec, *,
                             tokenizer_files: bool = True) -> Path:
    """Record `upstream` as SUCCEEDED and write its export as SkyRL 0.3.0 lays it out:
    `global_step_2/policy/` holds the weights and the tokenizer (`RayPPOTrainer.save_models`),
    nothing at the export's root; the terminal manifest names that folder, as the SkyRL
    adapter writes it. Without `tokenizer_files`, an export with no tokenizer files at all."""
    def update(record: dict) -> None:
        start_attempt(record, attempt_id="a1", fingerprint=upstream.fingerprint,
                      runtime_fingerprint="sha256:r", geometry={}, launcher_commit=None,
                      yaml_digest="sha256:y", yaml_path="/y", smoke_of=None,
                      skip_smoke_gate=None)
        set_submission(record, "a1", {"submission_id": "job"})
        set_status(record, "a1", AttemptStatus.SUCCEEDED)

    Ledger(str(store)).update(upstream.name, upstream.version, update)
    paths = run_paths(str(store), upstream.name, upstream.version)
    policy = Path(paths.export_root) / "global_step_2" / "policy"
    policy.mkdir(parents=True)
    (policy / "config.json").write_text('{"vocab_size": 50}')
    (policy / "model.safetensors").write_bytes(b"weights")
    if tokenizer_files:
        CharTokenizer().save(policy)
    Path(paths.terminal_manifest).write_text(json.dumps({"status": "succeeded",
                                                          "export_path": str(policy)}))
    return policy


def parsed(data: dict[str, Any]) -> RunSpec:
    return parse_spec(data, "test")


def swapped_finding() -> list[str]:
    """LAUNCH002's error, as printed, for stage 2 on `chain-tokenizer-swapped@dev`."""
    spec = parsed(second_stage("chain-tokenizer-swapped", SWAPPED))
    theirs, mine = fingerprint(spec.model.run.tokenizer)[:19], fingerprint(spec.tokenizer)[:19]
    return [
        f"error LAUNCH002 tokenizer, model: model is the export of {STAGE1}@dev, trained with "
        f"tokenizer chain-tokenizer@dev ({theirs}), the run's tokenizer is "
        f"chain-tokenizer-swapped@dev ({mine}), and their files in the store differ: 2 of the "
        "50 ids both have map to other strings (id 14 is '-' in the run's tokenizer, '+' in "
        "model's; id 15 is '+' in the run's tokenizer, '-' in model's): model would read the "
        "run's token ids as other strings",
        f"    fix: Set tokenizer to the tokenizer {STAGE1} trained with (chain-tokenizer@dev), "
        "or to a tokenizer with its vocabulary and special tokens (only the chat template may "
        "differ).",
    ]
