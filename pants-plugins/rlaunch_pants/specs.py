"""Targets -> the RunSpec JSON document (schema_version 1, the public format of src/rlaunch/spec).

Every key is written, nulls included, so the library sees exactly what the BUILD files say. The
conversion of one target is a plain function (tested without the engine); the rules below
resolve the references and assemble the run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

from pants.engine.addresses import Address
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.engine.target import (
    InvalidFieldException,
    Target,
    WrappedTarget,
    WrappedTargetRequest,
)
from pants.util.frozendict import FrozenDict

from rlaunch_pants import artifact_fields as af
from rlaunch_pants import run_fields as rf
from rlaunch_pants import schema
from rlaunch_pants import target_types as tt
from rlaunch_pants.fields import TargetReferenceField, thaw
from rlaunch_pants.origins import (
    RUN_FIELD_NAMES,
    SOURCES_KEY,
    TargetOrigin,
    TargetOriginRequest,
)
from rlaunch_pants.references import ReferencedTarget, ReferenceRequest
from rlaunch_pants.settings_fields import SkyrlSettingsField

SCHEMA_VERSION = schema.SCHEMA["schema_version"]
ARTIFACT_SLOTS = schema.ARTIFACT_SLOTS
SPEC_DIR = "__rlaunch_specs"
# The sections of `smoke_of` that are a target of the full run (the allocation is one field of
# its execution target).
SMOKE_SHARED_SECTIONS = tuple(
    key for key in schema.section_keys("smoke_of") if key in schema.TARGETS.values()
)


def canonical(document: Mapping[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, indent=2) + "\n"


# ---------------------------------------------------------------------------------------------
# One target -> its section of the spec.


def spec_dict(target: Target, resolved: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the RunSpec a target holds, from its spec field set (target_types.py)."""
    return tt.SPEC_FIELD_SETS[target.alias].create(target).spec_dict(resolved)


def artifact_dict(target: Target, deps: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """An artifact target as a spec artifact; `deps` are a built artifact's resolved deps."""
    if not schema.TARGETS.get(target.alias, "").startswith("artifacts."):
        raise InvalidFieldException(f"{target.address} ({target.alias}) is not an artifact target.")
    resolved: dict[str, Any] = {"deps": {slot: deps[slot] for slot in sorted(deps)}}
    if isinstance(target, tt.HFModelTarget):
        # A model that ships its tokenizer: the tokenizer pin is the model's own.
        resolved["tokenizer_repo_id"] = (
            target[af.HFModelTokenizerRepoIdField].value
            or target[af.HF_MODEL_FIELD["repo_id"]].value
        )
        resolved["tokenizer_revision"] = (
            target[af.HFModelTokenizerRevisionField].value
            or target[af.HF_MODEL_FIELD["revision"]].value
        )
    return spec_dict(target, resolved)


def run_export_dict(run_spec: Mapping[str, Any]) -> dict[str, Any]:
    """Another run as an artifact: its export, named after the run, carrying the run's spec
    (without its BUILD sources) so that the library can derive its fingerprint and launch it."""
    run = {key: value for key, value in run_spec.items() if key != SOURCES_KEY}
    return {"type": "run_export", "name": run["name"], "version": run["version"], "run": run}


def artifact_kind(artifact: Mapping[str, Any]) -> str:
    if artifact["type"] in ("hf_model", "run_export"):
        return "model"
    if artifact["type"] == "hf_dataset":
        return "dataset"
    return str(artifact["kind"])


def walk_artifacts(
    path: str, artifact: Mapping[str, Any]
) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """`(field path, artifact)` for an artifact and, depth first, its dependencies."""
    yield path, artifact
    for slot, dep in sorted(artifact.get("deps", {}).items()):
        yield from walk_artifacts(f"{path}.deps.{slot}", dep)


def smoke_of_dict(full_run: Mapping[str, Any]) -> dict[str, Any]:
    """What a smoke run must share with its full run (the keys of the schema's `smoke_of`),
    taken from the full run's spec: its own keys, its execution's, and its handoff kinds."""
    derived = {
        "handoff_kinds": {
            slot: artifact_kind(full_run[slot])
            for slot in ARTIFACT_SLOTS
            if full_run[slot] is not None
        },
    }
    return {
        key: derived[key] if key in derived else full_run.get(key, full_run["execution"].get(key))
        for key in schema.section_keys("smoke_of")
    }


@dataclass(frozen=True)
class RunParts:
    """The resolved sections of a run, each already in spec form."""

    artifacts: Mapping[str, Optional[dict[str, Any]]]
    runtime: dict[str, Any]
    role_plan: dict[str, Any]
    execution: dict[str, Any]
    smoke_of: Optional[dict[str, Any]]
    # The settings of the run's `skyrl_settings` target (its own `settings` override them).
    shared_settings: Mapping[str, Any] = FrozenDict()


def setting_field(name: str) -> str:
    """How a BUILD file writes one setting (messages name it so)."""
    return f"settings[{json.dumps(name)}]"


def run_spec_dict(target: Target, parts: RunParts) -> dict[str, Any]:
    return spec_dict(target, {
        "schema_version": SCHEMA_VERSION,
        "name": target[rf.RlRunNameField].value or target.address.target_name,
        **{slot: parts.artifacts.get(slot) for slot in ARTIFACT_SLOTS},
        "runtime": parts.runtime,
        "role_plan": parts.role_plan,
        "settings": {**thaw(parts.shared_settings), **thaw(target[SkyrlSettingsField].value)},
        "execution": parts.execution,
        "smoke_of": parts.smoke_of,
    })


def spec_file_path(address: Address) -> str:
    """Where a run's spec is written in a sandbox: mirrors the address, so it reads well."""
    directory = f"{SPEC_DIR}/{address.spec_path}" if address.spec_path else SPEC_DIR
    return f"{directory}/{address.target_name}.json"


def artifact_identities(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """`(field path, name@version)` of every artifact a run uses, dependencies included."""
    found = []
    for slot in ARTIFACT_SLOTS:
        if spec.get(slot) is not None:  # a slot with a default (environment_data) may be absent
            for path, artifact in walk_artifacts(slot, spec[slot]):
                found.append((path, f"{artifact['name']}@{artifact['version']}"))
    return found


# ---------------------------------------------------------------------------------------------
# Rules: resolve references and assemble.


@dataclass(frozen=True)
class ArtifactSpecRequest:
    address: Address
    # The built artifacts whose deps led here, outermost first. A cycle is named from it before
    # it reaches the engine, which waits forever on a target whose spec needs its own spec.
    via: tuple[Address, ...] = ()


def _cycle(cycle: Sequence[Address]) -> tuple[str, str]:
    """`a -> b -> a` and the BUILD files to edit; `cycle` ends with the address it starts at."""
    steps = " -> ".join(str(address) for address in cycle)
    return steps, ", ".join(sorted({f"{address.spec_path or '.'}/BUILD" for address in cycle}))


def cycle_message(cycle: Sequence[Address]) -> str:
    steps, files = _cycle(cycle)
    return (
        f"Dependency cycle in the deps of built_artifact targets: {steps}. An artifact cannot be "
        f"built from itself; remove the dep that closes the cycle (in {files})."
    )


def run_cycle_message(cycle: Sequence[Address]) -> str:
    """For runs that read each other's export."""
    steps, files = _cycle(cycle)
    return (
        f"Dependency cycle between rl_run targets: {steps} (each reads the next one's export). "
        f"A run cannot start from its own export; change the model field that closes the "
        f"cycle (in {files})."
    )


@dataclass(frozen=True)
class ArtifactSpec:
    address: Address
    json: str
    # (path under the artifact, target): the artifact itself at "", its deps at "deps.<slot>".
    origins: tuple[tuple[str, Address], ...]

    def data(self) -> dict[str, Any]:
        return json.loads(self.json)


@dataclass(frozen=True)
class RunSpecRequest:
    address: Address
    # The runs whose model slots led here (pipeline stages), outermost first: a run that reads
    # its own export, through any chain, is named as a cycle instead of waiting forever.
    via: tuple[Address, ...] = ()


@dataclass(frozen=True)
class RunSpecDocument:
    """A run's RunSpec as canonical JSON text (hashable, so the engine can memoize it)."""

    address: Address
    json: str

    def data(self) -> dict[str, Any]:
        return json.loads(self.json)


async def _target(address: Address) -> Target:
    wrapped = await Get(
        WrappedTarget,
        WrappedTargetRequest(address, description_of_origin="the rlaunch backend"),
    )
    return wrapped.target


def _reference(owner: Target, field: type[TargetReferenceField]) -> Optional[ReferenceRequest]:
    value = owner[field].value
    if not value:
        return None
    return ReferenceRequest(owner.address, field.alias, value, field.expected_types)


@rule(desc="Assembling an artifact spec")
async def artifact_spec(request: ArtifactSpecRequest) -> ArtifactSpec:
    target = await _target(request.address)
    deps: dict[str, dict[str, Any]] = {}
    origins = [("", target.address)]
    if isinstance(target, tt.RlRunTarget):
        if target.address in request.via:
            start = request.via.index(target.address)
            raise InvalidFieldException(
                run_cycle_message((*request.via[start:], target.address))
            )
        upstream = await Get(RunSpecDocument, RunSpecRequest(target.address, request.via))
        export = run_export_dict(upstream.data())
        return ArtifactSpec(target.address, canonical(export), tuple(origins))
    if isinstance(target, tt.BuiltArtifactTarget):
        declared = target[af.BuiltArtifactDepsField].value or {}
        slots = sorted(declared)
        referenced = await MultiGet(
            Get(
                ReferencedTarget,
                ReferenceRequest(
                    target.address, f"deps.{slot}", declared[slot],
                    af.BuiltArtifactDepsField.expected_types,
                ),
            )
            for slot in slots
        )
        chain = (*request.via, target.address)
        for found in referenced:
            if found.target.address in chain:
                start = chain.index(found.target.address)
                raise InvalidFieldException(cycle_message((*chain[start:], found.target.address)))
        specs = await MultiGet(
            Get(ArtifactSpec, ArtifactSpecRequest(found.target.address, chain))
            for found in referenced
        )
        deps = {slot: spec.data() for slot, spec in zip(slots, specs)}
        for slot, spec in zip(slots, specs):
            origins += [(_join(f"deps.{slot}", sub), address) for sub, address in spec.origins]
    return ArtifactSpec(target.address, canonical(artifact_dict(target, deps)), tuple(origins))


@rule(desc="Assembling a run spec")
async def run_spec(request: RunSpecRequest) -> RunSpecDocument:
    target = await _target(request.address)
    by_alias = {field.alias: field for field in rf.RUN_REFERENCE_FIELDS}
    slot_fields = {slot: by_alias[slot] for slot in ARTIFACT_SLOTS}
    set_slots = [slot for slot, field in slot_fields.items() if target[field].value]
    # Required fields (runtime, role_plan, execution) always have a value here.
    fields = [slot_fields[slot] for slot in set_slots]
    fields += [rf.RlRunRuntimeField, rf.RlRunRolePlanField, rf.RlRunExecutionField]
    requests = [_reference(target, field) for field in fields]
    resolved = await MultiGet(
        Get(ReferencedTarget, ReferenceRequest, request) for request in requests if request
    )
    chain = (*request.via, target.address)
    artifact_specs = await MultiGet(
        Get(ArtifactSpec, ArtifactSpecRequest(found.target.address, chain))
        for found in resolved[: len(set_slots)]
    )
    runtime, plan, execution = (found.target for found in resolved[len(set_slots) :])

    smoke_of = None
    full_spec = None
    smoke_ref = _reference(target, rf.RlRunSmokeOfField)
    if smoke_ref is not None:
        full = await Get(ReferencedTarget, ReferenceRequest, smoke_ref)
        if full.target.address == target.address:
            raise InvalidFieldException(
                f"The 'smoke_of' field in target {target.address} must name the full run this "
                f"run is the smoke of, but names the run itself."
            )
        full_spec = await Get(RunSpecDocument, RunSpecRequest(full.target.address))
        smoke_of = smoke_of_dict(full_spec.data())

    shared = None
    shared_ref = _reference(target, rf.RlRunSkyrlSettingsField)
    if shared_ref is not None:
        shared = (await Get(ReferencedTarget, ReferenceRequest, shared_ref)).target

    parts = RunParts(
        artifacts={slot: spec.data() for slot, spec in zip(set_slots, artifact_specs)},
        runtime=spec_dict(runtime, {}),
        role_plan=spec_dict(plan, {}),
        execution=spec_dict(execution, {}),
        smoke_of=smoke_of,
        shared_settings=shared[SkyrlSettingsField].value if shared is not None else FrozenDict(),
    )
    own_settings = target[SkyrlSettingsField].value
    run_fields = {f"settings.{name}": setting_field(name) for name in own_settings}
    sections = [
        ("", target.address, {**RUN_FIELD_NAMES, **run_fields}),
        ("role_plan", plan.address, {}),
        ("execution", execution.address, {}),
        ("runtime", runtime.address, {}),
    ]
    for slot, spec in zip(set_slots, artifact_specs):
        sections += [
            (_join(slot, sub), address, {}) for sub, address in spec.origins
        ]
    if shared is not None:
        # A shared setting is written in the skyrl_settings target: one section per name.
        sections += [
            (f"settings.{name}", shared.address, {"": setting_field(name)})
            for name in parts.shared_settings if name not in own_settings
        ]
    origins = await MultiGet(
        Get(TargetOrigin, TargetOriginRequest(address)) for _, address, _ in sections
    )
    document = run_spec_dict(target, parts)
    sources = {path: origin.entry(names) for (path, _, names), origin in zip(sections, origins)}
    if full_spec is not None:
        # What a smoke shares with its full run is written in the full run's targets.
        full_sources = full_spec.data()[SOURCES_KEY]
        for section in SMOKE_SHARED_SECTIONS:
            sources[f"smoke_of.{section}"] = full_sources[section]
    document[SOURCES_KEY] = sources
    return RunSpecDocument(target.address, canonical(document))


def _join(path: str, sub: str) -> str:
    return f"{path}.{sub}" if sub else path


def rules():  # type: ignore[no-untyped-def]
    return collect_rules()
