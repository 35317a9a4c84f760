"""Check a model's declared facts against the `config.json` it actually has.

Preflight trusts the facts declared beside a pin (heads for tensor parallelism, the context
window for lengths); the builder that materializes the model proves them, so a wrong fact fails
the build loudly instead of passing preflight silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlaunch.builders.base import AnyArtifact, BuildError
from rlaunch.spec.artifacts import ModelFacts, identity

_CHECKED = ("num_attention_heads", "num_key_value_heads", "max_position_embeddings")
# Where MoE configs keep their routed expert count (Qwen3-MoE, Mixtral, DeepSeek).
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts")


def _lookup(config: dict[str, Any], key: str) -> Any:
    # Multimodal configs nest the language model's fields under `text_config`.
    if key in config:
        return config[key]
    nested = config.get("text_config")
    return nested.get(key) if isinstance(nested, dict) else None


def facts_problems(facts: ModelFacts, config: dict[str, Any], source: str) -> list[str]:
    """Each mismatch as `facts.<field>: declared X, but <source> has <key> = Y`."""
    problems: list[str] = []
    for field in _CHECKED:
        declared = getattr(facts, field)
        actual = _lookup(config, field)
        if actual is None and field == "num_key_value_heads":
            # Plain multi-head attention configs omit it: one KV head per attention head.
            actual = _lookup(config, "num_attention_heads")
        if actual is None:
            problems.append(f"facts.{field}: declared {declared}, but {source} has no {field}")
        elif actual != declared:
            problems.append(
                f"facts.{field}: declared {declared}, but {source} has {field} = {actual}"
            )
    experts = next((_lookup(config, key) for key in _EXPERT_KEYS if _lookup(config, key)), None)
    if experts != facts.num_experts:
        problems.append(
            f"facts.num_experts: declared {json.dumps(facts.num_experts)}, but {source} has "
            f"{json.dumps(experts)} routed experts"
        )
    return problems


def verify_model_facts(artifact: AnyArtifact, model_dir: Path, source: str) -> None:
    """Raise BuildError listing every declared fact that `model_dir/config.json` contradicts."""
    ident = identity(artifact)
    facts: ModelFacts | None = getattr(artifact, "facts", None)
    if facts is None:
        raise BuildError(
            f"{ident}: a model artifact needs `facts` (num_attention_heads, num_key_value_heads, "
            f"max_position_embeddings, num_experts) to check against its config.json"
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
    problems = facts_problems(facts, config, f"config.json of {source}")
    if problems:
        listed = "\n".join(f"  - {problem}" for problem in problems)
        raise BuildError(
            f"{ident}: the declared facts do not match the model:\n{listed}\n"
            f"  Fix the facts in the spec (or the pin, if it points at the wrong model)."
        )
