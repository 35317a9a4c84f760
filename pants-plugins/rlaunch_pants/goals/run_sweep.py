"""`./pants run <rl_sweep>`: launch every run of the sweep through `rlaunch sweep`."""

from __future__ import annotations

import os
from dataclasses import dataclass

from pants.base.build_root import BuildRoot
from pants.core.goals.run import RunFieldSet, RunInSandboxBehavior, RunRequest
from pants.core.util_rules.distdir import DistDir
from pants.engine.fs import CreateDigest, Digest, FileContent
from pants.engine.rules import Get, MultiGet, collect_rules, rule

from rlaunch_pants.goals.package import output_dir
from rlaunch_pants.goals.run import runtime_env, store_args
from rlaunch_pants.specs import RunSpecDocument, RunSpecRequest, spec_file_path
from rlaunch_pants.subsystem import RlaunchSubsystem
from rlaunch_pants.sweep import (
    RlSweepMaxParallelField,
    RlSweepRunsField,
    SweepRuns,
    SweepRunsRequest,
)


@dataclass(frozen=True)
class RlSweepRunFieldSet(RunFieldSet):
    required_fields = (RlSweepRunsField, RlSweepMaxParallelField)
    run_in_sandbox_behavior = RunInSandboxBehavior.NOT_SUPPORTED

    runs: RlSweepRunsField
    max_parallel: RlSweepMaxParallelField


@rule(desc="Preparing the launch of an rl_sweep")
async def launch_rl_sweep(
    field_set: RlSweepRunFieldSet,
    rlaunch: RlaunchSubsystem,
    build_root: BuildRoot,
    dist_dir: DistDir,
) -> RunRequest:
    targets = await Get(SweepRuns, SweepRunsRequest(field_set.address, field_set.runs))
    documents = await MultiGet(
        Get(RunSpecDocument, RunSpecRequest(target.address)) for target in targets
    )
    paths = [spec_file_path(target.address) for target in targets]
    digest = await Get(
        Digest,
        CreateDigest(
            [FileContent(path, doc.json.encode()) for path, doc in zip(paths, documents)]
        ),
    )
    out_dir = os.path.join(build_root.path, str(dist_dir.relpath), output_dir(field_set.address))
    return RunRequest(
        digest=digest,
        args=(
            rlaunch.runtime_python(),
            "-m",
            "rlaunch",
            "sweep",
            *("{chroot}/" + path for path in paths),
            "--out-dir",
            out_dir,
            "--repo",
            build_root.path,
            "--max-parallel",
            str(field_set.max_parallel.value),
            *store_args(rlaunch),
        ),
        extra_env=runtime_env(build_root),
    )


def rules():  # type: ignore[no-untyped-def]
    return [*collect_rules(), *RlSweepRunFieldSet.rules()]
