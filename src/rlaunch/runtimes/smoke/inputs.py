"""Checks on the inputs before any actor starts: build records, tokenizer, model, prompts,
resume source, and a calendar version that already finished.

Each failure is a SmokeConfigError or CheckpointError naming the input and the fix, so that a
bad launch costs nothing but the time to read it.
"""

from __future__ import annotations

import json
from pathlib import Path

from rlaunch.models.tiny import TinyConfig
from rlaunch.models.tokenizer import CharTokenizer, TokenizerError
from rlaunch.runtimes.smoke import checkpoint as ckpt
from rlaunch.runtimes.smoke.config import InputRef, SmokeConfig, SmokeConfigError
from rlaunch.spec.syntax import is_calendar, next_calendar
from rlaunch.runtimes.trained_from import RUN_EXPORT, export_content
from rlaunch.store import RECORD_FILE, StoreError
from rlaunch.store.records import edited_record, own_fingerprint, parse_record, verify_local


def verify_input(ref: InputRef) -> None:
    """The input is what the launch YAML names: its build record exists (a payload without a
    record is not built), records this identity and fingerprint, and every file it lists is
    present with its size and sha256. Nothing on the worker is trusted beyond that."""
    where = f"inputs.{ref.slot}"
    record_path = ref.directory / RECORD_FILE
    if not record_path.is_file():
        state = "has files but no build record" if ref.directory.is_dir() else "does not exist"
        raise SmokeConfigError(
            f"{where}: {ref.identity} is not built: {ref.directory} {state} ({RECORD_FILE} is "
            "written last by a finished build); materialize the run's inputs first: `rlaunch "
            "launch` and `./pants run` do it before they submit, `rlaunch build FILE` builds one"
        )
    try:
        record = parse_record(record_path.read_text(encoding="utf-8"), str(record_path))
        if record.fingerprint != ref.fingerprint and (own := own_fingerprint(record)):
            raise SmokeConfigError(f"{where}: {edited_record(str(record_path), record, own)}")
        if record.identity != ref.identity or record.fingerprint != ref.fingerprint:
            raise SmokeConfigError(
                f"{where}: {ref.directory} holds {record.identity} with fingerprint "
                f"{record.fingerprint}, but the launch YAML names {ref.identity} with fingerprint "
                f"{ref.fingerprint}; the store changed since the YAML was rendered: launch again "
                "(a dev input is rebuilt), or bump the input's version if its content changed"
            )
        if record.payload_folder is not None:
            raise SmokeConfigError(
                f"{where}: {ref.identity} is a run's export whose model is in "
                f"{ref.directory / record.payload_folder} (SkyRL's layout, "
                f"{record.payload_folder}), not at {ref.directory}, where the smoke runtime "
                "reads its inputs: a smoke stage reads the export of a smoke run; run this "
                "stage on the skyrl runtime, which stages that folder"
            )
        verify_local(ref.directory, record)
    except StoreError as err:
        raise SmokeConfigError(f"{where}: {err}") from None


def verify_inputs(config: SmokeConfig) -> None:
    """`verify_input` for every slot, once per identity (train and eval data often share one)."""
    seen: set[str] = set()
    for ref in config.inputs:
        if ref.identity not in seen:
            seen.add(ref.identity)
            verify_input(ref)


def export_contents(config: SmokeConfig) -> dict[str, dict[str, str]]:
    """Per slot that reads another run's export: its identity and content, from the record the
    launcher wrote (`export/_record.json`, verified against the files by `verify_input`)."""
    contents: dict[str, dict[str, str]] = {}
    for ref in config.inputs:
        if ref.type != RUN_EXPORT:
            continue
        path = ref.directory / RECORD_FILE
        try:
            record = parse_record(path.read_text(encoding="utf-8"), str(path))
        except (OSError, StoreError) as err:
            raise SmokeConfigError(f"inputs.{ref.slot}: {err}") from None
        contents[ref.slot] = {"identity": ref.identity, "content": export_content(record)}
    return contents


def refuse_finished_calendar(config: SmokeConfig) -> None:
    """A calendar version is immutable and runs once: its terminal manifest ends it. (A dev
    version may run again; it starts over or resumes as its resume mode says.)"""
    manifest = config.terminal_manifest
    if not is_calendar(config.run_version) or not manifest.is_file():
        return
    try:
        written = json.loads(manifest.read_text(encoding="utf-8"))
        detail = (f"final step {written.get('final_step')}, attempt {written.get('attempt_id')}, "
                  f"weights {written.get('weights_sha256')}")
    except (OSError, ValueError, AttributeError):
        detail = "unreadable"
    raise SmokeConfigError(
        f"{config.run_id} already finished: its terminal manifest {manifest} is written "
        f"({detail}); a calendar version runs once. To train again, bump run.version "
        f"(e.g. {next_calendar(config.run_version)}) or use a dev version"
    )


def load_tokenizer(config: SmokeConfig) -> CharTokenizer:
    try:
        return CharTokenizer.load(config.tokenizer_dir)
    except TokenizerError as err:
        raise SmokeConfigError(f"inputs.tokenizer.uri: {err}") from None


def check_model(config: SmokeConfig, tokenizer: CharTokenizer) -> None:
    path = config.model_dir / "config.json"
    if not path.is_file():
        raise SmokeConfigError(
            f"inputs.model.uri is {config.model_dir}: no config.json there; build the model "
            "artifact first (config.json, model.safetensors, tokenizer.json)"
        )
    model = TinyConfig.from_hf(json.loads(path.read_text()))
    if model.vocab_size != tokenizer.vocab_size:
        raise SmokeConfigError(
            f"model vocab_size {model.vocab_size} ({path}) != tokenizer vocabulary "
            f"{tokenizer.vocab_size} ({config.tokenizer_dir}); use the model's tokenizer"
        )
    needed = config.max_prompt_length + config.max_generate_length
    if needed > model.max_position_embeddings:
        raise SmokeConfigError(
            f"max_prompt_length {config.max_prompt_length} + max_generate_length "
            f"{config.max_generate_length} = {needed} exceeds the model's "
            f"max_position_embeddings {model.max_position_embeddings}"
        )


def check_prompts(config: SmokeConfig, tokenizer: CharTokenizer, rows: list[dict]) -> None:
    limit = config.max_prompt_length
    for row in rows:
        length = len(tokenizer.encode(row["prompt"], bos=True))
        if length > limit:
            raise SmokeConfigError(
                f"prompt {row['prompt']!r} is {length} tokens (with <bos>), more than "
                f"max_prompt_length {limit}; raise lengths.max_prompt_length"
            )


def resume_source(config: SmokeConfig) -> Path | None:
    """The checkpoint directory to resume from (None: start fresh). Refuses a root that
    another runtime wrote, `latest` checkpoints of another configuration or trained from
    another export of an upstream run, and a resume path that is not a complete checkpoint.
    (`from_path` names its checkpoint by hand: what it was trained from is the caller's call.)"""
    root = config.checkpoint_root
    if root.is_dir():
        ckpt.check_runtime(root, runtime_fingerprint=config.runtime_fingerprint,
                           compatible=config.compatible_runtimes)
    if config.resume_mode == "none":
        return None
    if config.resume_mode == "from_path":
        source = config.resume_path
        if not source.is_dir():
            raise ckpt.CheckpointError(
                f"resume.path {source} does not exist; point it at a global_step_N directory"
            )
        if (source.parent / ckpt.RUNTIME_FILE).is_file():
            ckpt.check_runtime(source.parent, runtime_fingerprint=config.runtime_fingerprint,
                               compatible=config.compatible_runtimes)
        ckpt.read_state(source)
        return source
    if not root.is_dir():
        return None
    ckpt.check_run(root, run_fingerprint=config.fingerprint)
    ckpt.check_exports(root, exports=export_contents(config))
    step = ckpt.latest_step(root)
    return None if step is None else ckpt.step_dir(root, step)
