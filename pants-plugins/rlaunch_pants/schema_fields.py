"""BUILD fields made from schema.json: one field class per key of what a target type holds.

The library's models are the schema (`scripts/gen-docs` writes schema.json from them): a key's
type, choices, bounds, default, null-ability, meaning and example value. From one key this
module makes the field Pants parses it with, in the Pants form of the field classes beside
(checks in `compute_value`, `required` or a `default`, a `help` that ends with the BUILD line
that writes it). So a key added to a library model is a BUILD field, checked and documented,
with no edit here. A target type's `SpecFieldSet` holds those fields and turns them into its
part of the RunSpec, as Pants' docker and helm field sets turn theirs into a build request.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Mapping
from typing import Any, ClassVar, Optional

from pants.engine.target import (
    BoolField,
    Field,
    FieldSet,
    InvalidFieldException,
    StringSequenceField,
)
from pants.util.frozendict import FrozenDict
from pants.util.strutil import softwrap

from rlaunch_pants import schema
from rlaunch_pants import validation as v
from rlaunch_pants.fields import (
    CheckedIntField,
    CheckedStringField,
    ChoiceField,
    JsonDictField,
    SchemaDictField,
    dict_help,
    key_check,
    schema_keys,
    thaw,
)


def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def build_value(value: Any) -> str:
    """A JSON value as a BUILD file writes it: `dict(a=1)`, `"text"`, `None`, `True`."""
    if isinstance(value, dict):
        items = ", ".join(f"{key}={build_value(item)}" for key, item in value.items())
        return f"dict({items})"
    if isinstance(value, list):
        return "[" + ", ".join(build_value(item) for item in value) + "]"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    return json.dumps(value)


def _pieces(line: str) -> list[str]:
    """A BUILD line cut after each `, ` outside string literals."""
    pieces, start, quoted = [], 0, False
    for index, char in enumerate(line):
        if char == '"' and line[index - 1 : index] != "\\":
            quoted = not quoted
        elif char == " " and not quoted and line[index - 1 : index] == ",":
            pieces.append(line[start : index + 1])
            start = index + 1
    return [*pieces, line[start:]]


def wrapped(line: str, width: int = 84, indent: str = "    ") -> str:
    """A long BUILD line, wrapped after commas into lines indented by `indent`."""
    lines = [""]
    for piece in _pieces(line):
        if lines[-1].strip() and len(lines[-1]) + len(piece.rstrip()) > width:
            lines[-1] = lines[-1].rstrip()
            lines.append(indent)
        lines[-1] += piece
    return "\n".join(lines)


def target_example(alias: str, name: str, section: str) -> str:
    """The worked example's `section` as a BUILD target: one line per field, long ones wrapped;
    a value that is the model's default is left out, as a BUILD file leaves it out."""
    keys = schema.section_keys(section)
    lines = [f"{alias}(", f'    name="{name}",']
    for key, value in schema.example_value(section).items():
        if keys[key].get("default", ...) == value:
            continue
        lines.append(textwrap.indent(wrapped(f"{key}={build_value(value)},", 80), "    "))
    return "\n".join([*lines, ")"])


def example_line(alias: str, path: str, item: Mapping[str, Any]) -> str:
    """`alias=<value>`: the key's own example, else the worked example's value, else `...`."""
    if "example" in item:
        return wrapped(f"{alias}={build_value(item['example'])}")
    found = schema.example_value(path)
    if found is not None:
        return wrapped(f"{alias}={build_value(found)}")
    return f"{alias}=..."


def _default_words(item: Mapping[str, Any]) -> str:
    if "default" not in item:
        return ""
    return f" Default: `{build_value(item['default'])}`."


def field_help(alias: str, path: str, item: Mapping[str, Any], intro: str = "") -> str:
    """A field's help: its meaning (the model's docstring), choices, default, a BUILD line."""
    doc = intro or schema.doc(path)
    if item["type"] == "dict":
        if item["nullable"] and "default" not in item:
            doc += f" Must be written either way (`{alias}=None` says there is none)."
        keys = schema_keys(path)
        written = "all required" if all(key.default is None for key in keys) else "required "
        written = written if written == "all required" else "required unless a default is shown"
        return dict_help(f"{doc}{_default_words(item)} Keys ({written}):", keys,
                         example_line(alias, path, item))
    parts = [softwrap(doc + _default_words(item))]
    if item["type"] == "choice":
        parts.append("One of: " + ", ".join(item["choices"]))
    parts.append(textwrap.indent(example_line(alias, path, item), "    "))
    return "\n\n".join(parts)


# A string key's syntax (schema.json `syntax`, the model's `Syntax(...)`) -> its check.
_SYNTAX = {
    "commit": v.check_commit,
    "sha256": v.check_sha256,
    "version": v.check_version,
}


def key_field(
    path: str,
    *,
    alias: Optional[str] = None,
    class_name: Optional[str] = None,
    intro: str = "",
    optional: bool = False,
) -> type[Field]:
    """The BUILD field of the schema key at `path` (`execution.priority`, `role_plan.policy`,
    `artifacts.hf_dataset.split`): its type's field class, required unless the model gives a
    default, None allowed where the model's key is nullable. `optional`: a key the BUILD file
    may leave out though the model has no default (the plugin derives its value)."""
    item = dict(schema.entry(path))
    if optional:
        item["default"] = None
    alias = alias or path.rsplit(".", 1)[-1]
    has_default = "default" in item
    attrs: dict[str, Any] = {
        "alias": alias,
        "required": not has_default,
        # Pants then passes an unwritten field as NO_VALUE, which a dict field refuses by name
        # (a role plan's `critic=None` must be written); a scalar's default is None anyway.
        "none_is_valid_value": item["nullable"] and (item["type"] == "dict" or not has_default),
        "help": field_help(alias, path, item, intro),
        "__module__": __name__,
    }
    kind = item["type"]
    if kind == "dict":
        attrs["schema"] = schema_keys(path)
        base: type[Field] = SchemaDictField
    elif kind == "choice":
        attrs["choices"] = tuple(item["choices"])
        base = ChoiceField
    elif kind == "bool":
        base = BoolField
    elif kind == "int":
        attrs["check"] = staticmethod(key_check(item))
        base = CheckedIntField
    elif kind == "list":
        base = StringSequenceField
    elif kind == "map" and "values" not in item:
        base = JsonDictField
    elif kind == "str":
        if "syntax" in item:
            attrs["check"] = staticmethod(_SYNTAX[item["syntax"]])
        base = CheckedStringField
    else:
        raise TypeError(f"{path}: no BUILD field for a schema key of type {kind!r}")
    if has_default:
        default = item["default"]
        attrs["default"] = tuple(default) if isinstance(default, list) else (
            FrozenDict(default) if isinstance(default, dict) else default
        )
    name = class_name or f"{camel(path.replace('.', '_'))}Field"
    return type(name, (base,), attrs)


def section_fields(
    section: str, *, skip: tuple[str, ...] = (), prefix: str = ""
) -> dict[str, type[Field]]:
    """`{key: field}` for every key of a schema section but `skip`, in the model's order."""
    fields = {}
    for name in schema.section_keys(section):
        if name in skip:
            continue
        path = f"{section}.{name}" if section else name
        fields[name] = key_field(path, class_name=f"{prefix}{camel(name)}Field")
    return fields


@dataclasses.dataclass(frozen=True)
class SpecFieldSet(FieldSet):
    """The fields of a target type that hold one part of the RunSpec (schema.json `targets`: a
    section, or an artifact variant); `spec_dict` turns them into it, key for key."""

    held: ClassVar[str]
    """The schema path of what the target holds (`role_plan`, `artifacts.hf_model`, "")."""
    attributes: ClassVar[Mapping[str, str]]
    """Spec key -> the attribute holding its field."""

    def spec_dict(self, resolved: Mapping[str, Any]) -> dict[str, Any]:
        """Every key of what the target holds, in the schema's order: the value the plugin
        resolved (references, derived values), else the target's name for `name`, the variant's
        tag for `type`, else the value of the key's field. A key that is none of these is a
        gap between schema.json and the fields (a stale pantsd, or a key made by hand)."""
        found = {}
        for key in schema.section_keys(self.held):
            if key in resolved:
                found[key] = resolved[key]
            elif key == "name":
                found[key] = self.address.target_name
            elif key == "type":
                found[key] = self.held.rsplit(".", 1)[-1]
            elif key in self.attributes:
                found[key] = thaw(getattr(self, self.attributes[key]).value)
            else:
                raise InvalidFieldException(
                    f"{self.address}: the RunSpec key {self.held}.{key} has no field; "
                    f"regenerate schema.json (scripts/gen-docs) and restart pantsd."
                )
        return found


def spec_field_set(name: str, held: str, fields: Mapping[str, type[Field]]) -> type[SpecFieldSet]:
    """The `SpecFieldSet` of a target type: one attribute per key's field (`<key>_` where the
    key is a FieldSet's own attribute, e.g. execution's `address`)."""
    attributes = {key: f"{key}_" if key in ("address", "fields") else key for key in fields}
    field_set = dataclasses.make_dataclass(
        name,
        [(attributes[key], field) for key, field in fields.items()],
        bases=(SpecFieldSet,),
        frozen=True,
        namespace={
            "required_fields": tuple(fields.values()),
            "held": held,
            "attributes": attributes,
            "__module__": __name__,
        },
    )
    return field_set
