"""`python -m rlaunch ...` as a Pants Process on the project runtime.

The interpreter lives outside the sandbox, so it is not part of the cache key by itself: the
runtime lock (3rdparty/requirements.lock) goes into the inputs beside the library sources, and a
changed lock or library re-runs every check.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional

from pants.engine.env_vars import EnvironmentVars, EnvironmentVarsRequest
from pants.engine.fs import (
    Digest,
    GlobExpansionConjunction,
    GlobMatchErrorBehavior,
    PathGlobs,
    Snapshot,
)
from pants.engine.process import Process, ProcessCacheScope
from pants.engine.rules import Get, collect_rules, rule
from pants.util.frozendict import FrozenDict
from pants.util.logging import LogLevel

from rlaunch_pants.subsystem import RlaunchSubsystem

LIBRARY_GLOBS = ("src/rlaunch/**/*.py", "3rdparty/requirements.lock")
# Where the library finds the user's cache (rlaunch.paths.rlaunch_cache): preflight's modules
# compiled by scripts/compile are there (rlaunch.compiled). A sandbox has neither variable, so
# with a cache of their own users ran the pure modules under `./pants check` and `plans`. Given
# as the user has them, and so part of the cache key.
CACHE_ENV = ("XDG_CACHE_HOME", "HOME")
# The library is mounted read-only under this directory of every sandbox.
LIBRARY_DIR = "__rlaunch_library"


@dataclass(frozen=True)
class RlaunchLibrary:
    """The library sources and the runtime lock, as a digest."""

    digest: Digest


@rule(desc="Snapshotting the rlaunch library", level=LogLevel.DEBUG)
async def rlaunch_library() -> RlaunchLibrary:
    snapshot = await Get(
        Snapshot,
        PathGlobs(
            LIBRARY_GLOBS,
            glob_match_error_behavior=GlobMatchErrorBehavior.error,
            conjunction=GlobExpansionConjunction.all_match,
            description_of_origin=(
                "the rlaunch backend, which runs the library from the repository's src/ on the "
                "project runtime"
            ),
        ),
    )
    return RlaunchLibrary(snapshot.digest)


@dataclass(frozen=True)
class RlaunchProcess:
    """`python -m rlaunch <args>` in a sandbox holding `input_digest` and the library."""

    args: tuple[str, ...]
    description: str
    input_digest: Digest
    output_files: tuple[str, ...] = ()
    env: FrozenDict[str, str] = field(default_factory=FrozenDict)
    cache_scope: ProcessCacheScope = ProcessCacheScope.SUCCESSFUL
    level: LogLevel = LogLevel.DEBUG


def library_env(pythonpath: str, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
    return {
        "PYTHONPATH": pythonpath,
        # Bytecode written into a sandbox is lost anyway; into the repo's src it is noise.
        "PYTHONDONTWRITEBYTECODE": "1",
        # The user's site-packages must not shadow the runtime's pinned packages.
        "PYTHONNOUSERSITE": "1",
        **(extra or {}),
    }


@rule
async def rlaunch_process(
    request: RlaunchProcess, rlaunch: RlaunchSubsystem, library: RlaunchLibrary
) -> Process:
    found = await Get(EnvironmentVars, EnvironmentVarsRequest(CACHE_ENV))
    cache = {name: value for name, value in found.items() if value}
    return Process(
        argv=(rlaunch.runtime_python(), "-m", "rlaunch", *request.args),
        description=request.description,
        level=request.level,
        input_digest=request.input_digest,
        immutable_input_digests={LIBRARY_DIR: library.digest},
        env=library_env(os.path.join(LIBRARY_DIR, "src"), {**cache, **request.env}),
        output_files=request.output_files,
        cache_scope=request.cache_scope,
    )


def rules():  # type: ignore[no-untyped-def]
    return collect_rules()
