"""Smoke runs: a run declaring `smoke_of` shares its full run's strategy, role geometry,
allocation shape, runtime pin and handoff kinds, so that its success says something about
the full run.

The smoke *gate* (a calendar-versioned full launch needs a recorded successful smoke of the same
geometry and runtime fingerprint) is enforced at launch, where the ledger is at hand, not here.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.runtime import RuntimePin, runtime_fingerprint


def smoke_of(change: str = "", value: Any = None) -> Any:
    """An edit declaring the example a smoke of itself (`example-full`), with one change to the
    full run's side at dotted path `change`."""

    def edit(data: dict[str, Any]) -> None:
        full: dict[str, Any] = {
            "name": "example-full",
            "version": data["version"],
            "role_plan": copy.deepcopy(data["role_plan"]),
            "runtime": copy.deepcopy(data["runtime"]),
            "allocation": copy.deepcopy(data["execution"]["allocation"]),
            "handoff_kinds": {
                "model": "model", "tokenizer": "model", "train_data": "dataset",
                "eval_data": "dataset",
            },
        }
        if change:
            *parents, last = change.split(".")
            node = full
            for part in parents:
                node = node[part]
            node[last] = value
        data["smoke_of"] = full

    edit.__doc__ = "declared `smoke_of` a full run `example-full` with the same plan" + (
        f" but `{change}: {json.dumps(value)}`" if change else ""
    )
    return edit


def _full(check: Check) -> str:
    smoke = check.spec.smoke_of
    return f"the full run {smoke.name}@{smoke.version}" if smoke is not None else ""


def leaves(value: Any, path: str) -> dict[str, Any]:
    """`{"a.b.c": leaf}` of a nested mapping (how two geometries are compared, leaf by leaf)."""
    if isinstance(value, dict):
        found: dict[str, Any] = {}
        for key, child in value.items():
            found.update(leaves(child, f"{path}.{key}"))
        return found
    return {path: value}


def _shown(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


@rule(
    "SMOKE001",
    "A smoke run has its full run's strategy.",
    example=Example(edits=smoke_of("role_plan.strategy", "megatron")),
)
def same_strategy(check: Check) -> list[Finding]:
    findings: list[Finding] = []
    smoke = check.spec.smoke_of
    if smoke is None:
        return findings
    mine, theirs = check.plan.strategy, smoke.role_plan.strategy
    if mine != theirs:
        findings.append(error(
            "SMOKE001", ("role_plan.strategy", "smoke_of.role_plan.strategy"),
            f"smoke role_plan.strategy {mine} differs from {_full(check)}'s {theirs}",
            f"Use strategy {theirs} in the smoke run.",
        ))
    return findings


@rule(
    "SMOKE002",
    "A smoke run has its full run's role geometry (every role, size and placement).",
    example=Example(edits=smoke_of("role_plan.rollout.num_engines", 4)),
)
def same_geometry(check: Check) -> list[Finding]:
    findings: list[Finding] = []
    smoke = check.spec.smoke_of
    if smoke is None:
        return findings
    mine = leaves(check.plan.geometry(), "role_plan")
    theirs = leaves(smoke.role_plan.geometry(), "role_plan")
    for path in sorted(set(mine) | set(theirs)):
        if path == "role_plan.strategy" or mine.get(path) == theirs.get(path):
            continue
        findings.append(error(
            "SMOKE002", (path, f"smoke_of.{path}"),
            f"smoke {path} {_shown(mine.get(path))} differs from {_full(check)}'s"
            f" {_shown(theirs.get(path))}",
            f"Set {path} to {_shown(theirs.get(path))}: a smoke proves only the geometry it"
            " shares (shrink batch sizes, steps and data instead).",
        ))
    return findings


@rule(
    "SMOKE003",
    "A smoke run has its full run's allocation shape (nodes x GPUs per node).",
    example=Example(edits=smoke_of("allocation.num_nodes", 2)),
    reads_plan=False,
)
def same_allocation_shape(check: Check) -> Iterator[Finding]:
    smoke = check.spec.smoke_of
    if smoke is None:
        return
    allocation = check.spec.execution.allocation
    for name in ("num_nodes", "gpus_per_node"):
        mine, theirs = getattr(allocation, name), getattr(smoke.allocation, name)
        if mine != theirs:
            yield error(
                "SMOKE003", (f"execution.allocation.{name}", f"smoke_of.allocation.{name}"),
                f"smoke execution.allocation.{name} {mine} differs from {_full(check)}'s {theirs}",
                f"Set execution.allocation.{name} to {theirs}.",
            )


def _pin(runtime: RuntimePin) -> str:
    pin = runtime.package or (f"{runtime.git.repo}@{runtime.git.commit}" if runtime.git else "")
    return f"{runtime.profile} {pin} {runtime.entrypoint}"


@rule(
    "SMOKE004",
    "A smoke run has its full run's runtime pin (runtime fingerprint).",
    example=Example(edits=smoke_of("runtime.entrypoint", "skyrl.train.entrypoints.main_generate")),
    reads_plan=False,
)
def same_runtime(check: Check) -> Iterator[Finding]:
    smoke = check.spec.smoke_of
    if smoke is None:
        return
    mine, theirs = check.spec.runtime_fingerprint, runtime_fingerprint(smoke.runtime)
    if mine != theirs:
        yield error(
            "SMOKE004", ("runtime", "smoke_of.runtime"),
            f"smoke runtime {mine} ({_pin(check.spec.runtime)}) differs from {_full(check)}'s"
            f" {theirs} ({_pin(smoke.runtime)})",
            "Pin the smoke run's runtime exactly as the full run's.",
        )


@rule(
    "SMOKE005",
    "A smoke run hands the same artifact kinds to the same slots as its full run.",
    example=Example(edits=smoke_of("handoff_kinds.tokenizer", "tokenizer")),
    reads_plan=False,
)
def same_handoff_kinds(check: Check) -> Iterator[Finding]:
    smoke = check.spec.smoke_of
    if smoke is None:
        return
    mine, theirs = check.spec.handoff_kinds(), smoke.handoff_kinds
    for slot in sorted(set(mine) | set(theirs)):
        if mine.get(slot) != theirs.get(slot):
            yield error(
                "SMOKE005", (slot, f"smoke_of.handoff_kinds.{slot}"),
                f"smoke {slot} takes {mine.get(slot) or 'nothing'} but {_full(check)}'s takes"
                f" {theirs.get(slot) or 'nothing'}",
                f"Give the smoke run's {slot} an artifact of the full run's kind.",
            )
