"""Builders of the countdown demo (experiments/countdown): data, tokenizer, an SFT'd tiny model.

    countdown_data   config {seed, train_rows, eval_rows}      -> train.jsonl, eval.jsonl
    char_tokenizer   config {} (or {characters})               -> tokenizer.json
    sft_model        deps {data, tokenizer}; config: model dims, steps, seed
                                                               -> config.json, model.safetensors,
                                                                  tokenizer.json, sft_metrics.json

All three are deterministic: the same config and deps give the same bytes (the model on one
CPU thread). The SFT run is short; it teaches the answer format and some arithmetic, so that RL
starts from a policy that sometimes succeeds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rlaunch.builders.base import AnyArtifact, BuildError, Log, expect_type
from rlaunch.builders.facts import facts_problems, verify_model_facts
from rlaunch.spec.artifacts import BuiltArtifact, identity

TRAIN_FILE = "train.jsonl"
EVAL_FILE = "eval.jsonl"
METRICS_FILE = "sft_metrics.json"
_EVAL_SAMPLE = 200

_Config = TypeVar("_Config", bound=BaseModel)


class _BuilderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class DataConfig(_BuilderConfig):
    seed: int
    train_rows: int = Field(gt=0)
    eval_rows: int = Field(ge=0)


class TokenizerConfig(_BuilderConfig):
    characters: str | None = None
    """The vocabulary after the specials; null: rlaunch.models.tokenizer.CHARACTERS."""


class SFTConfig(_BuilderConfig):
    d_model: int = Field(gt=0)
    n_layers: int = Field(gt=0)
    n_heads: int = Field(gt=0)
    n_kv_heads: int = Field(gt=0)
    max_position_embeddings: int = Field(gt=0)
    steps: int = Field(ge=0)
    """SFT optimizer steps."""
    seed: int
    batch_size: int = Field(default=64, gt=0)
    learning_rate: float = Field(default=3e-3, gt=0)


def parse_config(model: type[_Config], artifact: BuiltArtifact) -> _Config:
    """The builder config, or a BuildError naming every bad field of `config`."""
    try:
        return model.model_validate(artifact.config)
    except ValidationError as err:
        problems = []
        for error in err.errors():
            field = ".".join(["config", *(str(part) for part in error["loc"])])
            shown = "" if error["type"] == "missing" else f" (got {error.get('input')!r})"
            problems.append(f"{field}: {error['msg']}{shown}")
        fields = ", ".join(model.model_fields)
        raise BuildError(
            f"{identity(artifact)}: invalid config for builder {artifact.builder!r}: "
            f"{'; '.join(problems)}. Its fields: {fields}"
        ) from None


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(
            json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n" for row in rows
        )


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


class CountdownDataBuilder:
    """Countdown problems from rlaunch.tasks.countdown: `train_rows` then `eval_rows` more."""

    name = "countdown_data"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        from rlaunch.tasks.countdown import make_problems

        expect_type(self.name, artifact, BuiltArtifact)
        config = parse_config(DataConfig, artifact)
        if artifact.rows is not None and artifact.rows != config.train_rows:
            raise BuildError(
                f"{identity(artifact)}: rows declares {artifact.rows}, but config.train_rows is "
                f"{config.train_rows}; make them agree"
            )
        problems = make_problems(config.seed, config.train_rows + config.eval_rows)
        _write_jsonl(out_dir / TRAIN_FILE, problems[: config.train_rows])
        _write_jsonl(out_dir / EVAL_FILE, problems[config.train_rows :])
        log(f"{identity(artifact)}: {config.train_rows} train and {config.eval_rows} eval rows")


class CharTokenizerBuilder:
    """The fixed-vocabulary character tokenizer of rlaunch.models.tokenizer."""

    name = "char_tokenizer"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        from rlaunch.models.tokenizer import CharTokenizer

        expect_type(self.name, artifact, BuiltArtifact)
        config = parse_config(TokenizerConfig, artifact)
        tokenizer = CharTokenizer() if config.characters is None else CharTokenizer(
            config.characters
        )
        tokenizer.save(out_dir)
        log(f"{identity(artifact)}: vocabulary of {tokenizer.vocab_size} tokens")


class SFTModelBuilder:
    """A TinyLM trained briefly (SFT) on the `data` dep's train.jsonl with the `tokenizer` dep."""

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
        import torch

        from rlaunch.models.sft import mean_reward, sft_train
        from rlaunch.models.tiny import TinyConfig, TinyLM, save_pretrained
        from rlaunch.models.tokenizer import CharTokenizer

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
        train = _read_jsonl(deps["data"] / TRAIN_FILE)
        evaluation = (
            _read_jsonl(deps["data"] / EVAL_FILE)[:_EVAL_SAMPLE]
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
        },
        "rows": None,
    }
