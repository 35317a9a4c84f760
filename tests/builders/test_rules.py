"""Version classes and whole-graph rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from builders.helpers import node, parse
from rlaunch.builders.rules import graph_order, graph_problems, version_class


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2026.11.01", "calendar"),
        ("2026.11.01.3", "calendar"),
        ("2026.02.30", None),
        ("2026.1.1", None),
        ("dev", "dev"),
        ("smoke-dev", "dev"),
        ("my.label-dev", "dev"),
        ("-dev", None),
        ("v1", None),
        ("main", None),
    ],
)
def test_version_classes(version: str, expected: str | None) -> None:
    assert version_class(version) == expected


def test_an_invalid_version_is_reported_with_its_field(tmp_path: Path) -> None:
    top = parse(node("top", tmp_path, version="v1"))
    assert graph_problems([("model", top)]) == [
        (
            "model.version: 'v1' of top is neither a calendar version (YYYY.MM.DD or "
            "YYYY.MM.DD.N, a real date) nor a dev version (`dev`, `<label>-dev`)"
        )
    ]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    dev = node("leaf", tmp_path, version="dev")
    other = node("leaf", tmp_path, version="dev", content="other")
    top = parse(node("top", tmp_path, deps={"a": dev, "b": other}))
    problems = graph_problems([("x", top)])
    assert len(problems) == 3
    assert problems[2].startswith("x.deps.b: leaf@dev appears twice with different content")


def test_graph_order_puts_dependencies_first_and_each_node_once(tmp_path: Path) -> None:
    leaf = node("leaf", tmp_path)
    top = parse(node("top", tmp_path, deps={"a": node("mid", tmp_path, deps={"x": leaf}),
                                           "b": leaf}))
    assert [a.name for a in graph_order([top])] == ["leaf", "mid", "top"]
