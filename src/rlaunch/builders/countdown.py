"""Builders of the countdown demo (experiments/countdown): data, tokenizer, an SFT'd tiny model.

    countdown_data   config {seed, train_rows, eval_rows}      -> train.parquet, eval.parquet
    char_tokenizer   config {} (or {characters})               -> tokenizer.json
    sft_model        deps {data, tokenizer}; config: model dims, steps, seed
                                                               -> config.json, model.safetensors,
                                                                  tokenizer.json, sft_metrics.json

The data are runtime-format prompt rows (rlaunch.tasks.prompts), the files SkyRL's
PromptDataset reads too, so both runtimes take one data handoff. The SFT builder lives in
`countdown_sft` (it imports torch; the other two do not). All three
are deterministic: the same config and deps give the same bytes (the model on one
CPU thread). The SFT run is short; it teaches the answer format and some arithmetic, so that RL
starts from a policy that sometimes succeeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlaunch.builders.base import AnyArtifact, BuildError, Built, Log, expect_type
from rlaunch.builders.config import parse_config
from rlaunch.models.tokenizer import CharTokenizer
from rlaunch.spec.artifacts import BuiltArtifact, identity
from rlaunch.spec.builder_configs import CharTokenizerConfig, CountdownDataConfig
from rlaunch.tasks.countdown import make_problems, prompt_rows
from rlaunch.tasks.parquet import write_prompts
from rlaunch.tasks.prompts import EVAL_FILE, TRAIN_FILE


class CountdownDataBuilder:
    """Countdown problems from rlaunch.tasks.countdown: `train_rows` then `eval_rows` more."""

    name = "countdown_data"

    def build(
        self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log
    ) -> Built:
        expect_type(self.name, artifact, BuiltArtifact)
        config = parse_config(CountdownDataConfig, artifact)
        if artifact.rows is not None and artifact.rows != config.train_rows:
            raise BuildError(
                f"{identity(artifact)}: rows declares {artifact.rows}, but config.train_rows is "
                f"{config.train_rows}; make them agree"
            )
        problems = make_problems(config.seed, config.train_rows + config.eval_rows)
        write_prompts(out_dir / TRAIN_FILE, prompt_rows(problems[: config.train_rows], "train"))
        write_prompts(out_dir / EVAL_FILE, prompt_rows(problems[config.train_rows :], "eval"))
        log(f"{identity(artifact)}: {config.train_rows} train and {config.eval_rows} eval rows")
        return Built(rows=config.train_rows)


class CharTokenizerBuilder:
    """The fixed-vocabulary character tokenizer of rlaunch.models.tokenizer."""

    name = "char_tokenizer"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        expect_type(self.name, artifact, BuiltArtifact)
        config = parse_config(CharTokenizerConfig, artifact)
        tokenizer = CharTokenizer() if config.characters is None else CharTokenizer(
            config.characters
        )
        tokenizer.save(out_dir)
        log(f"{identity(artifact)}: vocabulary of {tokenizer.vocab_size} tokens")


def countdown_model_spec(
    version: str = "dev",
    *,
    seed: int = 0,
    train_rows: int = 4000,
    eval_rows: int = 200,
    sft_steps: int = 1000,
) -> dict[str, Any]:
    """The countdown demo's model artifact with its deps, as a plain dict in the public format.

    The defaults are the demo's (about 40 s of SFT on one CPU thread, greedy hit rate near
    45%); tests and benchmarks pass fewer steps."""
    data = {
        "type": "built",
        "name": "countdown-data",
        "version": version,
        "kind": "dataset",
        "builder": "countdown_data",
        "config": {"seed": seed, "train_rows": train_rows, "eval_rows": eval_rows},
        "deps": {},
        "facts": None,
        "rows": train_rows,
    }
    tokenizer = {
        "type": "built",
        "name": "countdown-tokenizer",
        "version": version,
        "kind": "tokenizer",
        "builder": "char_tokenizer",
        "config": {},
        "deps": {},
        "facts": None,
        "rows": None,
    }
    return {
        "type": "built",
        "name": "countdown-sft",
        "version": version,
        "kind": "model",
        "builder": "sft_model",
        "config": {
            "d_model": 64,
            "n_layers": 2,
            "n_heads": 4,
            "n_kv_heads": 2,
            "max_position_embeddings": 64,
            "steps": sft_steps,
            "seed": seed,
        },
        "deps": {"data": data, "tokenizer": tokenizer},
        "facts": {
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 64,
            "num_experts": None,
            "num_hidden_layers": 2,
            "hidden_size": 64,
            "intermediate_size": 256,
            "vocab_size": 50,
            "head_dim": None,
            "torch_dtype": "float32",
            "num_parameters": 101888,
        },
        "rows": None,
    }
