"""What a builder is, and how one is found by name.

A builder is a class with a `name` and a `build` method. It writes the artifact's payload into
a fresh local folder and returns; the store then publishes that folder and writes the record.
Builders are plugins: entry points in the group `rlaunch.builders`, resolved by
`rlaunch.plugins.load`. A `module:Class` name loads a class directly (handy for a project's own
builders before they are packaged, and for tests).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from rlaunch.plugins import BUILDER_GROUP, PluginError, load
from rlaunch.spec.artifacts import (
    AdoptedArtifact,
    AnyArtifact,
    BuiltArtifact,
    HFDataset,
    HFModel,
    RunExport,
)

Log = Callable[[str], None]


_TYPE_TAGS = {
    HFModel: "hf_model", HFDataset: "hf_dataset", AdoptedArtifact: "adopted",
    BuiltArtifact: "built", RunExport: "run_export",
}
RUN_EXPORT_BUILDER = "run_export"
"""Not a builder: a run's export is made by the run; the launcher only records it."""


class BuildError(Exception):
    """A build rule refused, or a builder failed; the message names what and how to fix it."""


@runtime_checkable
class Builder(Protocol):
    name: str

    def build(
        self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log
    ) -> "Built | None":
        """Write the payload of `artifact` into `out_dir` (empty, local, already created).

        `deps` maps each dependency slot to the local folder of its built payload. Raise
        BuildError for a problem the user can fix (a wrong fact, a missing revision). Return
        `Built(rows=...)` to put measured facts into the record, or None."""


def builder_name(artifact: AnyArtifact) -> str:
    """The builder that materializes an artifact: pinned HF repos are snapshots, adopted URIs
    are adopted, and a built artifact names its own builder."""
    if isinstance(artifact, BuiltArtifact):
        return artifact.builder
    if isinstance(artifact, AdoptedArtifact):
        return "adopt"
    if isinstance(artifact, RunExport):
        return RUN_EXPORT_BUILDER
    return "hf_snapshot"


def load_builder(name: str) -> tuple[Builder, str]:
    """An instance of the named builder and the `module:Class` it came from."""
    if ":" in name:
        target = name
        module_name, _, attribute = name.partition(":")
        try:
            cls = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as err:
            raise BuildError(
                f"builder {name!r} cannot be loaded ({err}); a `module:Class` builder must be "
                f"importable on the runtime's path"
            ) from None
    else:
        try:
            cls = load(BUILDER_GROUP, name)
        except PluginError as err:
            raise BuildError(f"{err}; register it as an entry point of {BUILDER_GROUP!r}") from None
        target = f"{cls.__module__}:{cls.__qualname__}"
    builder = cls()
    if not isinstance(builder, Builder):
        raise BuildError(
            f"builder {name!r} ({target}) is not a builder: it needs a `name` attribute and a "
            f"`build(artifact, deps, out_dir, log)` method"
        )
    return builder, target


def expect_type(builder: str, artifact: AnyArtifact, *types: type) -> None:
    """Refuse an artifact of a type the builder does not make."""
    if not isinstance(artifact, types):
        wanted = " or ".join(_TYPE_TAGS[t] for t in types)
        raise BuildError(
            f"{artifact.name}@{artifact.version}: builder {builder!r} builds {wanted} "
            f"artifacts, not {artifact.type!r}"
        )


@dataclass(frozen=True)
class Built:
    """What a builder may return about the payload it wrote; the store's record carries it."""

    rows: int | None = None
    """Rows of a dataset, as counted in the written files (lets BATCH010 know the true rows)."""
