"""The schema the Pants plugin reads: the RunSpec's keys, written from the pydantic models.

The plugin runs on CPython 3.9 and never imports the library, so the library writes what the
plugin needs into `pants-plugins/rlaunch_pants/schema.json` (`scripts/gen-docs`, or
`python -m rlaunch.buildschema --write`): every key of every section (and of an artifact's model
facts, and of every artifact variant) with its type, choices, bounds, default, whether it may
be null, its meaning (the field's docstring) and an example value; which section each BUILD
target type holds; a worked example of every section; the artifact slots; the pin and version
patterns; the SkyRL settings catalog; the world rules that `./pants check` does not run. The
plugin makes its fields, their help and the spec it writes from this file, so a key added to a
model needs no edit in the plugin. A test fails when the checked-in file differs from what this
module writes.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import to_jsonable_python

from rlaunch.preflight import all_rules
from rlaunch.spec import syntax
from rlaunch.spec.artifacts import (
    RUN_EXPORT_SLOTS,
    AdoptedArtifact,
    Artifact,
    BuiltArtifact,
    HFDataset,
    HFModel,
    ModelFacts,
)
from rlaunch.spec.base import Bounds, Syntax
from rlaunch.spec.builder_configs import BUILDER_CONFIGS
from rlaunch.spec.catalog import PROFILES
from rlaunch.spec.examples import worked_example
from rlaunch.spec.run import SCHEMA_VERSION, RunSpec
from rlaunch.spec.settings import PLAN_OWNED

SCHEMA_PATH = Path("pants-plugins/rlaunch_pants/schema.json")

# The BUILD target types and what each holds: a section of the RunSpec (by key path; "" is the
# run itself) or an artifact variant (by its type tag). The plugin makes each target's fields
# from the keys of what it holds.
BUILD_TARGETS: dict[str, dict[str, str]] = {
    "hf_model": {"artifact": "hf_model"},
    "hf_dataset": {"artifact": "hf_dataset"},
    "adopted_artifact": {"artifact": "adopted"},
    "built_artifact": {"artifact": "built"},
    "rl_runtime": {"section": "runtime"},
    "role_plan": {"section": "role_plan"},
    "rl_execution": {"section": "execution"},
    "rl_run": {"section": ""},
}
# The artifact variants a BUILD target declares (a run's export is another rl_run).
BUILD_ARTIFACTS = (HFModel, HFDataset, AdoptedArtifact, BuiltArtifact)
# The worked example the help and the plugin's tests write as BUILD targets.
EXAMPLE = "colocated-1x8"


class SchemaGap(Exception):
    """A field the plugin cannot describe (an unknown type or a missing docstring)."""


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        nullable = len(members) < len(typing.get_args(annotation))
        if len(members) == 1:
            return members[0], nullable
    return annotation, False


# Pydantic keeps the union of an `Annotated` field and moves the discriminator aside.
_ARTIFACT_UNION = typing.get_args(Artifact)[0]


def _annotated(annotation: Any) -> tuple[Any, list[Any]]:
    """`Annotated[int, Field(ge=1)]` (inside an optional, pydantic keeps it) -> int, metadata."""
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        metadata: list[Any] = []
        for extra in extras:
            metadata += extra.metadata if isinstance(extra, FieldInfo) else [extra]
        return base, metadata
    return annotation, []


_BOUNDS = {annotated_types.Ge: "ge", annotated_types.Gt: "gt", annotated_types.Le: "le",
           annotated_types.Lt: "lt"}


def _bounds(metadata: list[Any]) -> dict[str, Any]:
    """`{ge|gt|le|lt: value}` of a field's `Field(ge=...)` constraints and its `Bounds`."""
    found = {}
    for item in metadata:
        if isinstance(item, Bounds):
            found.update({name: value for name, value in vars(item).items() if value is not None})
        for kind, name in _BOUNDS.items():
            if isinstance(item, kind):
                found[name] = getattr(item, name)
    return found


def _describe_type(annotation: Any, path: str) -> dict[str, Any]:
    if annotation in (Artifact, _ARTIFACT_UNION):
        return {"type": "artifact"}
    if annotation == "Artifact":  # a built artifact's deps, a forward reference
        return {"type": "artifact"}
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return {"type": "choice", "choices": [str(arg) for arg in typing.get_args(annotation)]}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {"type": "dict", "keys": model_keys(annotation, path)}
    if origin is list and typing.get_args(annotation) == (str,):
        return {"type": "list"}
    if origin is dict and typing.get_args(annotation)[0] is str:
        values = typing.get_args(annotation)[1]
        if values in (Artifact, _ARTIFACT_UNION) or typing.get_origin(values) is typing.Annotated:
            return {"type": "map", "values": "artifact"}
        return {"type": "map"}
    simple = {bool: "bool", int: "int", float: "number", str: "str"}
    if annotation in simple:
        return {"type": simple[annotation]}
    raise SchemaGap(f"{path}: the plugin has no BUILD type for {annotation!r}")


def model_keys(model: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """`{key: {type, nullable, doc, [choices], [keys], [bounds], [default], [example]}}` of a
    model, in declaration order. `default` is there only when the model declares one (a key
    without it must be written); `bounds` are the field's `Field(ge=..., lt=...)`."""
    keys: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        annotation, nullable = _unwrap_optional(info.annotation)
        annotation, metadata = _annotated(annotation)
        if not info.description:
            raise SchemaGap(f"{path}: write a docstring under the field (it is the BUILD help)")
        key = {
            **_describe_type(annotation, path),
            "nullable": nullable,
            "doc": " ".join(info.description.split()),
        }
        bounds = _bounds([*info.metadata, *metadata])
        if bounds:
            key["bounds"] = bounds
        syntax_of = [item.name for item in [*info.metadata, *metadata] if isinstance(item, Syntax)]
        if syntax_of:
            key["syntax"] = syntax_of[0]
        if not info.is_required():
            key["default"] = to_jsonable_python(info.get_default(call_default_factory=True))
        if info.examples:
            key["example"] = to_jsonable_python(info.examples[0])
        keys[name] = key
    return keys


def settings_schema() -> dict[str, Any]:
    """What the plugin checks a BUILD file's `settings` against before it knows the run's
    runtime: every name some catalogued release reads, with its type (the library checks the
    pinned release itself), the sections, and the names the plan decides; `releases` lists the
    catalogued releases whose full config is listed (the BUILD help names them), and a name not
    all of them have says which do (`only`)."""
    fields: dict[str, Any] = {}
    sections: dict[str, str] = {}
    full: list[str] = []
    having: dict[str, list[str]] = {}
    for profile in PROFILES.values():
        for release in (*profile.releases.values(), *profile.commits.values()):
            catalog = release.settings
            if not catalog.reads_only:
                full.append(catalog.label)
            for name, field in catalog.fields.items():
                fields.setdefault(name, {"type": field.type, "nullable": field.nullable})
                if not catalog.reads_only:
                    having.setdefault(name, []).append(catalog.label)
            sections.update(catalog.sections)
    for name, labels in having.items():
        if len(labels) < len(full):
            fields[name]["only"] = labels
    return {"releases": full, "fields": fields, "sections": sections,
            "plan_owned": dict(PLAN_OWNED)}


def build_schema() -> dict[str, Any]:
    keys = model_keys(RunSpec)
    return {
        "schema_version": SCHEMA_VERSION,
        "run_spec": keys,
        "artifact_slots": [name for name, key in keys.items() if key["type"] == "artifact"],
        # The slots (and a built artifact's deps) that may name an rl_run: its export.
        "run_export_slots": list(RUN_EXPORT_SLOTS),
        # An artifact is a target of its own; of its keys, the model facts are a BUILD dict.
        "model_facts": model_keys(ModelFacts, "facts"),
        # Every artifact variant a BUILD target declares, by its type tag.
        "artifacts": {
            variant.model_fields["type"].annotation.__args__[0]: {
                "doc": " ".join((variant.__doc__ or "").split()),
                "keys": model_keys(variant, variant.__name__),
            }
            for variant in BUILD_ARTIFACTS
        },
        "targets": BUILD_TARGETS,
        # The config of each of rlaunch's own builders (a built_artifact's `config`, by
        # `builder`): the plugin checks keys and types at BUILD parse, preflight values (ART010).
        "builder_configs": {
            name: {"doc": " ".join((model.__doc__ or "").split()),
                   "keys": model_keys(model, "config")}
            for name, model in BUILDER_CONFIGS.items()
        },
        "example": worked_example(EXAMPLE),
        "settings": settings_schema(),
        "patterns": {
            "commit": syntax.COMMIT.pattern,
            "sha256": syntax.SHA256.pattern,
            "calendar": syntax.CALENDAR.pattern,
            "dev": syntax.DEV.pattern,
        },
        "world_rules": [
            {"code": rule.code, "summary": rule.summary}
            for rule in sorted(all_rules(), key=lambda rule: rule.code)
            if rule.scope == "world"
        ],
    }


def schema_text() -> str:
    return json.dumps(build_schema(), indent=2) + "\n"


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        SCHEMA_PATH.write_text(schema_text())
        return 0
    sys.stdout.write(schema_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
