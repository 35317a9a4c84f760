"""A GSM8K-shaped dataset repo for the local Hub (tests/hubserver.py), and the artifacts that
turn it into runtime-format prompts, shared by the builder and handoff tests.

The repo has the layout and card of openai/gsm8k (configs `main` and `socratic`, parquet per
split under the config's folder) with a few rows written here: columns `question` and `answer`,
the answer a worked solution ending `#### N`.
"""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rlaunch.spec.artifacts import BuiltArtifact, HFDataset

REPO = "openai/gsm8k"
COMMIT = "e" * 40
CARD = b"""---
configs:
- config_name: main
  data_files:
  - split: train
    path: main/train-*
  - split: test
    path: main/test-*
- config_name: socratic
  data_files:
  - split: train
    path: socratic/train-*
---
# GSM8K-shaped test data
"""
TEMPLATE = "{question} Let's think step by step and output the final answer after \"####\"."


def problem(index: int) -> dict[str, str]:
    apples, more = 3 + index, 1000 + 7 * index
    return {
        "question": f"Ann has {apples} apples and buys {more} more. How many apples has she?",
        "answer": f"She has {apples} + {more} = {apples + more} apples.\n#### "
                  f"{apples + more:,}",
    }


def _parquet(rows: list[dict[str, str]]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return sink.getvalue()


def repos(train_rows: int = 12, test_rows: int = 4) -> dict[tuple[str, str, str], dict[str, bytes]]:
    train = [problem(index) for index in range(train_rows)]
    test = [problem(100 + index) for index in range(test_rows)]
    return {
        ("datasets", REPO, COMMIT): {
            "README.md": CARD,
            "main/train-00000-of-00001.parquet": _parquet(train),
            "main/test-00000-of-00001.parquet": _parquet(test),
            "socratic/train-00000-of-00001.parquet": _parquet(train[:2]),
        }
    }


def source(split: str = "train", rows: int | None = None) -> dict[str, Any]:
    return {
        "type": "hf_dataset", "name": f"gsm8k-{split}", "version": "2026.11.01",
        "repo_id": REPO, "revision": COMMIT, "config": "main", "split": split, "rows": rows,
    }


def prompt_config(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "task": "gsm8k",
        "template": TEMPLATE,
        "ground_truth": {"column": "answer", "extract": "final_answer"},
        "env_class": "gsm8k",
        "reward_method": "rule",
    }
    config.update(changes)
    return config


def prompts(
    split: str = "train", *, name: str | None = None, rows: int | None = None, **changes: Any
) -> BuiltArtifact:
    """A prompt_parquet artifact of the split; `changes` edit its config."""
    return BuiltArtifact.model_validate({
        "type": "built", "name": name or f"gsm8k-{split}-prompts", "version": "2026.11.02",
        "kind": "dataset", "builder": "prompt_parquet", "config": prompt_config(**changes),
        "deps": {"source": source(split)}, "facts": None, "rows": rows,
    })


def source_artifact(split: str = "train") -> HFDataset:
    return HFDataset.model_validate(source(split))
