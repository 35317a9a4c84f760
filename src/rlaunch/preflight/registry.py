"""The rule registry: every rule with its stable code, family, scope, summary and an example.

A rule is one small function `(check) -> Iterable[Finding]`, registered with `@rule(...)` in the
module of its family. Its `example` is a recipe that breaks it (a worked example with edits, and
for world rules a world); `rlaunch rules --format markdown` runs each example to show a real
message in docs/rules.md, and the tests prove every example triggers its rule.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from rlaunch.preflight.check import Check
from rlaunch.preflight.finding import Finding
from rlaunch.preflight.world import World
from rlaunch.spec.examples import worked_example

Scope = Literal["spec", "world"]

FAMILIES = (
    "geometry", "allocation", "batch", "context", "algorithm", "artifacts", "versions", "paths",
    "runtime", "execution", "smoke", "settings", "memory", "pipeline",
)

RuleFunc = Callable[["Check"], Iterable[Finding]]
Edits = Mapping[str, Any] | Callable[[dict[str, Any]], None]


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    """Set `a.b.0.c` in nested dicts/lists."""
    *parents, last = path.split(".")
    node: Any = data
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


@dataclass(frozen=True)
class Example:
    """A recipe that breaks a rule: a worked example, edited; a world for world rules.

    `world` keys: `env`, `git_dirty`, `launcher_commit`, `store_prefix` as in `World`;
    `ledger` and `smoke_record`: the record returned for any `(name, version)`;
    `checkpoint_runtime`: the runtime fingerprint found in any checkpoint root."""

    base: str = "colocated-1x8"
    edits: Edits = field(default_factory=lambda: MappingProxyType({}))
    world: Mapping[str, Any] | None = None

    def describe(self) -> str:
        """The example in words, for the docs: the worked example and what was changed."""
        if callable(self.edits):
            change = (self.edits.__doc__ or "edited").strip().splitlines()[0]
        else:
            change = ", ".join(
                f"`{path}: {json.dumps(value)}`" for path, value in self.edits.items()
            ) or "unchanged"
        text = f"worked example `{self.base}`, {change}"
        if self.world:
            shown = ", ".join(f"`{key}: {json.dumps(value)}`" for key, value in self.world.items())
            text += f"; world {shown}"
        return text

    def spec_data(self) -> dict[str, Any]:
        data = worked_example(self.base)
        if callable(self.edits):
            self.edits(data)
        else:
            for path, value in self.edits.items():
                set_path(data, path, copy.deepcopy(value))
        return data

    def build_world(self) -> World:
        given = dict(self.world or {})
        ledger = given.pop("ledger", None)
        smoke = given.pop("smoke_record", None)
        checkpoint = given.pop("checkpoint_runtime", None)
        given.setdefault("store_prefix", "/srv/rlaunch-store")
        return World(
            ledger=lambda name, version: ledger,
            smoke_record=lambda name, version: smoke,
            checkpoint_runtime=lambda root: checkpoint,
            **given,
        )


@dataclass(frozen=True)
class Rule:
    code: str
    family: str
    scope: Scope
    summary: str
    func: RuleFunc
    example: Example


_RULES: dict[str, Rule] = {}


def rule(
    code: str, summary: str, *, example: Example, scope: Scope = "spec"
) -> Callable[[RuleFunc], RuleFunc]:
    """Register the decorated function as the rule `code` of its module's family."""

    def register(func: RuleFunc) -> RuleFunc:
        # A family may span modules: `geometry_roles` belongs to `geometry`.
        family = func.__module__.rsplit(".", 1)[-1].split("_", 1)[0]
        if family not in FAMILIES:
            raise ValueError(f"rule {code}: module {func.__module__} is not a rule family")
        if code in _RULES:
            raise ValueError(f"rule code {code} is registered twice")
        _RULES[code] = Rule(code, family, scope, summary, func, example)
        return func

    return register


def registered_rules() -> tuple[Rule, ...]:
    """Every rule, by family (in FAMILIES order) then code."""
    order = {family: index for index, family in enumerate(FAMILIES)}
    return tuple(sorted(_RULES.values(), key=lambda r: (order[r.family], r.code)))


LAUNCH_FAMILY = "launch"


@dataclass(frozen=True)
class LaunchCheck:
    """A check the launch makes besides preflight, because what it reads is only at hand there
    (the ledger, under the launch lock). Listed by `rlaunch rules` with the rules (family
    `launch`, scope `world`), run by `rlaunch launch` only; its logic stays in `func`'s module."""

    code: str
    summary: str
    func: Callable[..., list[Finding]]
    example: Callable[[], list[Finding]]
    """Its real finding on an example; the example's docstring describes it for the docs."""
    family: str = LAUNCH_FAMILY
    scope: Scope = "world"

    @property
    def implementation(self) -> str:
        return f"{self.func.__module__}.{self.func.__qualname__}"

    def describe_example(self) -> str:
        """The first paragraph of the example's docstring, as one line."""
        paragraph = (self.example.__doc__ or "an example").strip().split("\n\n")[0]
        return " ".join(line.strip() for line in paragraph.splitlines())


_LAUNCH_CHECKS: dict[str, LaunchCheck] = {}


def launch_check(
    code: str, summary: str, *, example: Callable[[], list[Finding]]
) -> Callable[[Callable[..., list[Finding]]], Callable[..., list[Finding]]]:
    """Register the decorated function as the launch check `code` (it is returned unchanged)."""

    def register(func: Callable[..., list[Finding]]) -> Callable[..., list[Finding]]:
        if code in _LAUNCH_CHECKS or code in _RULES:
            raise ValueError(f"check code {code} is registered twice")
        _LAUNCH_CHECKS[code] = LaunchCheck(code, summary, func, example)
        return func

    return register


def launch_checks() -> tuple[LaunchCheck, ...]:
    """Every launch check, by code (registered by importing `rlaunch.preflight.runner`)."""
    return tuple(sorted(_LAUNCH_CHECKS.values(), key=lambda c: c.code))
