"""Address fields as dependencies: inference (so `dependencies`, `dependents`, `peek` and
`--changed-dependents` see them) and resolution to the referenced target with a type check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pants.engine.addresses import Address, Addresses, UnparsedAddressInputs
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.engine.target import (
    FieldSet,
    InferDependenciesRequest,
    InferredDependencies,
    InvalidFieldException,
    Target,
    Targets,
)
from pants.engine.unions import UnionRule

from rlaunch_pants import run_fields as rf
from rlaunch_pants.artifact_fields import BuiltArtifactDepsField


@dataclass(frozen=True)
class ReferenceRequest:
    """Resolve the address written in a field of `owner` (`field` names it in messages)."""

    owner: Address
    field: str
    value: str
    expected_types: tuple[str, ...]


@dataclass(frozen=True)
class ReferencedTarget:
    target: Target


@rule
async def resolve_reference(request: ReferenceRequest) -> ReferencedTarget:
    targets = await Get(
        Targets,
        UnparsedAddressInputs(
            [request.value],
            owning_address=request.owner,
            description_of_origin=f"the `{request.field}` field of {request.owner}",
        ),
    )
    target = targets[0]
    if target.alias not in request.expected_types:
        wanted = ", ".join(request.expected_types)
        raise InvalidFieldException(
            f"The {request.field!r} field in target {request.owner} must name a target of type "
            f"{wanted}, but {request.value!r} ({target.address}) is of type {target.alias}."
        )
    return ReferencedTarget(target)


async def _addresses(owner: Address, references: Iterable[tuple[str, str]]) -> InferredDependencies:
    named = [(field, value) for field, value in references if value]
    resolved = await MultiGet(
        Get(
            Addresses,
            UnparsedAddressInputs(
                [value],
                owning_address=owner,
                description_of_origin=f"the `{field}` field of {owner}",
            ),
        )
        for field, value in named
    )
    return InferredDependencies(address for addresses in resolved for address in addresses)


@dataclass(frozen=True)
class RlRunReferencesFieldSet(FieldSet):
    required_fields = (rf.RlRunRolePlanField,)

    model: rf.RlRunModelField
    tokenizer: rf.RlRunTokenizerField
    reference_model: rf.RlRunReferenceModelField
    critic_model: rf.RlRunCriticModelField
    train_data: rf.RlRunTrainDataField
    eval_data: rf.RlRunEvalDataField
    environment_data: rf.RlRunEnvironmentDataField
    runtime: rf.RlRunRuntimeField
    role_plan: rf.RlRunRolePlanField
    execution: rf.RlRunExecutionField
    smoke_of: rf.RlRunSmokeOfField
    skyrl_settings: rf.RlRunSkyrlSettingsField


class InferRlRunDependencies(InferDependenciesRequest):
    infer_from = RlRunReferencesFieldSet


@rule(desc="Inferring the dependencies of rl_run targets")
async def infer_rl_run_dependencies(request: InferRlRunDependencies) -> InferredDependencies:
    field_set = request.field_set
    references = [
        (field.alias, field.value)
        for field in (
            field_set.model,
            field_set.tokenizer,
            field_set.reference_model,
            field_set.critic_model,
            field_set.train_data,
            field_set.eval_data,
            field_set.environment_data,
            field_set.runtime,
            field_set.role_plan,
            field_set.execution,
            field_set.smoke_of,
            field_set.skyrl_settings,
        )
    ]
    return await _addresses(field_set.address, references)


@dataclass(frozen=True)
class BuiltArtifactDepsFieldSet(FieldSet):
    required_fields = (BuiltArtifactDepsField,)

    deps: BuiltArtifactDepsField


class InferBuiltArtifactDependencies(InferDependenciesRequest):
    infer_from = BuiltArtifactDepsFieldSet


@rule(desc="Inferring the dependencies of built_artifact targets")
async def infer_built_artifact_dependencies(
    request: InferBuiltArtifactDependencies,
) -> InferredDependencies:
    deps = request.field_set.deps.value or {}
    return await _addresses(
        request.field_set.address, [(f"deps.{slot}", deps[slot]) for slot in sorted(deps)]
    )


def rules():  # type: ignore[no-untyped-def]
    return [
        *collect_rules(),
        UnionRule(InferDependenciesRequest, InferRlRunDependencies),
        UnionRule(InferDependenciesRequest, InferBuiltArtifactDependencies),
    ]
