"""`./pants run`: launch an rl_run, or build a built_artifact.

Both run the library on the project runtime outside the sandbox, in the repository root with the
user's environment: launching talks to executors and the artifact store, and records the launch.
Arguments after `--` reach the library command (`./pants run <run> -- --dry-run`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pants.base.build_root import BuildRoot
from pants.core.goals.run import RunFieldSet, RunInSandboxBehavior, RunRequest
from pants.core.util_rules.distdir import DistDir
from pants.engine.addresses import Address
from pants.engine.fs import CreateDigest, Digest, FileContent
from pants.engine.rules import Get, collect_rules, rule

from rlaunch_pants.artifact_fields import BuiltArtifactBuilderField
from rlaunch_pants.goals.package import output_dir
from rlaunch_pants.process import library_env
from rlaunch_pants.run_fields import RlRunRolePlanField
from rlaunch_pants.specs import (
    SPEC_DIR,
    ArtifactSpec,
    ArtifactSpecRequest,
    RunSpecDocument,
    RunSpecRequest,
    spec_file_path,
)
from rlaunch_pants.subsystem import RlaunchSubsystem


def runtime_env(build_root: BuildRoot) -> dict[str, str]:
    # The repository's own library, by absolute path: the process starts in the repo root, but
    # the library may change directory.
    return library_env(os.path.join(build_root.path, "src"))


def store_args(rlaunch: RlaunchSubsystem) -> tuple[str, ...]:
    """`--store` when [rlaunch].store is set; else the library's default (the spec's
    execution.store_prefix, else $RLAUNCH_STORE, else ~/.cache/rlaunch/store)."""
    return ("--store", rlaunch.store) if rlaunch.store else ()


@dataclass(frozen=True)
class RlRunLaunchFieldSet(RunFieldSet):
    required_fields = (RlRunRolePlanField,)
    run_in_sandbox_behavior = RunInSandboxBehavior.NOT_SUPPORTED

    role_plan: RlRunRolePlanField


@rule(desc="Preparing the launch of an rl_run")
async def launch_rl_run(
    field_set: RlRunLaunchFieldSet,
    rlaunch: RlaunchSubsystem,
    build_root: BuildRoot,
    dist_dir: DistDir,
) -> RunRequest:
    document = await Get(RunSpecDocument, RunSpecRequest(field_set.address))
    spec_path = spec_file_path(field_set.address)
    digest = await Get(Digest, CreateDigest([FileContent(spec_path, document.json.encode())]))
    out = os.path.join(
        build_root.path, str(dist_dir.relpath), output_dir(field_set.address), "launch.yaml"
    )
    return RunRequest(
        digest=digest,
        args=(
            rlaunch.runtime_python(),
            "-m",
            "rlaunch",
            "launch",
            "{chroot}/" + spec_path,
            "--out",
            out,
            # The launcher checkout whose commit and cleanliness the ledger records.
            "--repo",
            build_root.path,
            *store_args(rlaunch),
        ),
        extra_env=runtime_env(build_root),
    )


def artifact_file_path(address: Address) -> str:
    directory = f"{SPEC_DIR}/{address.spec_path}" if address.spec_path else SPEC_DIR
    return f"{directory}/{address.target_name}.artifact.json"


@dataclass(frozen=True)
class BuiltArtifactRunFieldSet(RunFieldSet):
    required_fields = (BuiltArtifactBuilderField,)
    run_in_sandbox_behavior = RunInSandboxBehavior.NOT_SUPPORTED

    builder: BuiltArtifactBuilderField


@rule(desc="Preparing the build of an artifact")
async def build_artifact(
    field_set: BuiltArtifactRunFieldSet,
    rlaunch: RlaunchSubsystem,
    build_root: BuildRoot,
    dist_dir: DistDir,
) -> RunRequest:
    artifact = await Get(ArtifactSpec, ArtifactSpecRequest(field_set.address))
    path = artifact_file_path(field_set.address)
    digest = await Get(Digest, CreateDigest([FileContent(path, artifact.json.encode())]))
    return RunRequest(
        digest=digest,
        args=(
            rlaunch.runtime_python(),
            "-m",
            "rlaunch",
            "build",
            "{chroot}/" + path,
            # The launch YAMLs of the runs an eval stage reads, when it launches them first.
            "--out-dir",
            os.path.join(build_root.path, str(dist_dir.relpath), output_dir(field_set.address)),
            *store_args(rlaunch),
        ),
        extra_env=runtime_env(build_root),
    )


def rules():  # type: ignore[no-untyped-def]
    return [
        *collect_rules(),
        *RlRunLaunchFieldSet.rules(),
        *BuiltArtifactRunFieldSet.rules(),
    ]
