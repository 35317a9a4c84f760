"""A run's export as an input: recorded in the store as an artifact, not built.

The upstream run wrote `{store}/{run}/{version}/export/` when it finished. Before a consumer
reads it, the launcher checks in the ledger that the run finished with the fingerprint the
consumer's spec gives it, and writes the export's build record (`export/_record.json`: identity
`run@version`, the export's fingerprint, every file with its sha256). From then on the export
is read, verified and staged like any built artifact. A dev run that finished again since is
recorded again; a calendar run runs once, so its record never changes.
"""

from __future__ import annotations

import time
from pathlib import Path

from rlaunch import __version__
from rlaunch.atomic import write_text_atomically
from rlaunch.builders.base import RUN_EXPORT_BUILDER, BuildError, Log
from rlaunch.clock import utc_now
from rlaunch.ledger import Ledger, LedgerError
from rlaunch.ledger.smoke import read_terminal_manifest
from rlaunch.ledger.stages import stage_state
from rlaunch.paths import run_paths
from rlaunch.spec.artifacts import RunExport, fingerprint, identity, run_export_content
from rlaunch.spec.syntax import is_dev
from rlaunch.store import (
    RECORD_FILE,
    ArtifactRecord,
    ArtifactStore,
    Provenance,
    StoreError,
    scan_payload,
)
from rlaunch.store.records import parse_record, verify_local


def finishing_hint(export: RunExport) -> str:
    """How to finish the upstream run: launch the consumer as a pipeline, or the run alone."""
    return (f"launch it first: `./pants run` of a stage that consumes it launches it before "
            f"the stage (or `rlaunch launch` its spec); `rlaunch show {identity(export)}` shows "
            f"its attempts")


def not_finished(export: RunExport, store: ArtifactStore) -> str | None:
    """Why the export cannot be read yet, or None when its run finished as the spec says."""
    try:
        record = Ledger(store.prefix).read(export.name, export.version)
    except LedgerError as err:
        return f"its ledger record cannot be read: {err}"
    state = stage_state(record, export.run.fingerprint)
    if not state.finished:
        return state.reason
    manifest = read_terminal_manifest(store.prefix, export.name, export.version)
    if manifest is None:
        return (f"{state.reason}, but its terminal manifest "
                f"{run_paths(store.prefix, export.name, export.version).terminal_manifest} is "
                f"missing (the export is complete only when the manifest is written)")
    return None


def record_run_export(store: ArtifactStore, export: RunExport, log: Log) -> tuple[
        ArtifactRecord, Path, bool]:
    """The export's record and local folder, and whether the record was written now. Call
    under the export's store lock."""
    ident = identity(export)
    if not store.is_local:
        raise BuildError(
            f"{ident} is a run's export in {store.prefix}: reading a run's export as an input "
            f"needs a local store for now; launch the pipeline with a local --store"
        )
    problem = not_finished(export, store)
    if problem is not None:
        raise BuildError(
            f"{ident} is the export of run {ident}, which has not finished: {problem}; "
            f"{finishing_hint(export)}"
        )
    folder = Path(run_paths(store.prefix, export.name, export.version).export_root)
    content_fp = fingerprint(export)
    record_path = folder / RECORD_FILE
    if record_path.is_file():
        existing = parse_record(record_path.read_text(encoding="utf-8"), str(record_path))
        try:
            if existing.fingerprint != content_fp:
                raise StoreError(f"{record_path} records fingerprint {existing.fingerprint}, "
                                 f"this spec gives {content_fp}")
            verify_local(folder, existing)
            return existing, folder, False
        except StoreError as err:
            if not is_dev(export.version):
                raise BuildError(
                    f"the export of {ident} changed after it was recorded: {err}. A calendar "
                    f"run runs once and its export is immutable: restore it, or relaunch the "
                    f"run under a new version"
                ) from None
            log(f"{ident}: the dev run finished again since its export was recorded; "
                f"recording it again")
    if not folder.is_dir():
        raise BuildError(f"run {ident} finished but wrote no export at {folder}; its checkpoint "
                         f"policy must set export_final")
    started = time.perf_counter()
    files = scan_payload(folder)
    if not files:
        raise BuildError(f"run {ident} finished but its export {folder} is empty")
    record = ArtifactRecord(
        schema_version=1, identity=ident, name=export.name, version=export.version,
        fingerprint=content_fp, kind="model", type="run_export", deps={},
        config=run_export_content(export),
        provenance=Provenance(
            builder=RUN_EXPORT_BUILDER, builder_class=f"{__name__}:record_run_export",
            rlaunch_version=__version__, launcher_commit=None, built_at=utc_now(),
            build_seconds=round(time.perf_counter() - started, 3)),
        files=files,
    )
    write_text_atomically(record_path, record.to_json())
    log(f"recorded the export of {ident} as an input ({len(files)} file(s), "
        f"{record.total_bytes} bytes)")
    return record, folder, True
