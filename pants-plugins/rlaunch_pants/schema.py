"""The RunSpec schema, as the library wrote it into `schema.json` beside this module.

The library's pydantic models are the only schema. `scripts/gen-docs` writes what the plugin needs
from them (keys, types, choices, bounds, defaults, null-ability, the meaning of every key, every
artifact variant, which section each BUILD target type holds, a worked example, the artifact
slots, the pin patterns, the world rules) and the plugin makes its fields, their checks and help,
and the spec it writes from that file, so a key added to a library model needs no edit here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

SCHEMA_FILE = Path(__file__).with_name("schema.json")
SCHEMA: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())

ARTIFACT_SLOTS: tuple[str, ...] = tuple(SCHEMA["artifact_slots"])
RUN_EXPORT_SLOTS: tuple[str, ...] = tuple(SCHEMA["run_export_slots"])
PATTERNS = {name: re.compile(pattern) for name, pattern in SCHEMA["patterns"].items()}
WORLD_RULES: tuple[tuple[str, str], ...] = tuple(
    (rule["code"], rule["summary"]) for rule in SCHEMA["world_rules"]
)
# BUILD target alias -> the schema path of what it holds: a RunSpec section ("" is the run) or
# an artifact variant (`artifacts.<type tag>`).
TARGETS: dict[str, str] = {
    alias: held["section"] if "section" in held else f"artifacts.{held['artifact']}"
    for alias, held in SCHEMA["targets"].items()
}
ARTIFACT_KINDS: tuple[str, ...] = tuple(
    SCHEMA["artifacts"]["adopted"]["keys"]["kind"]["choices"]
)


def _top(path: str) -> tuple[dict[str, Any], list[str]]:
    """The entry a path starts from and the parts below it."""
    parts = path.split(".") if path else []
    if parts[:1] == ["artifacts"]:
        variant = SCHEMA["artifacts"][parts[1]]
        return {"type": "dict", "nullable": False, **variant}, parts[2:]
    if parts[:1] == ["model_facts"]:
        facts = {"type": "dict", "nullable": True, "doc": "", "keys": SCHEMA["model_facts"]}
        return facts, parts[1:]
    return {"type": "dict", "nullable": False, "doc": "", "keys": SCHEMA["run_spec"]}, parts


def entry(path: str) -> dict[str, Any]:
    """The schema entry at a key path: `role_plan.policy`, `execution.priority`,
    `artifacts.hf_dataset.split`, `model_facts` (an artifact's `facts`), "" (the run)."""
    found, parts = _top(path)
    for part in parts:
        found = found["keys"][part]
    return found


def section_keys(path: str) -> dict[str, Any]:
    """The keys of the dict at `path`; `model_facts` is an artifact's `facts`."""
    return dict(entry(path)["keys"])


def doc(path: str) -> str:
    return str(entry(path)["doc"])


def choices(path: str) -> tuple[str, ...]:
    return tuple(entry(path)["choices"])


def _example_artifacts() -> Iterator[dict[str, Any]]:
    example = SCHEMA["example"]
    stack = [example[slot] for slot in ARTIFACT_SLOTS if example.get(slot)]
    while stack:
        artifact = stack.pop(0)
        yield artifact
        stack.extend(artifact.get("deps", {}).values())


def example_value(path: str) -> Optional[Any]:
    """The worked example's value at a key path (None where it has none, or null)."""
    parts = path.split(".") if path else []
    if parts[:1] == ["artifacts"]:
        tag, parts = parts[1], parts[2:]
        found: Any = next(
            (artifact for artifact in _example_artifacts() if artifact["type"] == tag), None
        )
    else:
        found = SCHEMA["example"]
    for part in parts:
        if not isinstance(found, dict) or part not in found:
            return None
        found = found[part]
    return found
