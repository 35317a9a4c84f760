"""Helpers of the smoke runtime tests (a unique module name: importable from any test file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .demo import build_inputs, render_smoke, smoke_spec

TINY_DIMS = {"d_model": 32, "n_layers": 1, "n_heads": 4, "n_kv_heads": 2,
             "max_position_embeddings": 32}
TINY_SPEC = dict(train_batch_size=4, policy_mini_batch_size=2, micro_train_batch_size_per_gpu=4,
                 micro_forward_batch_size_per_gpu=16, n_samples_per_prompt=4, eval_batch_size=8,
                 max_training_steps=8, ckpt_interval=2, train_rows=64)


def write_launch(store: Path, model_dir: Path, **overrides: Any) -> tuple[Path, dict]:
    """Render a countdown smoke spec into `store`, build its inputs, return (yaml path, doc)."""
    spec = smoke_spec(**{**TINY_SPEC, **overrides})
    text, document = render_smoke(spec, str(store))
    build_inputs(document, train_rows=spec["train_data"]["rows"], eval_rows=16,
                 model_source=model_dir)
    path = store / "launch.yaml"
    path.write_text(text)
    return path, document
