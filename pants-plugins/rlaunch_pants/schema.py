"""The RunSpec schema, as the library wrote it into `schema.json` beside this module.

The library's pydantic models are the only schema. `scripts/gen-docs` writes what the plugin needs
from them (keys, types, choices, null-ability, the meaning of every key, the artifact slots, the
pin patterns, the world rules) and the plugin derives its dict-key checks, choice lists and help
from that file, so a key added to a library model needs no edit here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SCHEMA_FILE = Path(__file__).with_name("schema.json")
SCHEMA: dict[str, Any] = json.loads(SCHEMA_FILE.read_text())

ARTIFACT_SLOTS: tuple[str, ...] = tuple(SCHEMA["artifact_slots"])
RUN_EXPORT_SLOTS: tuple[str, ...] = tuple(SCHEMA["run_export_slots"])
PATTERNS = {name: re.compile(pattern) for name, pattern in SCHEMA["patterns"].items()}
WORLD_RULES: tuple[tuple[str, str], ...] = tuple(
    (rule["code"], rule["summary"]) for rule in SCHEMA["world_rules"]
)


def entry(path: str) -> dict[str, Any]:
    """The schema entry of a RunSpec key path, e.g. `role_plan.policy`."""
    keys = SCHEMA["run_spec"]
    found: dict[str, Any] = {}
    for part in path.split("."):
        found = keys[part]
        keys = found.get("keys", {})
    return found


def section_keys(path: str) -> dict[str, Any]:
    """The keys of the RunSpec dict at `path`; `model_facts` is an artifact's `facts`."""
    if path == "model_facts":
        return dict(SCHEMA["model_facts"])
    return entry(path)["keys"]


def doc(path: str) -> str:
    return str(entry(path)["doc"])


def choices(path: str) -> tuple[str, ...]:
    return tuple(entry(path)["choices"])
