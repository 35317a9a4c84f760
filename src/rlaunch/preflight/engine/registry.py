"""The rule registry: every rule with its stable code, family, scope, summary and an example.

A rule is one small function `(check) -> Iterable[Finding]`, registered with `@rule(...)` in a
module of `rlaunch.preflight.rules`. `RULE_MODULES` declares which family each of those modules
belongs to: a module's name decides nothing, and a module declared nowhere cannot register. Its
`example` is a recipe that breaks it (a worked example with edits, and for world rules a world);
`rlaunch rules --format markdown` runs each example to show a real message in docs/rules.md, and
the tests prove every example triggers its rule. A rule that reads the role plan returns a list:
it runs for every plan of a search, and a generator's protocol costs more than most such rules'
bodies.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from rlaunch.ledger.checkpoints import CheckpointListing
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding
from rlaunch.preflight.engine.world import World
from rlaunch.spec.examples import worked_example
from rlaunch.store.probe import StoreProbe

Scope = Literal["spec", "world"]

RULES_PACKAGE = "rlaunch.preflight.rules"
RULE_MODULES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "geometry": ("geometry", "heads_and_experts", "geometry_roles"),
    "allocation": ("allocation",),
    "batch": ("batch", "batch_tail"),
    "context": ("context_window",),
    "algorithm": ("algorithm",),
    "artifacts": ("artifacts", "artifacts_ambient", "artifacts_format"),
    "versions": ("versions",),
    "paths": ("paths",),
    "runtime": ("runtime",),
    "execution": ("execution",),
    "smoke": ("smoke",),
    "settings": ("settings", "settings_weight_sync", "settings_optimizer"),
    "memory": ("memory",),
    "pipeline": ("pipeline",),
    "resume": ("resume",),
})
"""Every rule family, in the order `rlaunch rules` lists them, with its modules (under
RULES_PACKAGE). A new rule module is added here, under its family."""
FAMILIES = tuple(RULE_MODULES)

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
    `checkpoint_runtime`: the runtime fingerprint found in any checkpoint root; `store_probe`:
    the fields of a StoreProbe; `checkpoints`: the fields of the CheckpointListing found at any
    checkpoint root or step folder."""

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
        listing = given.pop("checkpoints", None)
        if listing is not None:
            listing = CheckpointListing(**{**listing, "steps": tuple(listing["steps"]),
                                           "files": None if listing["files"] is None
                                           else frozenset(listing["files"])})
        given["checkpoints"] = lambda path: listing
        if "store_probe" in given:
            given["store_probe"] = StoreProbe(**given["store_probe"])
        given.setdefault("store_prefix", "/srv/rlaunch-store")
        return World(
            ledger=lambda name, version: ledger,
            smoke_record=lambda name, version: smoke,
            checkpoint_runtime=lambda root: checkpoint,
            **given,
        )


def implementation(func: Callable[..., Any]) -> str:
    """Where a rule or launch check lives, as docs/rules.md names it: `module.function`."""
    return f"{func.__module__}.{func.__qualname__}"


@dataclass(frozen=True)
class Rule:
    code: str
    family: str
    scope: Scope
    summary: str
    func: RuleFunc
    example: Example
    releases: tuple[str, ...] | None = None
    """The SkyRL releases whose validators the rule mirrors: it runs only for a run whose
    `skyrl` subtree is written for one of them (`RunSpec.skyrl_release`). None: every run."""
    reads_plan: bool = True
    """False: the rule reads nothing of `role_plan` (nor the world), so the runner reuses its
    findings for a spec whose other fields are the very objects it last ran on (a search
    changes only the role plan). tests/preflight/engine/test_runner_memo.py proves each such
    rule gives the same findings with `role_plan` removed."""

    @property
    def implementation(self) -> str:
        return implementation(self.func)

    def applies_to(self, skyrl_release: str) -> bool:
        return self.releases is None or skyrl_release in self.releases

    def describe_releases(self) -> str:
        """`every release`, or the releases it applies to, for the docs."""
        if self.releases is None:
            return "every release"
        return "SkyRL " + ", ".join(self.releases) + " only"


_RULES: dict[str, Rule] = {}


def family_of(module: str) -> str | None:
    """The family RULE_MODULES declares for `module` (a dotted name), or None."""
    for family, names in RULE_MODULES.items():
        if module in (f"{RULES_PACKAGE}.{name}" for name in names):
            return family
    return None


def rule(
    code: str, summary: str, *, example: Example, scope: Scope = "spec",
    releases: tuple[str, ...] | None = None, reads_plan: bool = True,
) -> Callable[[RuleFunc], RuleFunc]:
    """Register the decorated function as the rule `code` of the family RULE_MODULES declares for
    its module; `releases`: the SkyRL releases whose validators it mirrors (None: every run);
    `reads_plan=False`: it reads nothing of the role plan (`Rule.reads_plan`)."""

    def register(func: RuleFunc) -> RuleFunc:
        family = family_of(func.__module__)
        if family is None:
            raise ValueError(
                f"rule {code}: module {func.__module__} is declared in no family; add it to"
                f" RULE_MODULES in {__name__}"
            )
        if code in _RULES:
            raise ValueError(f"rule code {code} is registered twice")
        if scope == "world" and not reads_plan:
            raise ValueError(f"rule {code}: a world rule's findings are never reused; drop"
                             " reads_plan=False")
        _RULES[code] = Rule(code, family, scope, summary, func, example, releases, reads_plan)
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
    releases: tuple[str, ...] | None = None
    """Every run (launch checks mirror no release's validators)."""

    @property
    def implementation(self) -> str:
        return implementation(self.func)

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
    """Every launch check, by code (registered by importing `rlaunch.preflight`)."""
    return tuple(sorted(_LAUNCH_CHECKS.values(), key=lambda c: c.code))
