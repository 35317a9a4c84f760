"""Hostile but realistic edits of a spec document: what a user, an editor or a disk does to it.

Each strategy yields `(category, bytes)`: the category names the kind of damage, so a run can
count the cases it tried per category.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml
from hypothesis import strategies as st

# Values a person (or a bad merge) puts where a number, a string or a mapping belongs.
HOSTILE_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.5, -0.0, 10**30, 2**63, float("inf"), float("-inf"),
    float("nan"), "", " ", "2", "1e30", "Infinity", "NaN", "x" * 5000, "\u00e9\u0000", [], [1],
    {}, {"a": 1}, "../../etc/passwd", "gs://", "\ud83d\ude00",
]


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested mappings and lists."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, prefix + (index,))
    return found


def _set(document: Any, path: tuple, value: Any) -> None:
    for part in path[:-1]:
        document = document[part]
    document[path[-1]] = value


def _delete(document: Any, path: tuple) -> None:
    for part in path[:-1]:
        document = document[part]
    del document[path[-1]]


def _dump(document: Any, as_json: bool) -> bytes:
    if as_json:
        return json.dumps(document, allow_nan=True).encode()
    return yaml.safe_dump(document, allow_unicode=True).encode()


@st.composite
def value_edits(draw, base: dict) -> tuple[str, bytes]:
    """One field set to a hostile value (or removed), written as YAML or JSON."""
    document = copy.deepcopy(base)
    path = draw(st.sampled_from(_paths(document)))
    if draw(st.booleans()) and not isinstance(path[-1], int):
        _delete(document, path)
        category = "field removed"
    else:
        _set(document, path, draw(st.sampled_from(HOSTILE_VALUES)))
        category = "field value"
    return category, _dump(document, draw(st.booleans()))


@st.composite
def text_edits(draw, base: dict) -> tuple[str, bytes]:
    """Damage to the file's bytes: truncation, encodings, stray bytes, duplicated lines."""
    text = yaml.safe_dump(base)
    kind = draw(st.sampled_from(
        ["truncated", "utf-16", "latin-1 bytes", "byte flip", "duplicate key", "deep nesting",
         "huge integer", "empty", "not a mapping", "yaml tags"]
    ))
    if kind == "truncated":
        return kind, text.encode()[: draw(st.integers(0, len(text)))]
    if kind == "utf-16":
        return kind, text.encode("utf-16")
    if kind == "latin-1 bytes":
        return kind, text.replace("name:", "n\u00e4me:", 1).encode("latin-1")
    if kind == "byte flip":
        data = bytearray(text.encode())
        index = draw(st.integers(0, len(data) - 1))
        data[index] = draw(st.integers(0, 255))
        return kind, bytes(data)
    if kind == "duplicate key":
        lines = text.splitlines(keepends=True)
        top = [line for line in lines if line[:1].isalpha()]
        return kind, (text + draw(st.sampled_from(top))).encode()
    if kind == "deep nesting":
        depth = draw(st.sampled_from([1_000, 100_000]))
        return kind, ("seed: " + "[" * depth + "]" * depth + "\n").encode()
    if kind == "huge integer":
        return kind, text.replace("seed: ", "seed: " + "9" * 5000 + " #", 1).encode()
    if kind == "empty":
        return kind, b""
    if kind == "not a mapping":
        return kind, draw(st.sampled_from([b"- a\n- b\n", b"42\n", b"'text'\n", b"null\n"]))
    return kind, text.replace("name:", "name: !!python/object:os.system", 1).encode()


def mutated_document(base: dict):
    return st.one_of(value_edits(base), text_edits(base))
