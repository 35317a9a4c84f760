"""`./pants package`: write `dist/<dir>/<target>/launch.yaml` for an rl_run, submitting nothing
(for an rl_sweep, that of each of its runs).

Beside it: `spec.json` (the RunSpec the YAML was rendered from) and `identities.txt` (every
artifact the run uses, `slot  name@version`). Rendering is a cached process and deterministic:
packaging twice gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from pants.core.goals.package import BuiltPackage, BuiltPackageArtifact, PackageFieldSet
from pants.engine.addresses import Address
from pants.engine.env_vars import EnvironmentVars, EnvironmentVarsRequest
from pants.engine.fs import CreateDigest, Digest, FileContent, MergeDigests
from pants.engine.process import FallibleProcessResult, ProcessCacheScope, ProcessResult
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.engine.unions import UnionRule
from pants.util.frozendict import FrozenDict

from rlaunch_pants.goals.check import split_report
from rlaunch_pants.process import RlaunchProcess
from rlaunch_pants.run_fields import RlRunRolePlanField
from rlaunch_pants.specs import (
    RunSpecDocument,
    RunSpecRequest,
    artifact_identities,
    spec_file_path,
)
from rlaunch_pants.subsystem import RlaunchSubsystem
from rlaunch_pants.sweep import RlSweepRunsField, SweepRuns, SweepRunsRequest

# What the library reads to find its default store when no prefix is given, beside the user's
# cache that every library process gets (rlaunch_pants.process.CACHE_ENV): part of the cache
# key, so a changed $RLAUNCH_STORE renders again.
STORE_ENV = ("RLAUNCH_STORE",)


def output_dir(address: Address) -> str:
    """`<dir>/<target>` under dist/: one folder per run target."""
    return (
        f"{address.spec_path}/{address.target_name}" if address.spec_path else address.target_name
    )


def identities_text(spec: dict) -> str:
    lines = [f"run  {spec['name']}@{spec['version']}"]
    lines += [f"{path}  {identity}" for path, identity in artifact_identities(spec)]
    return "\n".join(lines) + "\n"


class PackageRefused(Exception):
    """A run whose spec-scope preflight has an error is not packaged."""


def package_refusal(stdout: bytes, stderr: bytes, source: str, address: str) -> Optional[str]:
    """The preflight report that refuses packaging, or None when the run has no error."""
    report = split_report(stdout, {source: address})
    if report is None:
        parts = (stderr.decode().strip(), stdout.decode().strip())
        said = "\n".join(part for part in parts if part)
        return f"{address} is not packaged: its preflight did not run:\n{said}"
    code, text = report[source]
    if code == 0:
        return None
    return (
        f"{address} is not packaged: `./pants check {address}` refuses it (a launch YAML is "
        f"written only for a run that passes its preflight).\n{text}"
    )


@dataclass(frozen=True)
class RlRunPackageFieldSet(PackageFieldSet):
    required_fields = (RlRunRolePlanField,)

    role_plan: RlRunRolePlanField


@rule(desc="Rendering the launch YAML of an rl_run")
async def package_rl_run(
    field_set: RlRunPackageFieldSet, rlaunch: RlaunchSubsystem
) -> BuiltPackage:
    document = await Get(RunSpecDocument, RunSpecRequest(field_set.address))
    spec = document.data()
    spec_path = spec_file_path(field_set.address)
    folder = output_dir(field_set.address)
    launch_yaml = f"{folder}/launch.yaml"
    inputs = await Get(Digest, CreateDigest([FileContent(spec_path, document.json.encode())]))
    # What `check` refuses is not packaged: the spec-scope preflight first (the same cached
    # process as `check` of this run alone).
    checked = await Get(
        FallibleProcessResult,
        RlaunchProcess(
            args=("preflight", "--format", "json", "--scope", "spec", spec_path),
            description=f"Preflight {field_set.address}",
            input_digest=inputs,
            cache_scope=ProcessCacheScope.ALWAYS,
        ),
    )
    refusal = package_refusal(checked.stdout, checked.stderr, spec_path, str(field_set.address))
    if refusal:
        raise PackageRefused(refusal)

    store_args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    if rlaunch.store:
        store_args = ("--store", rlaunch.store)
    else:
        # The library's default (the spec's store_prefix, else $RLAUNCH_STORE, else the user's
        # cache) depends on it: give it to the process, as the user has it.
        found = await Get(EnvironmentVars, EnvironmentVarsRequest(STORE_ENV))
        env = {name: value for name, value in found.items() if value}

    rendered = await Get(
        ProcessResult,
        RlaunchProcess(
            args=("render", spec_path, "-o", launch_yaml, *store_args),
            description=f"Render the launch YAML of {field_set.address}",
            input_digest=inputs,
            output_files=(launch_yaml,),
            env=FrozenDict(env),
        ),
    )
    extras = await Get(
        Digest,
        CreateDigest(
            [
                FileContent(f"{folder}/spec.json", document.json.encode()),
                FileContent(f"{folder}/identities.txt", identities_text(spec).encode()),
            ]
        ),
    )
    digest = await Get(Digest, MergeDigests([rendered.output_digest, extras]))
    identities = tuple(f"  {path}: {identity}" for path, identity in artifact_identities(spec))
    return BuiltPackage(
        digest,
        (
            BuiltPackageArtifact(launch_yaml, extra_log_lines=identities),
            BuiltPackageArtifact(f"{folder}/spec.json"),
            BuiltPackageArtifact(f"{folder}/identities.txt"),
        ),
    )


@dataclass(frozen=True)
class RlSweepPackageFieldSet(PackageFieldSet):
    required_fields = (RlSweepRunsField,)

    runs: RlSweepRunsField


@rule(desc="Rendering the launch YAMLs of an rl_sweep")
async def package_rl_sweep(field_set: RlSweepPackageFieldSet) -> BuiltPackage:
    """Every run of the sweep packaged as itself (the same cached rule, the same folders)."""
    targets = await Get(SweepRuns, SweepRunsRequest(field_set.address, field_set.runs))
    packages = await MultiGet(
        Get(BuiltPackage, RlRunPackageFieldSet, RlRunPackageFieldSet.create(target))
        for target in targets
    )
    digest = await Get(Digest, MergeDigests(built.digest for built in packages))
    return BuiltPackage(digest, tuple(a for built in packages for a in built.artifacts))


def rules():  # type: ignore[no-untyped-def]
    return [
        *collect_rules(),
        UnionRule(PackageFieldSet, RlRunPackageFieldSet),
        UnionRule(PackageFieldSet, RlSweepPackageFieldSet),
    ]
