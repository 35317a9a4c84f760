"""Test-only builders, loaded by `module:Class` name, and artifact factories for the tests.

`CountingBuilder` appends one line per call to the file `config.calls`, so tests count builder
calls even across processes. With `config.hold`, it writes `config.started` and then blocks while
the file `config.hold` exists: the test decides when a build finishes (or kills it).

Run as a script (`python -m <this module> ARTIFACT_JSON STORE`), it builds an artifact in a
separate process, the way two users or a killed build would.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from rlaunch.builders import AnyArtifact, BuildError, Log, build_artifact
from rlaunch.spec.artifacts import Artifact, BuiltArtifact, identity

ADAPTER = TypeAdapter(Artifact)


class CountingBuilder:
    name = "counting"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        if not isinstance(artifact, BuiltArtifact):
            raise BuildError("counting builds built artifacts only")
        config = artifact.config
        inputs = {slot: (path / "payload.txt").read_text() for slot, path in sorted(deps.items())}
        # A partial payload first, so a kill mid-build leaves something behind to clean.
        (out_dir / "payload.txt").write_text(json.dumps({"content": config["content"], **inputs}))
        with open(config["calls"], "a", encoding="utf-8") as handle:
            handle.write(f"{identity(artifact)} {os.getpid()}\n")
        if "hold" in config:
            Path(config["started"]).write_text(str(os.getpid()))
            deadline = time.monotonic() + 120
            while Path(config["hold"]).exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        (out_dir / "done.txt").write_text("done\n")


class FailingBuilder:
    name = "failing"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        (out_dir / "half.txt").write_text("half")
        raise RuntimeError("the builder broke halfway")


class EmptyBuilder:
    name = "empty"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        log("writing nothing")


class NotABuilder:
    pass


def builder_ref(cls: type) -> str:
    return f"{__name__}:{cls.__name__}"


def import_root() -> Path:
    """The sys.path entry this module is imported from (for a subprocess's PYTHONPATH)."""
    return Path(__file__).resolve().parents[len(__name__.split(".")) - 1]


def node(
    name: str,
    calls: Path,
    *,
    version: str = "2026.01.01",
    content: str = "v1",
    deps: dict[str, dict[str, Any]] | None = None,
    kind: str = "dataset",
    builder: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A built artifact (public format) made by CountingBuilder unless `builder` says else."""
    return {
        "type": "built",
        "name": name,
        "version": version,
        "kind": kind,
        "builder": builder or builder_ref(CountingBuilder),
        "config": {"calls": str(calls), "content": content, **extra},
        "deps": deps or {},
        "facts": None,
        "rows": None,
    }


def parse(data: dict[str, Any]) -> AnyArtifact:
    return ADAPTER.validate_python(data)


def calls_of(calls: Path) -> list[str]:
    """The identities built, one per builder call, in order."""
    if not calls.exists():
        return []
    return [line.split()[0] for line in calls.read_text().splitlines()]


if __name__ == "__main__":
    artifact = parse(json.loads(Path(sys.argv[1]).read_text()))
    try:
        build_artifact(artifact, sys.argv[2], force=sys.argv[3:] == ["--force"])
    except BuildError as err:
        print(f"error: {err}", flush=True)
        raise SystemExit(1) from None
