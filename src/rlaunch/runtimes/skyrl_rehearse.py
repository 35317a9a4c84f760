"""What a rehearsal changes in a SkyRL launch, on the node, after staging (docs/rehearsal.md).

`python -m rlaunch.runtimes.skyrl LAUNCH_YAML --rehearse` stages the inputs and rewrites the
store paths as a launch does; then, before the handoff check, `rehearse` changes the SkyRL
overrides so that SkyRL's own loop runs a few steps on this machine's CPU:
- every model input that is not a run's export is shrunk: the same architecture (its
  config.json with `SHAPE` applied: 2 layers of width 64), the same tokenizer files, random
  weights (seeded by the run's seed), saved by transformers into the node cache. A run's export
  (a previous rehearsal's) and a model no larger than that are trained from as they are;
- every data file keeps its first rows only: `STEPS` batches of training prompts, one eval
  batch;
- the batch shrinks to one prompt per data-parallel rank (`train_batch_size`, the mini
  batches), at most `SAMPLES` samples per prompt, micro batches of 1, and generations of at
  most `GENERATE_TOKENS` tokens; `trainer.max_training_steps` is `STEPS`; the data loader
  reads in SkyRL's process (`data.dataloader.num_workers` 0);
- SkyRL runs its entrypoint with `trainer.override_entrypoint=rlaunch.runtimes.skyrl_cpu`
  (SkyRL's loop with CPU workers and engines), `trainer.flash_attn=false` and
  `trainer.remove_microbatch_padding=false` (no flash-attn on CPU);
- an eval stage (SkyRL's eval-only entrypoint `skyrl.train.entrypoints.main_generate`, which
  reads no `override_entrypoint`) runs as `python -m rlaunch.runtimes.skyrl_cpu
  skyrl.train.entrypoints.main_generate <overrides>`: SkyRL's `EvalOnlyEntrypoint` with the
  CPU engines, on one eval batch of at most `SAMPLES` samples per prompt.
Everything else is the launch YAML's: the checkpoint, export, eval and resume settings, the
store paths, the logger, the environment, the role geometry on the head's simulated GPUs.

Runs in the rehearsal environment (scripts/skyrl-rehearsal-env: torch, transformers, pyarrow).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

STEPS = 4
"""Training steps of a rehearsal (SkyRL's trainer.max_training_steps)."""
SAMPLES = 4
"""At most this many samples per prompt (generator.n_samples_per_prompt)."""
GENERATE_TOKENS = 24
"""At most this many generated tokens per sample (sampling_params.max_generate_length)."""
ENTRYPOINT = "rlaunch.runtimes.skyrl_cpu"
OVERRIDE_ENTRYPOINT = "trainer.override_entrypoint"
TRAIN_ENTRYPOINT = "skyrl.train.entrypoints.main_base"
EVAL_ENTRYPOINT = "skyrl.train.entrypoints.main_generate"
PROGRAMS = {
    TRAIN_ENTRYPOINT: ["-m", TRAIN_ENTRYPOINT, f"{OVERRIDE_ENTRYPOINT}={ENTRYPOINT}"],
    EVAL_ENTRYPOINT: ["-m", ENTRYPOINT, EVAL_ENTRYPOINT],
}
"""Per SkyRL entrypoint, what a rehearsal runs (after the interpreter, before the overrides):
SkyRL's training entrypoint hands over to the CPU module itself (its `main`, through
`override_entrypoint`); the eval-only one reads no override, so the CPU module runs it."""
SHAPE = {
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "head_dim": 16,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "num_experts": 4,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "max_window_layers": 2,
}
"""The shrunk model: set where the architecture's config has the field."""
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".safetensors.index.json",
                    ".bin.index.json")
_MODEL_PATHS = ("policy", "ref", "critic")

Say = Callable[[str], None]


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def within_shape(folder: Path) -> str | None:
    """What the model in `folder` is when it is no larger than the rehearsal's shape (layers
    and width, from its config.json), else None."""
    config = json.loads((folder / "config.json").read_text())
    layers, width = config.get("num_hidden_layers"), config.get("hidden_size")
    if not isinstance(layers, int) or not isinstance(width, int):
        return None
    if layers > SHAPE["num_hidden_layers"] or width > SHAPE["hidden_size"]:
        return None
    architecture = (config.get("architectures") or [config.get("model_type")])[0]
    return f"{architecture}, {layers} layers of width {width}, no larger than a rehearsal's"


def shrink_model(folder: Path, cache: Path, seed: int) -> tuple[Path, str]:
    """`folder`'s architecture at the rehearsal's size, random weights, `folder`'s tokenizer
    files; built once into `cache` (keyed by the shrunk config and the seed)."""
    # Imported here: the adapter imports this module in SkyRL environments without torch too.
    from transformers import AutoConfig, AutoModelForCausalLM
    import torch

    config = AutoConfig.from_pretrained(str(folder))
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None)
    for key, value in SHAPE.items():
        if getattr(config, key, None) is not None:
            setattr(config, key, value)
    if kv_heads is not None and heads is not None:
        # Grouped-query attention stays grouped: 4 heads over 2 key/value heads.
        config.num_key_value_heads = 2 if kv_heads < heads else 4
    layer_types = getattr(config, "layer_types", None)
    if isinstance(layer_types, list):
        config.layer_types = layer_types[: SHAPE["num_hidden_layers"]]
    config.torch_dtype = "float32"
    text = config.to_json_string(use_diff=False)
    target = cache / "models" / folder.parent.name / f"{folder.name}-{_digest(text, str(seed))}"
    architecture = (config.architectures or [type(config).__name__])[0]
    what = (f"{architecture}, {config.num_hidden_layers} layers of width {config.hidden_size}, "
            f"vocabulary {config.vocab_size}")
    if (target / "config.json").is_file():
        return target, what
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(str(partial), safe_serialization=True)
    for path in sorted(folder.iterdir()):
        if (path.is_file() and path.name != "config.json" and not path.name.startswith("_")
                and not path.name.endswith(_WEIGHT_SUFFIXES)):
            shutil.copy2(path, partial / path.name)
    partial.rename(target)
    return target, what


def bound_rows(files: list[str], rows: int, cache: Path) -> list[str]:
    """Each parquet file's first `rows` rows, written once into `cache`."""
    out = []
    for name in files:
        source = Path(name)
        target = cache / "data" / _digest(str(source), str(source.stat().st_mtime_ns),
                                          str(rows)) / source.name
        if not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            table = pq.read_table(source)
            partial = target.with_name(target.name + ".partial")
            pq.write_table(table.slice(0, rows), partial)
            partial.rename(target)
        out.append(str(target))
    return out


def _world(placement: dict[str, Any], role: str) -> int:
    return int(placement.get(f"{role}_num_nodes", 1)) * int(
        placement.get(f"{role}_num_gpus_per_node", 1))


class RehearsalError(ValueError):
    """A launch that cannot be rehearsed."""


def rehearse(tree: dict[str, Any], *, exports: set[str], seed: int, cache: Path,
             say: Say, entrypoint: str = TRAIN_ENTRYPOINT
             ) -> tuple[dict[str, Any], list[str]]:
    """The rehearsal's SkyRL subtree from the staged one, and the program that runs it: the
    arguments after the interpreter, before the overrides (`PROGRAMS`). `exports`: the staged
    folders that are run exports (trained from as they are); `entrypoint`: the runtime's."""
    program = PROGRAMS.get(entrypoint)
    if program is None:
        raise RehearsalError(
            f"runtime.entrypoint {entrypoint} cannot be rehearsed: a rehearsal runs SkyRL "
            f"0.3.0's {TRAIN_ENTRYPOINT} or {EVAL_ENTRYPOINT} with CPU workers and engines")
    out = copy.deepcopy(tree)
    trainer = out.setdefault("trainer", {})
    generator = out.setdefault("generator", {})
    data = out.setdefault("data", {})
    placement = trainer.get("placement", {})
    shrunk: dict[str, Path] = {}
    for role in _MODEL_PATHS:
        model = trainer.get(role, {}).get("model", {})
        path = model.get("path")
        if not path:
            continue
        if path in exports:
            say(f"rehearsal: trainer.{role}.model.path {path}: a run's export, trained from "
                "as it is")
            continue
        if path not in shrunk:
            small = within_shape(Path(path))
            if small is not None:
                shrunk[path] = Path(path)
                say(f"rehearsal: trainer.{role}.model.path {path}: {small}, trained from as "
                    "it is")
            else:
                shrunk[path], what = shrink_model(Path(path), cache, seed)
                say(f"rehearsal: trainer.{role}.model.path {path} -> {shrunk[path]} ({what}, "
                    "random weights, the same tokenizer files)")
        model["path"] = str(shrunk[path])
    worlds = [_world(placement, "policy")]
    if trainer.get("critic", {}).get("model", {}).get("path"):
        worlds.append(_world(placement, "critic"))
    batch = math.lcm(*worlds)
    samples = min(int(generator.get("n_samples_per_prompt", 1)), SAMPLES)
    trainer.update({
        "train_batch_size": batch, "policy_mini_batch_size": batch,
        "critic_mini_batch_size": batch, "micro_train_batch_size_per_gpu": 1,
        "micro_forward_batch_size_per_gpu": 1, "eval_batch_size": batch,
        "max_training_steps": STEPS, "epochs": 1, "flash_attn": False,
        "remove_microbatch_padding": False,
    })
    # Four rows need no loader processes: each would import torch again (seconds apiece).
    data.setdefault("dataloader", {})["num_workers"] = 0
    generator["n_samples_per_prompt"] = samples
    eval_samples = min(int(generator.get("eval_n_samples_per_prompt", 1)), SAMPLES)
    generator["eval_n_samples_per_prompt"] = eval_samples
    for key in ("sampling_params", "eval_sampling_params"):
        params = generator.setdefault(key, {})
        params["max_generate_length"] = min(
            int(params.get("max_generate_length") or GENERATE_TOKENS), GENERATE_TOKENS)
    if data.get("train_data"):
        data["train_data"] = bound_rows(list(data["train_data"]), batch * STEPS, cache)
    if data.get("val_data"):
        data["val_data"] = bound_rows(list(data["val_data"]), batch, cache)
    if entrypoint == EVAL_ENTRYPOINT:
        say(f"rehearsal: an eval of {batch} row(s) x {eval_samples} sample(s), at most "
            f"{GENERATE_TOKENS} generated tokens; SkyRL's eval-only entrypoint with CPU engines "
            f"(python {' '.join(program)})")
    else:
        say(f"rehearsal: {STEPS} steps of {batch} prompt(s) x {samples} samples, at most "
            f"{GENERATE_TOKENS} generated tokens; {batch * STEPS} training rows, {batch} eval "
            "rows; SkyRL's loop with CPU workers and engines "
            f"({OVERRIDE_ENTRYPOINT}={ENTRYPOINT})")
    return out, list(program)
