"""Reading and writing RunSpec files (YAML or JSON): a public interface.

Errors are collected, never raised one at a time: `SpecError.problems` lists every
problem as `field.path: what is wrong (got value)`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from rlaunch.atomic import write_text_atomically
from rlaunch.spec.documents import DocumentError, Dumper, parse, read_document
from rlaunch.spec.run import RunSpec
from rlaunch.spec.sources import SOURCES_KEY, BuildSources


class SpecError(Exception):
    """A spec file that cannot be read or does not match the schema."""

    def __init__(self, source: str, problems: list[str], sources: BuildSources | None = None):
        self.source = source
        self.problems = problems
        self.sources = sources
        super().__init__(f"{source}: " + "; ".join(problems))

    def render(self) -> str:
        title = self.sources.title() if self.sources is not None else self.source
        lines = [f"{title}: not a valid RunSpec ({len(self.problems)} problem(s))"]
        lines += [f"  - {problem}" for problem in self.problems]
        lines.append("  The format is documented in docs/spec-format.md.")
        return "\n".join(lines)


# Pydantic puts the chosen member of a tagged union into the error location.
_UNION_TAGS = {"hf_model", "hf_dataset", "adopted", "built"}


def _path(error: dict[str, Any]) -> str:
    # Union members show up as path elements named after the model; drop them so the
    # path is the one a person writes in the file.
    parts = [str(part) for part in error["loc"] if str(part) not in _UNION_TAGS]
    path = ".".join(parts) or "<top level>"
    return path + ".type" if error["type"] == "union_tag_invalid" else path


def _describe(error: dict[str, Any], path: str) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return f"{path}: unknown key (remove it or check its spelling)"
    if kind == "missing":
        return f"{path}: required key is missing (a run spec has no silent defaults)"
    value = error.get("input")
    shown = json.dumps(value, default=str) if not isinstance(value, dict) else "{...}"
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return f"{path}: {error['msg']} (got {shown})"


def validation_problems(err: ValidationError, sources: BuildSources | None = None) -> list[str]:
    """Every problem of a pydantic validation error, as `field.path: what is wrong`, followed
    by the BUILD target and field it was written as when the spec has `build_sources`."""
    problems = []
    for error in err.errors():
        path = _path(error)
        problem = _describe(error, path)
        if sources is not None:
            problem += "".join(f"\n      in {where}" for where in sources.describe([path]))
        problems.append(problem)
    return problems


def parse_spec(data: Any, source: str = "<spec>") -> RunSpec:
    """Validate plain data (a loaded YAML/JSON document) as a RunSpec. Its `build_sources`
    (spec files the Pants plugin writes) become the spec's `build_sources`."""
    if not isinstance(data, dict):
        raise SpecError(source, [f"the document must be a mapping, got {type(data).__name__}"])
    sources = None
    if SOURCES_KEY in data:
        data = dict(data)
        try:
            sources = BuildSources.from_data(data.pop(SOURCES_KEY))
        except ValueError as err:
            raise SpecError(source, [str(err)]) from None
    try:
        spec = RunSpec.model_validate(data)
    except ValidationError as err:
        raise SpecError(source, validation_problems(err, sources), sources) from None
    spec._build_sources = sources
    return spec


def loads_spec(text: str, source: str = "<spec>") -> RunSpec:
    """Parse YAML, or JSON when `source` ends in `.json` (PyYAML would split the surrogate
    pairs of JSON escapes for characters beyond the Basic Multilingual Plane)."""
    try:
        data = parse(text, as_json=source.endswith(".json"))
    except DocumentError as err:
        raise SpecError(source, [str(err)]) from None
    return parse_spec(data, source)


def load_spec(path: str | os.PathLike) -> RunSpec:
    try:
        data = read_document(path)
    except DocumentError as err:
        raise SpecError(str(path), [str(err)]) from None
    return parse_spec(data, str(path))


def dumps_spec(spec: RunSpec, fmt: str = "yaml") -> str:
    data = spec.model_dump(mode="json")
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=True) + "\n"
    return yaml.dump(data, Dumper=Dumper, sort_keys=True, default_flow_style=False)


def dump_spec(spec: RunSpec, path: str | os.PathLike) -> None:
    """Write atomically; `.json` files as JSON, anything else as YAML."""
    path = Path(path)
    text = dumps_spec(spec, "json" if path.suffix == ".json" else "yaml")
    write_text_atomically(path, text)
