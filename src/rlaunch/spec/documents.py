"""Reading a YAML or JSON document a person wrote, with every way it can be unreadable named.

Spec files and artifact files come from people, editors and disks. Whatever is in the file, the
reader returns plain data or raises `DocumentError` with one sentence saying what is wrong and
how to fix it: never a traceback. Stricter than plain `yaml.safe_load`/`json.loads` where they
silently pick for the user: a key written twice is an error (both would keep the last).
"""

from __future__ import annotations

import codecs
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import yaml

# The deepest nesting a spec needs is about six levels; this leaves room and stays far below
# the interpreter's recursion limit (the parsers recurse per level).
MAX_DEPTH = 100
# Python refuses to parse longer integer literals (sys.get_int_max_str_digits); say so first.
_MAX_DIGITS = sys.get_int_max_str_digits() or 4300
_BOMS = {
    codecs.BOM_UTF32_LE: "UTF-32", codecs.BOM_UTF32_BE: "UTF-32",
    codecs.BOM_UTF16_LE: "UTF-16", codecs.BOM_UTF16_BE: "UTF-16",
}


class DocumentError(Exception):
    """The file cannot be read as a YAML/JSON document; the message says why and the fix."""


class _StrictLoader(yaml.SafeLoader):
    """Safe YAML that refuses a mapping key written twice."""


def _mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        try:
            if key in seen:
                raise DocumentError(
                    f"key {key!r} is written twice (lines {seen[key]} and {line}); YAML would "
                    f"silently keep the last one. Keep one of them."
                )
            seen[key] = line
        except TypeError:
            # An unhashable key (a list or mapping): let PyYAML give its own error.
            break
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
# YAML 1.1 (PyYAML) reads `1e-6` as a string; YAML 1.2 and JSON read it as a number, and so does
# every person who writes a learning rate. Types are strict, so the number must be a number.
_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT,
                                    list("-+0123456789"))


class Dumper(yaml.SafeDumper):
    """Safe YAML writer whose output this module reads back as it was: a string that the
    loader above reads as a number (`0E0`, `1e-6`) is written quoted."""


Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict:
    document: dict[str, Any] = {}
    for key, value in pairs:
        if key in document:
            raise DocumentError(
                f"key {key!r} is written twice in one object; JSON readers would silently keep "
                f"the last one. Keep one of them."
            )
        document[key] = value
    return document


def _depth_problem(text: str) -> str | None:
    """Refuse absurd nesting before a recursive parser meets it (flow `[[[...` or indentation
    both nest through brackets or block structure; brackets are what an attacker uses)."""
    depth = deepest = 0
    for char in text:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth = max(depth - 1, 0)
    if deepest > MAX_DEPTH:
        return (f"it nests {deepest} levels of brackets; a document may nest at most {MAX_DEPTH}. "
                f"Write the document in its documented shape.")
    return None


def decode(data: bytes) -> str:
    """UTF-8 text of a file's bytes, or a DocumentError naming the encoding problem."""
    for bom, name in _BOMS.items():
        if data.startswith(bom):
            raise DocumentError(
                f"the file is {name} text; rlaunch reads UTF-8 only. Save it as UTF-8 "
                f"(e.g. `iconv -f {name} -t UTF-8`)."
            )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DocumentError(
            f"the file is not UTF-8 text (byte 0x{data[err.start]:02x} on line {line} cannot be "
            f"decoded). Save it as UTF-8."
        ) from None


def parse(text: str, as_json: bool) -> Any:
    """Plain data of a YAML (or JSON when `as_json`) document, or a DocumentError."""
    problem = _depth_problem(text)
    if problem:
        raise DocumentError(problem)
    kind = "JSON" if as_json else "YAML"
    try:
        if as_json:
            document = json.loads(text, object_pairs_hook=_json_pairs)
        else:
            document = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except (yaml.YAMLError, json.JSONDecodeError) as err:
        raise DocumentError(f"not valid {kind}: {err}") from None
    except ValueError as err:  # an integer literal longer than Python parses
        if "digits" in str(err):
            raise DocumentError(
                f"it holds an integer of more than {_MAX_DIGITS} digits; no field takes one. "
                f"Write the number the field documents."
            ) from None
        raise DocumentError(f"not valid {kind}: {err}") from None
    except RecursionError:
        raise DocumentError(
            f"it nests too deeply to read; a document may nest at most {MAX_DEPTH} levels."
        ) from None
    broken = _lone_surrogate(document)
    if broken is not None:
        raise DocumentError(
            f"it holds a string that is not Unicode text ({broken!r}: an unpaired surrogate "
            f"escape); write the character itself, or a \\U0001xxxx escape."
        )
    return document


def _lone_surrogate(document: Any) -> str | None:
    """A string of the document that is not Unicode text (YAML's `\\uD83D` escapes can make
    one), or None. It would fail later, wherever the string is printed or encoded."""
    pending = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return value.encode("utf-8", "backslashreplace").decode()[:60]
    return None


def read_document(path: str | os.PathLike) -> Any:
    """Plain data of the YAML/JSON file at `path` (JSON when it ends in `.json`)."""
    path = Path(path)
    try:
        # Inside the try: is_dir() itself raises for a name the file system refuses (ENAMETOOLONG).
        if path.is_dir():
            raise DocumentError("it is a directory, not a file.")
        data = path.read_bytes()
    except OSError as err:
        raise DocumentError(f"cannot read the file: {err.strerror}") from None
    return parse(decode(data), path.suffix == ".json")
