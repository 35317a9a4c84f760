"""Extra runtime settings: the rest of SkyRL's config, by its own dotted names, checked.

A run's `settings` map SkyRL config names (`generator.inference_engine.gpu_memory_utilization`,
`trainer.policy.model.lora.rank`, ...) to values. Each name must be a field of the pinned
release's catalog (`SettingsCatalog`, generated from the installed package by
scripts/gen-skyrl-fields), each value must have the field's type, and no name may be one the
plan already decides (`PLAN_OWNED`): geometry, batch sizes, lengths, paths, seed, resume and the
logger's identity are rendered from the plan and never repeated as a literal.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from rlaunch.spec.skyrl_mapping import plan_owned

PLAN_OWNED: Mapping[str, str] = plan_owned()
"""Dotted SkyRL name -> the RunSpec field that decides it (what to change instead): every row of
the SkyRL mapping table (rlaunch.spec.skyrl_mapping), the rendered ones and those the plan
decides by leaving SkyRL's default."""

# Catalog type -> (one value, several values) in words.
_WORDS = {"bool": ("a boolean", "booleans"), "int": ("an integer", "integers"),
          "float": ("a number", "numbers"), "str": ("a string", "strings"),
          "dict": ("a dict with string keys", "dicts with string keys"),
          "any": ("any value", "values")}


def _describe_type(type_name: str, nullable: bool) -> str:
    parts = [f"a list of {_WORDS[member[5:-1]][1]}" if member.startswith("list[")
             else _WORDS[member][0] for member in type_name.split("|")]
    return " or ".join(parts + (["None"] if nullable else []))


def _is(value: Any, type_name: str) -> bool:
    if type_name == "any":
        return True
    if type_name == "bool":
        return type(value) is bool
    if type_name == "int":
        return type(value) is int
    if type_name == "float":
        return type(value) in (int, float) and math.isfinite(value)
    if type_name == "str":
        return type(value) is str
    if type_name == "dict":
        return isinstance(value, Mapping) and all(type(key) is str for key in value)
    if type_name.startswith("list["):
        item = type_name[5:-1]
        return isinstance(value, (list, tuple)) and all(_is(entry, item) for entry in value)
    raise ValueError(f"unknown catalog type {type_name!r}")


@dataclass(frozen=True)
class SettingField:
    """One leaf of the runtime's config: its type, null-ability and the runtime's default."""

    type: str
    nullable: bool
    default: Any = None
    choices: tuple[Any, ...] | None = None
    """The values a `Literal` field takes (SkyRL 0.4.0 types a few so); None: any of its type."""
    required: bool = False
    """The release's config class has no default: a section that is set must set it."""

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(json.dumps(choice) for choice in self.choices)
        return _describe_type(self.type, self.nullable)

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.nullable
        if self.choices is not None:
            return any(type(value) is type(choice) and value == choice
                       for choice in self.choices)
        return any(_is(value, member) for member in self.type.split("|"))


def _field(entry: Mapping[str, Any]) -> SettingField:
    choices = entry.get("choices")
    return SettingField(**{**entry, "choices": tuple(choices) if choices is not None else None})


@dataclass(frozen=True)
class SettingsCatalog:
    """The settings a runtime release reads: its config's leaves, by dotted name."""

    label: str
    """How messages name the release, e.g. `SkyRL 0.3.0`."""
    fields: Mapping[str, SettingField] = field(default_factory=dict)
    sections: Mapping[str, str] = field(default_factory=dict)
    """Dotted name -> config class of a section (a nested config, not a setting itself)."""
    reads_only: bool = False
    """True when the release reads only these few of SkyRL's names (the smoke runtime)."""
    elsewhere: Mapping[str, str] = field(default_factory=dict)
    """Names this release lacks -> the label of another catalogued release of the same runtime
    that has them (a 0.4.0 setting on a 0.3.0 run is refused naming 0.4.0)."""

    @classmethod
    def generated(cls, label: str, fields: Mapping[str, Any], sections: Mapping[str, str],
                  only: tuple[str, ...] | None = None) -> SettingsCatalog:
        """From a generated module's FIELDS/SECTIONS; `only`: the names a runtime reads."""
        names = tuple(fields) if only is None else only
        return cls(
            label=label,
            fields=MappingProxyType({name: _field(fields[name]) for name in names}),
            sections=MappingProxyType(dict(sections) if only is None else {}),
            reads_only=only is not None,
        )

    def problem(self, name: str, value: Any) -> str | None:
        """What is wrong with setting `name` to `value`, with the fix; None when it is fine."""
        if name in PLAN_OWNED:
            return (f"{name!r} is decided by the plan, not a setting: set "
                    f"{PLAN_OWNED[name]} instead (rlaunch renders it into the launch YAML)")
        if name in self.sections:
            leaves = [leaf for leaf in self.fields if leaf.startswith(name + ".")]
            example = f", e.g. {leaves[0]!r}" if leaves else ""
            return (f"{name!r} is a section of {self.label}'s config ({self.sections[name]}), "
                    f"not a setting: set its fields one by one{example}")
        found = self.fields.get(name)
        if found is None:
            return self._unknown(name)
        if not found.accepts(value):
            return (f"{self.label} types {name!r} as {found.type}"
                    f"{' or None' if found.nullable else ''}: write {found.describe()}")
        return None

    def _unknown(self, name: str) -> str:
        if name in self.elsewhere:
            return (f"{self.label} has no config field {name!r}; {self.elsewhere[name]} has it: "
                    f"pin that release in the run's runtime (a runtime change: a fresh version, "
                    f"docs/launching.md), or drop the setting")
        settable = [leaf for leaf in self.fields if leaf not in PLAN_OWNED]
        close = difflib.get_close_matches(name, settable, n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if self.reads_only:
            return (f"{self.label} does not read {name!r}{hint}; it reads "
                    f"{', '.join(sorted(settable))}")
        return (f"{self.label} has no config field {name!r}{hint}; settings use its dotted "
                f"names (docs/spec-format.md, `settings`)")

    def default(self, name: str) -> Any:
        """The release's own default of a setting; KeyError for a name it does not have."""
        return self.fields[name].default

    def table(self, pattern: str = "") -> list[str]:
        """One line per field whose name contains `pattern`: name, type and default for a
        setting; the plan field to set for a name the plan decides."""
        names = [name for name in self.fields if pattern in name]
        width = max((len(name) for name in names), default=0)
        lines = []
        for name in names:
            found = self.fields[name]
            if name in PLAN_OWNED:
                lines.append(f"{name:<{width}}  (the plan's: {PLAN_OWNED[name]})")
                continue
            kind = (" | ".join(json.dumps(choice) for choice in found.choices)
                    if found.choices is not None else found.type)
            kind += " | None" if found.nullable else ""
            default = ("(required: no default)" if found.required else
                       f"default {json.dumps(found.default)}")
            lines.append(f"{name:<{width}}  {kind:<16} {default}")
        return lines
