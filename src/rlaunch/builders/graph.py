"""Materialize an artifact graph bottom-up: each identity built once, reused when up to date.

    built, same fingerprint           -> reused ("up to date"), after verifying its files
    calendar version, other content   -> refused: "bump the version"
    dev / <label>-dev                 -> rebuilt, once per build invocation
    not built (no record)             -> built

Each node is decided and built under its identity's lock, so two processes building the same
identity build it once: the second waits and then finds it up to date.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rlaunch import __version__
from rlaunch.builders.base import (
    RUN_EXPORT_BUILDER,
    AnyArtifact,
    BuildError,
    Built,
    Log,
    builder_name,
    load_builder,
)
from rlaunch.builders.run_export import record_run_export
from rlaunch.builders.rules import graph_order, graph_problems, is_dev, short, version_class
from rlaunch.clock import utc_now
from rlaunch.paths import resolve_store_prefix, run_paths
from rlaunch.progress import progress
from rlaunch.spec.artifacts import BuiltArtifact, RunExport, fingerprint, identity
from rlaunch.spec.run import RunSpec
from rlaunch.store import (
    RECORD_FILE,
    ArtifactRecord,
    ArtifactStore,
    DepRef,
    Provenance,
    StoreError,
    own_fingerprint,
    scan_payload,
)
from rlaunch.store.provenance import launcher_commit

_CONTENT_EXCLUDED = {"name", "version", "deps"}


@dataclass(frozen=True)
class NodeResult:
    """What happened to one artifact of the graph."""

    identity: str
    fingerprint: str
    builder: str
    action: Literal["built", "reused"]
    uri: str
    """`{prefix}/{name}/{version}` in the store."""
    local_path: Path
    """A local folder with the payload (the store folder, or a verified local copy)."""
    seconds: float
    record: ArtifactRecord


@dataclass(frozen=True)
class BuildResult:
    """The requested artifact and every node of its graph, dependencies first."""

    identity: str
    fingerprint: str
    uri: str
    local_path: Path
    record: ArtifactRecord
    nodes: tuple[NodeResult, ...]

    @property
    def built(self) -> list[str]:
        return [node.identity for node in self.nodes if node.action == "built"]

    @property
    def reused(self) -> list[str]:
        return [node.identity for node in self.nodes if node.action == "reused"]


def _print(message: str) -> None:
    print(message, flush=True)


def _next_version(version: str) -> str:
    parts = version.split(".")
    if len(parts) == 4:
        return ".".join([*parts[:3], str(int(parts[3]) + 1)])
    return f"{version}.1"


class BuildSession:
    """One build invocation over one store: each identity is materialized at most once, so a
    dev node shared by several dependents is built once, not once per dependent."""

    def __init__(
        self, store: ArtifactStore, *, force: bool = False, verify: bool = False,
        log: Log = _print,
    ) -> None:
        self.store = store
        self.force = force
        self.verify = verify
        self.log = log
        self._done: dict[str, NodeResult] = {}
        self._commit: str | None | Literal[False] = False

    def check(self, roots: Iterable[tuple[str, AnyArtifact]]) -> None:
        """Refuse the whole build, before any work, if a graph breaks a rule."""
        problems = graph_problems(roots)
        if problems:
            listed = "\n".join(f"  - {problem}" for problem in problems)
            raise BuildError(f"the artifact graph breaks {len(problems)} rule(s):\n{listed}")

    def node(self, artifact: AnyArtifact) -> NodeResult:
        ident = identity(artifact)
        done = self._done.get(ident)
        if done is not None:
            return done
        deps: dict[str, NodeResult] = {}
        if isinstance(artifact, BuiltArtifact):
            deps = {slot: self.node(dep) for slot, dep in sorted(artifact.deps.items())}
        started = time.perf_counter()
        content_fp = fingerprint(artifact)

        def waiting() -> None:
            self.log(f"{ident}: waiting for another process that is building it")

        with self.store.lock(artifact.name, artifact.version, on_wait=waiting):
            if isinstance(artifact, RunExport):
                result = self._run_export(artifact, content_fp, started)
            else:
                result = self._reuse(artifact, content_fp, started)
                if result is None:
                    result = self._build(artifact, content_fp, deps, started)
        self._done[ident] = result
        return result

    def results(self, artifact: AnyArtifact) -> tuple[NodeResult, ...]:
        """The results of an artifact's graph built in this session, dependencies first."""
        return tuple(self._done[identity(node)] for node in graph_order([artifact]))

    def _run_export(self, export: RunExport, content_fp: str, started: float) -> NodeResult:
        record, folder, written = record_run_export(self.store, export, self.log)
        result = NodeResult(
            identity=identity(export), fingerprint=content_fp, builder=RUN_EXPORT_BUILDER,
            action="built" if written else "reused",
            uri=run_paths(self.store.prefix, export.name, export.version).export_root,
            local_path=folder, seconds=time.perf_counter() - started, record=record,
        )
        if not written:
            self.log(f"{result.identity} (a run's export) up to date ({short(content_fp)}), "
                     f"{len(record.files)} file(s) verified in {result.seconds:.2f}s")
        return result

    def _reuse(self, artifact: AnyArtifact, content_fp: str, started: float) -> NodeResult | None:
        ident = identity(artifact)
        if is_dev(artifact.version):
            return None
        existing = self.store.read_record(artifact.name, artifact.version, verify=False)
        if existing is None:
            return None
        if (own := own_fingerprint(existing)) is not None:
            root = self.store.uri(artifact.name, artifact.version)
            same = (f"the fingerprint of this spec too: restore it, or delete {root} and build "
                    f"again" if own == content_fp else
                    f"and this spec gives {content_fp}: delete {root} and build again")
            raise BuildError(
                f"{root}/{RECORD_FILE} was edited by hand or damaged: it records {ident} with "
                f"fingerprint {existing.fingerprint}, but its own config and deps give {own}, "
                f"{same}"
            )
        if existing.fingerprint != content_fp:
            raise BuildError(
                f"{ident} is already built with fingerprint {existing.fingerprint} (at "
                f"{self.store.uri(artifact.name, artifact.version)}, built "
                f"{existing.provenance.built_at}), but this spec gives it {content_fp}. "
                f"A calendar version is immutable: bump the version (e.g. "
                f"{_next_version(artifact.version)}), or use a dev version while iterating"
            )
        if self.force:
            return None
        self._clean_leftovers(artifact)
        self.store.verify(existing, full=self.verify)
        result = NodeResult(
            identity=ident,
            fingerprint=content_fp,
            builder=existing.provenance.builder,
            action="reused",
            uri=self.store.uri(artifact.name, artifact.version),
            local_path=self.store.local_path(existing, full=self.verify, log=self.log),
            seconds=time.perf_counter() - started,
            record=existing,
        )
        self.log(
            f"{ident} up to date ({short(content_fp)}), {len(existing.files)} file(s) verified "
            f"in {result.seconds:.2f}s"
        )
        return result

    def _clean_leftovers(self, artifact: AnyArtifact) -> None:
        """Remove what interrupted builds of this identity left (call under its build lock:
        every staging folder is made under it, so none of them is being written)."""
        for leftover in self.store.clean_leftovers(artifact.name, artifact.version):
            self.log(f"{identity(artifact)}: removed {leftover} (left by an interrupted build)")

    def _build(
        self,
        artifact: AnyArtifact,
        content_fp: str,
        deps: dict[str, NodeResult],
        started: float,
    ) -> NodeResult:
        ident = identity(artifact)
        name = builder_name(artifact)
        builder, target = load_builder(name)
        self._clean_leftovers(artifact)
        inputs = ", ".join(f"{slot}={dep.identity}" for slot, dep in deps.items())
        self.log(f"building {ident} with {name}..." + (f" (deps: {inputs})" if inputs else ""))
        staging = self.store.new_staging(artifact.name, artifact.version)
        try:
            try:
                with progress(f"building {ident}"):
                    outcome = builder.build(
                        artifact, {slot: dep.local_path for slot, dep in deps.items()}, staging,
                        self.log,
                    )
            except (BuildError, StoreError):
                raise
            except Exception as err:
                raise BuildError(
                    f"building {ident} with {name} failed: {type(err).__name__}: {err}"
                ) from err
            rows = outcome.rows if isinstance(outcome, Built) else None
            record = self._record(
                artifact, content_fp, name, target, deps, staging, started, rows
            )
            self.store.publish(staging, record, log=self.log)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        result = NodeResult(
            identity=ident,
            fingerprint=content_fp,
            builder=name,
            action="built",
            uri=self.store.uri(artifact.name, artifact.version),
            local_path=self.store.local_path(record, log=self.log),
            seconds=time.perf_counter() - started,
            record=record,
        )
        self.log(
            f"built {ident} in {result.seconds:.2f}s ({short(content_fp)}), "
            f"{len(record.files)} file(s), {record.total_bytes} bytes"
        )
        return result

    def _record(
        self,
        artifact: AnyArtifact,
        content_fp: str,
        name: str,
        target: str,
        deps: dict[str, NodeResult],
        staging: Path,
        started: float,
        rows: int | None,
    ) -> ArtifactRecord:
        ident = identity(artifact)
        if (staging / RECORD_FILE).exists():
            raise BuildError(
                f"builder {name!r} wrote {RECORD_FILE} into the payload of {ident}; that name is "
                f"reserved for the store's build record"
            )
        files = scan_payload(staging)
        if not files:
            raise BuildError(f"builder {name!r} wrote no files for {ident}")
        if self._commit is False:
            self._commit = launcher_commit()
        return ArtifactRecord(
            schema_version=1,
            identity=ident,
            name=artifact.name,
            version=artifact.version,
            fingerprint=content_fp,
            kind=artifact.kind,
            type=artifact.type,
            deps={
                slot: DepRef(identity=dep.identity, fingerprint=dep.fingerprint)
                for slot, dep in deps.items()
            },
            config=artifact.model_dump(mode="json", exclude=_CONTENT_EXCLUDED),
            provenance=Provenance(
                builder=name,
                builder_class=target,
                rlaunch_version=__version__,
                launcher_commit=self._commit,
                built_at=utc_now(),
                build_seconds=round(time.perf_counter() - started, 3),
            ),
            files=files,
            rows=rows,
        )


def _open(store: ArtifactStore | str | None) -> ArtifactStore:
    return store if isinstance(store, ArtifactStore) else ArtifactStore(store)


def build_artifact(
    artifact: AnyArtifact,
    store: ArtifactStore | str | None = None,
    *,
    force: bool = False,
    verify: bool = False,
    log: Log = _print,
) -> BuildResult:
    """Build (or reuse) `artifact` and its whole dependency graph, dependencies first.

    `store`: an ArtifactStore, a prefix, or None for `rlaunch.paths.default_store_prefix()`.
    `force`: rebuild every node even when up to date (a calendar version still may not change
    content). `verify`: hash every file of a reused artifact instead of trusting the digest
    cache for unchanged files. Raises BuildError when a rule refuses or a builder fails."""
    session = BuildSession(_open(store), force=force, verify=verify, log=log)
    session.check([(artifact.name, artifact)])
    started = time.perf_counter()
    top = session.node(artifact)
    nodes = session.results(artifact)
    built = sum(node.action == "built" for node in nodes)
    log(
        f"{top.identity}: {built} built, {len(nodes) - built} up to date, "
        f"{time.perf_counter() - started:.2f}s"
    )
    return BuildResult(
        identity=top.identity,
        fingerprint=top.fingerprint,
        uri=top.uri,
        local_path=top.local_path,
        record=top.record,
        nodes=nodes,
    )


def materialize_artifacts(
    artifacts: dict[str, AnyArtifact],
    store: ArtifactStore | str | None = None,
    *,
    force: bool = False,
    verify: bool = False,
    log: Log = _print,
) -> dict[str, Path]:
    """Build or reuse every artifact of `slot -> artifact`; the local path of each slot."""
    session = BuildSession(_open(store), force=force, verify=verify, log=log)
    session.check(artifacts.items())
    return {slot: session.node(artifact).local_path for slot, artifact in artifacts.items()}


def materialize(
    spec: RunSpec,
    store: ArtifactStore | str | None = None,
    *,
    force: bool = False,
    verify: bool = False,
    log: Log = _print,
) -> dict[str, Path]:
    """Build or reuse every artifact a run reads; `slot -> local path` (model, tokenizer,
    train_data, ...). The store defaults to the run's `execution.store_prefix`, else the local
    default. Launch jobs call this before the runtime starts, locally and on a cluster alike."""
    chosen = store if isinstance(store, ArtifactStore) else resolve_store_prefix(
        store, spec.execution.store_prefix
    )
    return materialize_artifacts(spec.slots(), chosen, force=force, verify=verify, log=log)


def plan(artifact: AnyArtifact) -> list[tuple[str, str, str]]:
    """`(identity, fingerprint, version class)` of every node, dependencies first, unbuilt."""
    return [
        (identity(node), fingerprint(node), version_class(node.version) or "invalid")
        for node in graph_order([artifact])
    ]
