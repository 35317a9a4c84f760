"""Field base classes: pinned strings, counts, dicts with a fixed key set, and target references.

Every check runs in `compute_value`, so a mistake fails when the BUILD file is parsed, in the Pants
message form, naming the field, the target, what was expected and what was written.
"""

from __future__ import annotations

import difflib
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Optional

from pants.engine.addresses import Address
from pants.engine.target import NO_VALUE, Field, InvalidFieldException, StringField
from pants.util.frozendict import FrozenDict
from pants.util.strutil import softwrap

from rlaunch_pants import schema, validation

Check = Callable[[Any], Optional[str]]


def _checked(cls: type[Field], value: Any, address: Address, check: Check) -> Any:
    if value is None:
        return value
    requirement = check(value)
    if requirement is not None:
        raise InvalidFieldException(
            validation.field_message(cls.alias, address, requirement, value)
        )
    return value


class CheckedStringField(StringField):
    """A string field whose value must pass `check` (None is the default/absent value)."""

    check: ClassVar[Check] = staticmethod(validation.check_str)

    @classmethod
    def compute_value(cls, raw_value: Optional[str], address: Address) -> Optional[str]:
        if raw_value not in (None, NO_VALUE) and not isinstance(raw_value, str):
            raise InvalidFieldException(
                validation.field_message(cls.alias, address, "a string", raw_value)
            )
        value = super().compute_value(raw_value, address)
        return _checked(cls, value, address, cls.check)


class CommitField(CheckedStringField):
    check = staticmethod(validation.check_commit)


class VersionField(CheckedStringField):
    check = staticmethod(validation.check_version)


class Sha256Field(CheckedStringField):
    check = staticmethod(validation.check_sha256)


class CheckedIntField(Field):
    """An integer field; `check` says which integers (Python's bool is rejected)."""

    check: ClassVar[Check] = staticmethod(validation.check_positive_int)
    value: Optional[int]
    default: ClassVar[Optional[int]] = None

    @classmethod
    def compute_value(cls, raw_value: Optional[int], address: Address) -> Optional[int]:
        value = super().compute_value(raw_value, address)
        return _checked(cls, value, address, cls.check)


class PositiveIntField(CheckedIntField):
    check = staticmethod(validation.check_positive_int)


class NonNegativeIntField(CheckedIntField):
    check = staticmethod(validation.check_non_negative_int)


class ChoiceField(CheckedStringField):
    """A string out of `choices` (shown in the error and in `help`)."""

    choices: ClassVar[tuple[str, ...]]

    @classmethod
    def compute_value(cls, raw_value: Optional[str], address: Address) -> Optional[str]:
        value = super().compute_value(raw_value, address)
        return _checked(cls, value, address, lambda v: validation.check_choice(v, cls.choices))


# ---------------------------------------------------------------------------------------------
# Dicts with a fixed set of keys (role plan sections, lengths, algorithm, checkpoint policy).


@dataclass(frozen=True)
class Key:
    """One key of a schema dict: its check (or the keys of a nested dict), a one-line meaning,
    whether None is allowed, and the default the model declares (`has_default`; a key without
    one must be written)."""

    name: str
    check: Optional[Check]
    doc: str
    nullable: bool = False
    nested: Optional[tuple[Key, ...]] = None
    has_default: bool = False
    default: Any = None


def choice(*choices: str) -> Check:
    """The check of a key whose value is one of `choices`."""
    return lambda value: validation.check_choice(value, choices)


_CHECKS: dict[str, Check] = {
    "int": validation.check_int,
    "number": validation.check_number,
    "bool": validation.check_bool,
    "str": validation.check_str,
    "list": validation.check_str_list,
    "map": validation.check_str_map,
}


_BOUND_WORDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def _bounded(kind: str, bounds: dict[str, Any]) -> Check:
    """The check of a number in the model's `Field(ge=...)`/`Bounds(...)` range."""
    is_kind = validation.is_int if kind == "int" else validation.is_number
    noun = "integer" if kind == "int" else "number"
    if bounds == {"ge": 1} and kind == "int":
        requirement = "a positive integer"
    else:
        words = " and ".join(f"{_BOUND_WORDS[name]} {value}" for name, value in bounds.items())
        requirement = f"{'an' if kind == 'int' else 'a'} {noun} {words}"
    tests = {"ge": lambda x, b: x >= b, "gt": lambda x, b: x > b, "le": lambda x, b: x <= b,
             "lt": lambda x, b: x < b}

    def check(value: Any) -> Optional[str]:
        if is_kind(value) and all(tests[name](value, b) for name, b in bounds.items()):
            return None
        return requirement

    return check


def key_check(item: dict[str, Any]) -> Optional[Check]:
    """The check of a schema entry: its type, choices and bounds (None for a dict: its keys are
    checked instead)."""
    if item["type"] == "dict":
        return None
    if item["type"] == "choice":
        return choice(*item["choices"])
    if item.get("bounds") and item["type"] in ("int", "number"):
        return _bounded(item["type"], item["bounds"])
    return _CHECKS[item["type"]]




def schema_keys(path: str) -> tuple[Key, ...]:
    """The keys of the RunSpec dict at `path` (e.g. `role_plan.policy`), nested dicts included,
    from the library's schema."""
    return tuple(_schema_key(name, item) for name, item in schema.section_keys(path).items())


def _schema_key(name: str, item: dict[str, Any]) -> Key:
    nested = None
    if item["type"] == "dict":
        nested = tuple(_schema_key(sub, subitem) for sub, subitem in item["keys"].items())
    # A docstring's final period would end the parenthesis it is quoted in.
    doc = item["doc"].rstrip(".")
    return Key(name, key_check(item), doc, nullable=item["nullable"], nested=nested,
               has_default="default" in item, default=item.get("default"))


def _validate_dict(value: Any, schema: tuple[Key, ...], prefix: str) -> list[str]:
    """Problems as fragments that follow "The 'x' field in target y ..."."""
    problems = []
    names = [key.name for key in schema]
    for name in value:
        if name not in names:
            close = difflib.get_close_matches(str(name), names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(
                f"has an unknown key {prefix + str(name)!r}{hint}; the keys are: {', '.join(names)}"
            )
    for key in schema:
        path = prefix + key.name
        if key.name not in value:
            if key.has_default:
                continue
            problems.append(
                f"is missing the key {path!r} ({key.doc}); every key must be set: "
                f"there are no silent defaults"
            )
            continue
        item = value[key.name]
        if item is None:
            if not key.nullable:
                problems.append(f"must set {path!r} to {_requirement(key)}, but was None")
            continue
        if key.nested is not None:
            if not isinstance(item, (dict, FrozenDict)):
                problems.append(f"must set {path!r} to a dict, but was {item!r}")
            else:
                problems.extend(_validate_dict(item, key.nested, path + "."))
            continue
        requirement = key.check(item) if key.check is not None else None
        if requirement is not None:
            problems.append(f"must set {path!r} to {requirement}, but was {item!r}")
    return problems


def _requirement(key: Key) -> str:
    if key.nested is not None or key.check is None:
        return "a dict"
    # A check's requirement is what it returns for a value that no check accepts.
    return key.check(object()) or "a value"


def with_defaults(value: Any, keys: tuple[Key, ...]) -> dict[str, Any]:
    """A checked dict with every key the model gives a default filled in (the spec the plugin
    writes says every value, as the library will read it)."""
    filled = dict(value)
    for key in keys:
        if key.name not in filled and key.has_default:
            filled[key.name] = key.default
        elif key.nested is not None and isinstance(filled.get(key.name), (dict, FrozenDict)):
            filled[key.name] = with_defaults(filled[key.name], key.nested)
    return filled


def thaw(value: Any) -> Any:
    """Frozen BUILD values back to plain JSON values (the inverse of `freeze`)."""
    if isinstance(value, (FrozenDict, dict)):
        return {key: thaw(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [thaw(item) for item in value]
    return value


def freeze(value: Any) -> Any:
    """Make a BUILD value hashable, as Pants needs: dicts (keys sorted) and lists become frozen."""
    if isinstance(value, (dict, FrozenDict)):
        return FrozenDict({key: freeze(value[key]) for key in sorted(value)})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(item) for item in value)
    return value


class SchemaDictField(Field):
    """A dict whose keys are exactly `schema` (None allowed only with `none_is_valid_value`)."""

    schema: ClassVar[tuple[Key, ...]]
    value: Optional[FrozenDict[str, Any]]
    default: ClassVar[None] = None

    @classmethod
    def compute_value(
        cls, raw_value: Optional[dict[str, Any]], address: Address
    ) -> Optional[FrozenDict[str, Any]]:
        if raw_value is NO_VALUE and cls.required and cls.none_is_valid_value:
            raise InvalidFieldException(
                f"The {cls.alias!r} field in target {address} must be written, as a dict or as "
                f"None: a role plan has no silent defaults (`{cls.alias}=None` says there is "
                f"none)."
            )
        value = super().compute_value(raw_value, address)
        if value is None:
            return None
        if not isinstance(value, (dict, FrozenDict)):
            raise InvalidFieldException(
                validation.field_message(cls.alias, address, f"a dict like {cls.example()}", value)
            )
        problems = _validate_dict(value, cls.schema, "")
        if len(problems) == 1:
            raise InvalidFieldException(
                f"The {cls.alias!r} field in target {address} {problems[0]}."
            )
        if problems:
            listed = "\n".join(f"  - {problem}" for problem in problems)
            raise InvalidFieldException(
                f"The {cls.alias!r} field in target {address} has {len(problems)} problems:\n"
                f"{listed}"
            )
        return freeze(with_defaults(value, cls.schema))

    @classmethod
    def example(cls) -> str:
        return "dict(" + ", ".join(f"{key.name}=..." for key in cls.schema) + ")"


def _key_lines(key: Key, indent: str) -> list[str]:
    text = f"{key.name}: {key.doc}" + (" (may be None)" if key.nullable else "")
    if key.has_default:
        text += f" (default: {key.default!r})"
    return textwrap.wrap(text, 88, initial_indent=indent, subsequent_indent=indent + "    ")


def dict_help(intro: str, schema: tuple[Key, ...], example: str = "") -> str:
    """A schema dict field's `help`: the intro, every key with its meaning, a BUILD example."""
    lines = [softwrap(intro), ""]
    for key in schema:
        lines += _key_lines(key, "    ")
        for nested in key.nested or ():
            lines += _key_lines(nested, "        ")
    if example:
        lines += ["", textwrap.indent(textwrap.dedent(example).strip("\n"), "    ")]
    return "\n".join(lines)


class JsonDictField(Field):
    """Any JSON-like dict (str keys; str, number, bool, None, list or dict values)."""

    value: FrozenDict[str, Any]
    default: ClassVar[FrozenDict[str, Any]] = FrozenDict()

    @classmethod
    def compute_value(
        cls, raw_value: Optional[dict[str, Any]], address: Address
    ) -> FrozenDict[str, Any]:
        value = super().compute_value(raw_value, address)
        problem = _json_problem(value, "")
        if problem is not None:
            raise InvalidFieldException(
                f"The {cls.alias!r} field in target {address} must be a dict of JSON values "
                f"(strings, numbers, booleans, None, lists and dicts with string keys), but "
                f"{problem}."
            )
        return freeze(value)


def _json_problem(value: Any, path: str) -> Optional[str]:
    if isinstance(value, (dict, FrozenDict)):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"the key {key!r}{' under ' + path if path else ''} is not a string"
            problem = _json_problem(item, f"{path}.{key}" if path else key)
            if problem:
                return problem
        return None
    if not path:
        return f"was {value!r}"
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            problem = _json_problem(item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    return f"{path} was {value!r} (a {type(value).__name__})"


# ---------------------------------------------------------------------------------------------
# References to other targets. They are dependencies (see dependency_inference.py), so
# `dependencies`, `dependents`, `peek` and `--changed-dependents` follow them.


class TargetReferenceField(StringField):
    """The address of another target, e.g. `:qwen` or `experiments/models:qwen`."""

    # Aliases of the target types this field may point at (checked when a goal resolves it).
    expected_types: ClassVar[tuple[str, ...]]

    @classmethod
    def compute_value(cls, raw_value: Optional[str], address: Address) -> Optional[str]:
        # An empty address is no "none": it would silently drop an optional slot (no
        # evaluation) or leave a required one unresolved.
        if isinstance(raw_value, str) and not raw_value.strip():
            raise InvalidFieldException(
                f"The {cls.alias!r} field in target {address} is an empty string. Give the "
                f"address of a {' or '.join(cls.expected_types)} target (e.g. ':name'), or "
                f"leave the field out where it is optional."
            )
        return super().compute_value(raw_value, address)
