"""Helpers for the preflight tests: worked examples, edited, and the findings of one rule."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from rlaunch.preflight import Finding, World, run_preflight
from rlaunch.preflight.engine.registry import set_path
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example

Edits = Mapping[str, Any] | Callable[[dict[str, Any]], None] | None


def example(base: str = "colocated-1x8", edits: Edits = None) -> dict[str, Any]:
    """A worked example with `path: value` edits (or an editing function) applied."""
    data = worked_example(base)
    if callable(edits):
        edits(data)
    else:
        for path, value in (edits or {}).items():
            set_path(data, path, copy.deepcopy(value))
    return data


def findings(data: dict[str, Any], code: str, *, world: World | None = None) -> list[Finding]:
    spec = parse_spec(data, "test")
    every = run_preflight(spec, scope="spec" if world is None else "all", world=world)
    if any(finding.code == "PRE000" for finding in every):
        pytest.fail(f"a rule crashed: {[f for f in every if f.code == 'PRE000']}")
    return [finding for finding in every if finding.code == code]


def messages(data: dict[str, Any], code: str, *, world: World | None = None) -> list[str]:
    return [finding.message for finding in findings(data, code, world=world)]
