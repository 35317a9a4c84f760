"""Reading and writing RunSpec files (YAML or JSON): a public interface.

Errors are collected, never raised one at a time: `SpecError.problems` lists every
problem as `field.path: what is wrong (got value)`.
"""

from __future__ import annotations

import json
import marshal
import os
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import ValidationError

from rlaunch.atomic import write_text_atomically
from rlaunch.memo import Memo
from rlaunch.spec.base import SpecModel
from rlaunch.spec.documents import DocumentError, Dumper, parse, read_document
from rlaunch.spec.execution import Execution
from rlaunch.spec.roleplan import RolePlan, forget_layouts
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


PLAN_KEYS = ("role_plan", "execution")
"""What a search changes from plan to plan: RunSpec's validators read neither (only their own
models check them), so the rest of a document is validated once per distinct content."""
_PLAN_KEY_SET = frozenset(PLAN_KEYS)
_BESIDE_PLAN: Memo[bytes, RunSpec] = Memo(64)
"""Content of a document's keys beside PLAN_KEYS -> a spec validated from that content."""
_EXECUTIONS: Memo[bytes, Execution] = Memo(256)
"""Content of an `execution` section -> the section, validated."""
_SOURCES: Memo[bytes, BuildSources] = Memo(64)
"""Content of a `build_sources` value -> what it says (a search parses one spec's thousands of
times)."""
_PLAN_SECTIONS: Memo[tuple[str, bytes], SpecModel] = Memo(4096)
"""A role-plan field's name and the content of its section -> the section, validated: equal
sections of the plans of a search are the very same objects."""
_EXACT_TYPES = (str, int, float, bool, type(None))


def _section_models(model: type[SpecModel]) -> dict[str, type[SpecModel]]:
    """Field name -> model of every field of `model` that holds a model section (or null)."""
    found = {}
    for name, info in model.model_fields.items():
        kinds = [kind for kind in get_args(info.annotation) or (info.annotation,)
                 if kind is not type(None)]
        if len(kinds) == 1 and isinstance(kinds[0], type) and issubclass(kinds[0], SpecModel):
            found[name] = kinds[0]
    return found


ROLE_PLAN_SECTIONS = _section_models(RolePlan)
"""The sections of a role plan validated on their own: `policy`, `rollout`, `batch`, ..."""


def _content_key(data: Any) -> bytes | None:
    """`data`'s content as bytes: equal bytes, equal content of the same exact types (marshal
    refuses subclasses and other objects; those documents are not reused: None). Only the
    buffer types (bytes, bytearray) share one encoding; `_exact` keeps them out of the memos.
    Format 4 writes an object met twice once (the keys' strings are shared), so equal content
    shared otherwise gives other bytes: a miss, never a wrong hit."""
    try:
        return marshal.dumps(data, 4)
    except ValueError:
        return None


def _exact(value: Any) -> bool:
    """Whether `value` holds only dicts, lists and tuples of str, int, float, bool and None
    (walked with a stack, not recursion: a document may nest deeper than Python recurses)."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            pending.extend(item)
            pending.extend(item.values())
        elif kind is list or kind is tuple:
            pending.extend(item)
        elif kind not in _EXACT_TYPES:
            return False
    return True


def _execution(data: Any) -> Execution:
    key = _content_key(data)
    known = _EXECUTIONS.get(key) if key is not None else None
    if known is not None:
        return known
    if key is None or not _exact(data):
        return Execution.model_validate(data)
    # Validated from a private copy: a later change to the caller's data cannot reach it (an
    # error is the same: the copy is equal, in the same order).
    return _EXECUTIONS.put(key, Execution.model_validate(marshal.loads(key)))


def _section(name: str, data: Any) -> Any:
    """role_plan's section `name` as RolePlan takes it: the model validated from `data`, once per
    distinct content; `data` itself when it is not a mapping (null, or what RolePlan refuses)."""
    if type(data) is not dict:
        return data
    key = (name, _content_key(data))
    known = _PLAN_SECTIONS.get(key) if key[1] is not None else None
    if known is not None:
        return known
    if key[1] is None or not _exact(data):
        return ROLE_PLAN_SECTIONS[name].model_validate(data)
    # Validated from a private copy, as the part beside the plan is.
    return _PLAN_SECTIONS.put(key, ROLE_PLAN_SECTIONS[name].model_validate(
        marshal.loads(key[1])))


def _role_plan(data: Any) -> RolePlan:
    """RolePlan.model_validate(data), its sections validated once per distinct content and
    handed to it validated (kept as they are: `revalidate_instances` is never). Raises
    ValidationError where validating `data` does, though not with the same locations (the
    caller validates the whole document again)."""
    if type(data) is not dict:
        return RolePlan.model_validate(data)
    return RolePlan.model_validate({
        name: _section(name, value) if name in ROLE_PLAN_SECTIONS else value
        for name, value in data.items()})


def _build_sources(data: Any) -> BuildSources:
    """BuildSources.from_data(data), once per distinct content (it copies what it keeps)."""
    key = _content_key(data)
    known = _SOURCES.get(key) if key is not None else None
    if known is None:
        known = BuildSources.from_data(data)
        if key is not None and _exact(data):
            _SOURCES.put(key, known)
    return known


def _validate(data: dict[str, Any]) -> RunSpec:
    """RunSpec.model_validate(data), reusing the validated part beside the plan of an earlier
    document with the same content: equal to validating it all, errors included (any error
    validates the whole document again, so every problem is reported where it is written)."""
    if type(data) is not dict or not data.keys() >= _PLAN_KEY_SET:
        return RunSpec.model_validate(data)
    beside = dict(data)
    for name in PLAN_KEYS:
        del beside[name]
    key = _content_key(beside)
    base = _BESIDE_PLAN.get(key) if key is not None else None
    if base is None:
        if key is None or not _exact(beside):
            return RunSpec.model_validate(data)
        try:
            # Validated from a private copy: a later change to the caller's data (a builder's
            # config is kept as given) cannot reach the specs parsed after it. The plan's
            # sections and the execution come from their memos, as for every later document.
            return _BESIDE_PLAN.put(key, RunSpec.model_validate({
                **marshal.loads(key), "role_plan": _role_plan(data["role_plan"]),
                "execution": _execution(data["execution"])}))
        except ValidationError:
            return RunSpec.model_validate(data)
    try:
        plan = _role_plan(data["role_plan"])
        execution = _execution(data["execution"])
    except ValidationError:
        return RunSpec.model_validate(data)
    return _with_plan(base, plan, execution)


_new_model = object.__new__
_set_slot = object.__setattr__


def _with_plan(base: RunSpec, plan: RolePlan, execution: Execution) -> RunSpec:
    """`base.model_copy(update={"role_plan": plan, "execution": execution})`, both validated, as
    pydantic's `BaseModel.__copy__` makes a copy (its fields' dict with the two replaced, the
    fields set, no extras: forbidden) without its calls through the hook of a model's attribute
    reads. The private attributes are copied as they are (their lookup of the runtime pin's
    catalog is shared: `CatalogLookup`)."""
    spec = _new_model(RunSpec)
    fields = base.__dict__.copy()
    fields["role_plan"] = plan
    fields["execution"] = execution
    _set_slot(spec, "__dict__", fields)
    _set_slot(spec, "__pydantic_extra__", None)
    _set_slot(spec, "__pydantic_fields_set__", set(base.__pydantic_fields_set__))
    _set_slot(spec, "__pydantic_private__", dict(base.__pydantic_private__))
    return spec


def forget_parsed() -> None:
    """Empty parse_spec's memos (a benchmark's cold start; a test's uncached run)."""
    _BESIDE_PLAN.clear()
    _EXECUTIONS.clear()
    _SOURCES.clear()
    _PLAN_SECTIONS.clear()
    forget_layouts()


def parse_spec(data: Any, source: str = "<spec>") -> RunSpec:
    """Validate plain data (a loaded YAML/JSON document) as a RunSpec. Its `build_sources`
    (spec files the Pants plugin writes) become the spec's `build_sources`."""
    if not isinstance(data, dict):
        raise SpecError(source, [f"the document must be a mapping, got {type(data).__name__}"])
    sources = None
    if SOURCES_KEY in data:
        data = dict(data)
        try:
            sources = _build_sources(data.pop(SOURCES_KEY))
        except ValueError as err:
            raise SpecError(source, [str(err)]) from None
    try:
        spec = _validate(data)
    except ValidationError as err:
        raise SpecError(source, validation_problems(err, sources), sources) from None
    # The private attribute's dict, written directly: pydantic's __setattr__ costs more.
    spec.__pydantic_private__["_build_sources"] = sources
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
