"""The schema the Pants plugin reads: the RunSpec's keys, written from the pydantic models.

The plugin runs on CPython 3.9 and never imports the library, so the library writes what the
plugin needs into `pants-plugins/rlaunch_pants/schema.json` (`scripts/gen-docs`, or
`python -m rlaunch.buildschema --write`): every key of every section (and of an artifact's model
facts) with its type, choices,
whether it may be null and its meaning (the field's docstring); the artifact slots; the pin and
version patterns; the SkyRL settings catalog; the world rules that `./pants check` does not run.
A test fails when the
checked-in file differs from what this module writes.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel

from rlaunch.preflight import all_rules
from rlaunch.spec import syntax
from rlaunch.spec.artifacts import RUN_EXPORT_SLOTS, Artifact, ModelFacts
from rlaunch.spec.catalog import PROFILES
from rlaunch.spec.run import SCHEMA_VERSION, RunSpec
from rlaunch.spec.settings import PLAN_OWNED

SCHEMA_PATH = Path("pants-plugins/rlaunch_pants/schema.json")


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


def _describe_type(annotation: Any, path: str) -> dict[str, Any]:
    if annotation in (Artifact, _ARTIFACT_UNION):
        return {"type": "artifact"}
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return {"type": "choice", "choices": [str(arg) for arg in typing.get_args(annotation)]}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {"type": "dict", "keys": model_keys(annotation, path)}
    if origin is list and typing.get_args(annotation) == (str,):
        return {"type": "list"}
    if origin is dict and typing.get_args(annotation)[0] is str:
        return {"type": "map"}
    simple = {bool: "bool", int: "int", float: "number", str: "str"}
    if annotation in simple:
        return {"type": simple[annotation]}
    raise SchemaGap(f"{path}: the plugin has no BUILD type for {annotation!r}")


def model_keys(model: type[BaseModel], prefix: str = "") -> dict[str, Any]:
    """`{key: {type, nullable, doc, [choices], [keys]}}` of a model, in declaration order."""
    keys: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        path = f"{prefix}.{name}" if prefix else name
        annotation, nullable = _unwrap_optional(info.annotation)
        if not info.description:
            raise SchemaGap(f"{path}: write a docstring under the field (it is the BUILD help)")
        keys[name] = {
            **_describe_type(annotation, path),
            "nullable": nullable,
            "doc": " ".join(info.description.split()),
        }
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
