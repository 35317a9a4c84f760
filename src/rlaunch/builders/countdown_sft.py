"""The countdown demo's `sft_model` builder: a TinyLM trained briefly (SFT) on countdown data.

    sft_model        deps {data, tokenizer}; config: model dims, steps, seed
                     -> config.json, model.safetensors, tokenizer.json, sft_metrics.json

Its own module because it imports torch: loading the data and tokenizer builders does not.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from rlaunch.builders.base import AnyArtifact, BuildError, Log, expect_type
from rlaunch.builders.config import parse_config
from rlaunch.builders.facts import facts_problems, verify_model_facts
from rlaunch.models.sft import mean_reward, sft_train
from rlaunch.models.tiny import TinyConfig, TinyLM, save_pretrained
from rlaunch.models.tokenizer import CharTokenizer
from rlaunch.spec.artifacts import BuiltArtifact, identity
from rlaunch.spec.builder_configs import SFTConfig
from rlaunch.tasks.parquet import read_countdown
from rlaunch.tasks.prompts import EVAL_FILE, TRAIN_FILE

METRICS_FILE = "sft_metrics.json"
_EVAL_SAMPLE = 200
"""Eval rows the builder scores after SFT (greedy), for sft_metrics.json."""



class SFTModelBuilder:
    """A TinyLM trained briefly (SFT) on the `data` dep's train.parquet with the `tokenizer` dep."""

    name = "sft_model"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        expect_type(self.name, artifact, BuiltArtifact)
        ident = identity(artifact)
        config = parse_config(SFTConfig, artifact)
        missing = sorted({"data", "tokenizer"} - set(deps))
        if missing:
            raise BuildError(
                f"{ident}: sft_model needs deps `data` (a countdown_data dataset) and "
                f"`tokenizer` (a char_tokenizer); missing: {', '.join(missing)}"
            )
        tokenizer = CharTokenizer.load(deps["tokenizer"])
        model_config = TinyConfig(
            vocab_size=tokenizer.vocab_size,
            d_model=config.d_model,
            n_layers=config.n_layers,
            n_heads=config.n_heads,
            n_kv_heads=config.n_kv_heads,
            max_position_embeddings=config.max_position_embeddings,
        )
        # Fail before training, not after: the facts must describe the model the config makes.
        if artifact.facts is not None:
            problems = facts_problems(artifact.facts, model_config.to_hf(), "the model config")
            if problems:
                raise BuildError(f"{ident}: the declared facts do not match: {'; '.join(problems)}")
        train = read_countdown(deps["data"] / TRAIN_FILE, "deps.data")
        evaluation = (
            read_countdown(deps["data"] / EVAL_FILE, "deps.data")[:_EVAL_SAMPLE]
            if (deps["data"] / EVAL_FILE).is_file()
            else []
        )
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # one thread: the same bytes on every run of this config
        try:
            torch.manual_seed(config.seed)
            model = TinyLM(model_config)
            log(f"{ident}: SFT for {config.steps} steps on {len(train)} rows")
            losses = sft_train(
                model,
                tokenizer,
                train,
                steps=config.steps,
                seed=config.seed,
                batch_size=config.batch_size,
                learning_rate=config.learning_rate,
            )
            reward = mean_reward(model, tokenizer, evaluation) if evaluation else None
        finally:
            torch.set_num_threads(threads)
        save_pretrained(model, tokenizer, out_dir)
        verify_model_facts(artifact, out_dir, "the built model")
        metrics = {
            "steps": config.steps,
            "first_loss": losses[0] if losses else None,
            "final_loss": losses[-1] if losses else None,
            "eval_rows": len(evaluation),
            "eval_mean_reward_greedy": reward,
        }
        (out_dir / METRICS_FILE).write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
        summary = f"loss {losses[0]:.3f} -> {losses[-1]:.3f}" if losses else "no steps"
        shown = f", greedy eval reward {reward:.3f}" if reward is not None else ""
        log(f"{ident}: {summary}{shown}")
