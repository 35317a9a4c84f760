"""Builders: plugins that materialize artifacts into the store, and the graph that runs them.

`build_artifact(artifact, store)` builds an artifact's whole dependency graph bottom-up, each
identity once, reusing what is up to date; `materialize(spec, store)` does it for every artifact
a run reads. Builders are entry points of the group `rlaunch.builders`. See docs/artifacts.md.
"""

from rlaunch.builders.base import (
    AnyArtifact,
    Builder,
    BuildError,
    Built,
    Log,
    builder_name,
    load_builder,
)
from rlaunch.builders.graph import (
    BuildResult,
    BuildSession,
    NodeResult,
    build_artifact,
    materialize,
    materialize_artifacts,
    plan,
)

__all__ = [
    "AnyArtifact", "BuildError", "BuildResult", "Built", "BuildSession", "Builder", "Log",
    "NodeResult",
    "build_artifact", "builder_name", "load_builder", "materialize", "materialize_artifacts",
    "plan",
]
