"""The `config` of each of rlaunch's own builders, as a typed model: one owner for the keys, types
and bounds that `./pants check` (schema.json), preflight (ART010) and the builder itself read.

A built artifact's `config` is free-form in the RunSpec (a third-party `module:Class` builder
reads its own), so for a registered builder of this package preflight checks the config against
the model here before anything builds; the builder parses the same model when it runs.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from rlaunch.spec.base import SpecModel


class BuilderConfig(SpecModel):
    """Base of every builder's config: unknown keys, loose types and integers beyond +-2**53
    are refused, as in every spec section."""


class CountdownDataConfig(BuilderConfig):
    """`countdown_data`: countdown problems, `train_rows` then `eval_rows` more."""

    seed: int
    """Seed of the problem generator: the same seed, the same problems."""
    train_rows: int = Field(gt=0)
    """Problems in train.parquet."""
    eval_rows: int = Field(ge=0)
    """Problems in eval.parquet (after the training ones)."""


class CharTokenizerConfig(BuilderConfig):
    """`char_tokenizer`: a character-level tokenizer."""

    characters: str | None = None
    """The vocabulary after the specials; null: rlaunch.models.tokenizer.CHARACTERS."""


class SFTConfig(BuilderConfig):
    """`sft_model`: a tiny transformer trained with supervised fine-tuning on countdown."""

    d_model: int = Field(gt=0)
    """Hidden size."""
    n_layers: int = Field(gt=0)
    """Transformer blocks."""
    n_heads: int = Field(gt=0)
    """Attention heads; d_model is divisible by it."""
    n_kv_heads: int = Field(gt=0)
    """Key/value heads; n_heads is divisible by it."""
    max_position_embeddings: int = Field(gt=0)
    """The longest sequence the model takes, in tokens."""
    steps: int = Field(ge=0)
    """SFT optimizer steps."""
    seed: int
    """Seed of the initial weights and of the batches."""
    batch_size: int = Field(default=64, gt=0)
    """Sequences per SFT step."""
    learning_rate: float = Field(default=3e-3, gt=0)
    """AdamW learning rate."""

    @model_validator(mode="after")
    def _heads_divide(self) -> SFTConfig:
        # Each head takes d_model / n_heads dimensions; each KV head serves n_heads / n_kv_heads
        # query heads (rlaunch.models.tiny.TinyConfig refuses the model otherwise).
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads {self.n_heads} does not divide d_model {self.d_model} "
                             f"({self.d_model} % {self.n_heads} = {self.d_model % self.n_heads})")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads {self.n_kv_heads} does not divide n_heads "
                             f"{self.n_heads} ({self.n_heads} % {self.n_kv_heads} = "
                             f"{self.n_heads % self.n_kv_heads})")
        return self


class GreedyEvalConfig(BuilderConfig):
    """`greedy_eval`: a report scoring models greedily on an eval split."""

    environment: Literal["countdown"]
    """The task whose reward scores the answers."""
    rows: int = Field(gt=0)
    """How many problems of eval.parquet to score (the first ones)."""
    max_new_tokens: int = Field(gt=0)
    """Generated tokens per answer."""


class GroundTruthConfig(BuilderConfig):
    """Where a prompt row's ground truth comes from."""

    column: str = Field(min_length=1)
    """The source column the ground truth is read from."""
    extract: str = Field(min_length=1)
    """`verbatim`, or a named extractor of the task (`final_answer` for gsm8k)."""


class PromptConfig(BuilderConfig):
    """`prompt_parquet`: a pinned HF dataset split turned into SkyRL's prompt rows."""

    task: str = Field(min_length=1)
    """The rlaunch.tasks module whose extractors read the source (`gsm8k`)."""
    template: str = Field(min_length=1)
    """The user message: a Python format string over the source row's columns."""
    ground_truth: GroundTruthConfig | None
    """Where the row's ground truth comes from. Null is refused (by `check`, ART010, and by the
    builder): every env prompt_parquet feeds scores each answer against it."""
    env_class: str = Field(min_length=1)
    """The skyrl-gym env id each row names."""
    reward_method: str = Field(min_length=1)
    """The row's `reward_spec.method` (`rule`)."""


BUILDER_CONFIGS: dict[str, type[BuilderConfig]] = {
    "countdown_data": CountdownDataConfig,
    "char_tokenizer": CharTokenizerConfig,
    "sft_model": SFTConfig,
    "greedy_eval": GreedyEvalConfig,
    "prompt_parquet": PromptConfig,
}
"""The config model of each of rlaunch's own builders that reads `config` (hf_snapshot and adopt
read none: their artifacts carry no config)."""


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names of the (nested) model that holds the key at `loc`."""
    current: Any = model
    for part in loc[:-1]:
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return []
        candidates = [arg for arg in getattr(field.annotation, "__args__", ())
                      if isinstance(arg, type) and issubclass(arg, BaseModel)]
        annotation = field.annotation
        current = candidates[0] if candidates else annotation
    return list(getattr(current, "model_fields", {}))


def config_problems(model: type[BaseModel], err: ValidationError) -> list[tuple[str, str]]:
    """`(field path, problem)` per bad field of a builder's `config`: the path (`config.seed`),
    what is wrong with the value, and for an unknown key the closest field name."""
    problems = []
    for error in err.errors():
        loc = tuple(part for part in error["loc"] if not str(part).startswith("function-"))
        field = ".".join(["config", *(str(part) for part in loc)])
        if error["type"] == "missing":
            problems.append((field, "Field required"))
            continue
        # A cross-field check (no loc) names its values itself; the whole config adds nothing.
        problem = f"{error['msg']} (got {error.get('input')!r})" if loc else error["msg"]
        if error["type"] == "extra_forbidden" and loc:
            close = difflib.get_close_matches(str(loc[-1]), _fields_at(model, loc), n=1)
            if close:
                problem += f"; did you mean {close[0]!r}?"
        problems.append((field, problem))
    return problems
