"""Checks on the inputs before any actor starts: tokenizer, model, prompts, resume source.

Each failure is a SmokeConfigError or CheckpointError naming the input and the fix, so that a
bad launch costs nothing but the time to read it.
"""

from __future__ import annotations

import json
from pathlib import Path

from rlaunch.models.tiny import TinyConfig
from rlaunch.models.tokenizer import CharTokenizer, TokenizerError
from rlaunch.runtimes.smoke import checkpoint as ckpt
from rlaunch.runtimes.smoke.config import SmokeConfig, SmokeConfigError


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
    another runtime wrote, and a resume path that is not a complete checkpoint."""
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
    step = ckpt.latest_step(root)
    return None if step is None else ckpt.step_dir(root, step)
