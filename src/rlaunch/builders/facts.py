"""Model facts from a model's own files: read them (`rlaunch pin`) and check declared ones.

Preflight trusts the facts declared beside a pin (heads for tensor parallelism, the context
window for lengths, layers, widths, vocabulary, dtype and parameters for memory); the builder
that materializes the model proves them, so a wrong fact fails the build loudly instead of
passing preflight silently. `facts_from_config` is the one mapping from config.json keys to
facts: `rlaunch pin` writes what it returns, the builders compare against it.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from rlaunch.builders.base import AnyArtifact, BuildError
from rlaunch.spec.artifacts import HFModel, ModelFacts, identity

# Facts read from config.json as integers under their own name.
_INT_FACTS = (
    "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
    "num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size",
)
# Where MoE configs keep their routed expert count (Qwen3-MoE, Mixtral, DeepSeek).
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")
# transformers >= 4.56 writes `dtype`; earlier versions `torch_dtype`.
_DTYPE_KEYS = ("torch_dtype", "dtype")
DTYPES = ("bfloat16", "float16", "float32")


def _lookup(config: dict[str, Any], key: str) -> Any:
    # Multimodal configs nest the language model's fields under `text_config`.
    if key in config:
        return config[key]
    nested = config.get("text_config")
    return nested.get(key) if isinstance(nested, dict) else None


def config_facts(config: dict[str, Any]) -> dict[str, Any]:
    """Every fact as config.json gives it (None where it does not), parameters aside."""
    found: dict[str, Any] = {field: _lookup(config, field) for field in _INT_FACTS}
    if found["num_key_value_heads"] is None:
        # Plain multi-head attention configs omit it: one KV head per attention head.
        found["num_key_value_heads"] = found["num_attention_heads"]
    found["num_experts"] = next(
        (_lookup(config, key) for key in _EXPERT_KEYS if _lookup(config, key)), None
    )
    found["head_dim"] = _lookup(config, "head_dim")
    found["torch_dtype"] = next(
        (_lookup(config, key) for key in _DTYPE_KEYS if _lookup(config, key) is not None), None
    )
    return found


def facts_problems(
    facts: ModelFacts, config: dict[str, Any], source: str, num_parameters: int | None = None
) -> list[str]:
    """Each mismatch as `facts.<field>: declared X, but <source> has <key> = Y`. The parameter
    count is compared when the caller counted it (`num_parameters`)."""
    problems: list[str] = []
    actual = config_facts(config)
    for field in (*_INT_FACTS, "torch_dtype"):
        declared = getattr(facts, field)
        if actual[field] is None:
            problems.append(f"facts.{field}: declared {json.dumps(declared)}, but {source} has "
                            f"no {field}")
        elif actual[field] != declared:
            problems.append(f"facts.{field}: declared {json.dumps(declared)}, but {source} has "
                            f"{field} = {json.dumps(actual[field])}")
    if actual["head_dim"] != facts.head_dim:
        has = "no head_dim" if actual["head_dim"] is None else f"head_dim = {actual['head_dim']}"
        problems.append(f"facts.head_dim: declared {json.dumps(facts.head_dim)}, but {source} "
                        f"has {has}")
    if actual["num_experts"] != facts.num_experts:
        problems.append(
            f"facts.num_experts: declared {json.dumps(facts.num_experts)}, but {source} has "
            f"{json.dumps(actual['num_experts'])} routed experts"
        )
    if num_parameters is not None and num_parameters != facts.num_parameters:
        problems.append(f"facts.num_parameters: declared {facts.num_parameters}, but the "
                        f"safetensors files of {source.removeprefix('config.json of ')} hold "
                        f"{num_parameters} parameters")
    return problems


def safetensors_parameters(path: Path) -> int:
    """Parameters in one safetensors file, from its header: an 8-byte little-endian length, then
    a JSON object of tensors with their shapes (the format's own layout)."""
    with path.open("rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    total = 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for size in tensor["shape"]:
            count *= size
        total += count
    return total


def count_parameters(model_dir: Path) -> int | None:
    """Parameters of every `*.safetensors` file directly in `model_dir` (the shards of one
    model); None when it has none."""
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        return None
    return sum(safetensors_parameters(path) for path in files)


def pin_command(artifact: AnyArtifact) -> str:
    """The `rlaunch pin` command that prints the right facts for a Hugging Face model."""
    if not isinstance(artifact, HFModel):
        return ""
    return (f"rlaunch pin {artifact.repo_id} --revision {artifact.revision} "
            f"--name {artifact.name} --version {artifact.version}")


def verify_model_facts(artifact: AnyArtifact, model_dir: Path, source: str) -> None:
    """Raise BuildError listing every declared fact that `model_dir/config.json` (and the
    parameter count of its safetensors files) contradicts."""
    ident = identity(artifact)
    facts: ModelFacts | None = getattr(artifact, "facts", None)
    if facts is None:
        raise BuildError(
            f"{ident}: a model artifact needs `facts` to check against its config.json"
            + (f"; `{pin_command(artifact)}` prints them" if pin_command(artifact) else "")
        )
    config_path = model_dir / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BuildError(
            f"{ident}: {source} has no config.json, so its facts cannot be checked"
        ) from None
    except (OSError, ValueError) as err:
        raise BuildError(f"{ident}: config.json of {source} cannot be read: {err}") from None
    if not isinstance(config, dict):
        raise BuildError(f"{ident}: config.json of {source} is not a JSON object")
    try:
        parameters = count_parameters(model_dir)
    except (OSError, ValueError, KeyError, TypeError, struct.error) as err:
        raise BuildError(f"{ident}: the safetensors headers of {source} cannot be read: "
                         f"{err}") from None
    problems = facts_problems(facts, config, f"config.json of {source}", parameters)
    if parameters is None:
        problems.append(f"facts.num_parameters: declared {facts.num_parameters}, but {source} "
                        f"has no *.safetensors file to count")
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        command = pin_command(artifact)
        fix = (f"  Fix: `{command}` prints the facts of this pin (or fix the pin, if it points "
               f"at the wrong model)." if command else
               "  Fix the facts in the spec (or the config, if it makes the wrong model).")
        raise BuildError(f"{ident}: the declared facts do not match the model:\n{listed}\n{fix}")
