"""A run's export as an input: recorded in the store as an artifact, not built.

The upstream run wrote its export under `{store}/{run}/{version}/export/` when it finished, and
its terminal manifest names the model in it (`export_path`): that root for the smoke runtime,
`global_step_N/policy/` of the last step for SkyRL 0.3.0, which exports every
`hf_save_interval` steps into `{trainer.export_path}/global_step_N/policy`
(`RayPPOTrainer.save_models`, skyrl/train/trainer.py). The input is exactly that folder. Before
a consumer reads it, the launcher checks in the ledger that the run finished with the
fingerprint the consumer's spec gives it, and writes the export's build record
(`export/_record.json`: identity `run@version`, the export's fingerprint, `payload_folder` when
the model is below the root, and every file of that folder with its sha256). The record stays
at the root, where the launch YAML names the input (rendered, and packaged, before the run has
finished and its last step is known); nothing is copied or moved in the store. From then on the
export is read, verified and staged like any built artifact, from that folder only. A dev run
that finished again since is recorded again; a calendar run runs once, so its record never
changes. On an object store the export is hashed where it is, once, and copied into the local
cache for local readers.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlaunch import __version__
from rlaunch.atomic import write_text_atomically
from rlaunch.builders.base import RUN_EXPORT_BUILDER, BuildError, Log
from rlaunch.clock import utc_now
from rlaunch.ledger import Ledger, LedgerError, last_attempt
from rlaunch.ledger.smoke import read_terminal_manifest
from rlaunch.ledger.stages import stage_state
from rlaunch.paths import join, run_paths
from rlaunch.runtimes.trained_from import export_content, files_content
from rlaunch.spec import RunSpec
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
from rlaunch.store.fs import StoreLocation, local_cache_dir, open_location
from rlaunch.store.records import FileEntry, parse_record, verify_local, verify_sizes


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
    """The export's record and a local folder with its files, and whether the record was
    written now. Call under the export's store lock. On an object store the export is hashed
    where it is (streamed once, when it is first recorded) and copied into the local cache."""
    ident = identity(export)
    problem = not_finished(export, store)
    if problem is not None:
        raise BuildError(
            f"{ident} is the export of run {ident}, which has not finished: {problem}; "
            f"{finishing_hint(export)}"
        )
    uri = run_paths(store.prefix, export.name, export.version).export_root
    location = open_location(uri, "run export")
    folder, payload_uri = _model_location(store.prefix, export)
    payload = open_location(payload_uri, "run export")
    content_fp = fingerprint(export)
    attempt = _last_attempt_id(store.prefix, export)
    existing = _read_record(location)
    previous = None
    if existing is not None and (existing.payload_folder or "") != folder:
        log(f"{ident}: {uri}/{RECORD_FILE} lists the files of "
            f"{existing.payload_folder or 'the whole export root'}, the "
            f"run's terminal manifest names {folder or 'the export root'} as its model; "
            f"recording it again")
        previous, existing = existing, None
    if existing is not None:
        try:
            if existing.fingerprint != content_fp:
                raise StoreError(f"{uri}/{RECORD_FILE} records fingerprint "
                                 f"{existing.fingerprint}, this spec gives {content_fp}")
            if is_dev(export.version) and existing.provenance.run_attempt != attempt:
                # Sizes alone cannot tell a relaunch's export on an object store: the same
                # model writes files of the same sizes.
                raise StoreError(f"{uri}/{RECORD_FILE} records the export of attempt "
                                 f"{existing.provenance.run_attempt}, the run's last attempt "
                                 f"is {attempt}")
            _verify(payload, payload_uri, existing)
            return existing, _local_copy(store, payload, existing, log), False
        except StoreError as err:
            if not is_dev(export.version):
                raise BuildError(
                    f"the export of {ident} changed after it was recorded: {err}. A calendar "
                    f"run runs once and its export is immutable: restore it, or relaunch the "
                    f"run under a new version"
                ) from None
            log(f"{ident}: the dev run finished again since its export was recorded; "
                f"recording it again")
    started = time.perf_counter()
    files = _scan(payload)
    if not files:
        raise BuildError(f"run {ident} finished but wrote no export at {payload_uri}; its "
                         f"checkpoint policy must set export_final")
    if previous is not None and not is_dev(export.version):
        _same_files(ident, previous, folder, files)
    record = ArtifactRecord(
        schema_version=1, identity=ident, name=export.name, version=export.version,
        fingerprint=content_fp, kind="model", type="run_export", deps={},
        config=run_export_content(export),
        provenance=Provenance(
            builder=RUN_EXPORT_BUILDER, builder_class=f"{__name__}:record_run_export",
            rlaunch_version=__version__, launcher_commit=None, built_at=utc_now(),
            build_seconds=round(time.perf_counter() - started, 3), run_attempt=attempt),
        files=files, payload_folder=folder or None,
    )
    if location.is_local:
        write_text_atomically(join(location.root, RECORD_FILE), record.to_json())
    else:
        location.fs.pipe_file(join(location.root, RECORD_FILE), record.to_json().encode())
    log(f"recorded the export of {ident} as an input ({len(files)} file(s), "
        f"{record.total_bytes} bytes{f' in {folder}' if folder else ''})")
    return record, _local_copy(store, payload, record, log), True


def exported_folder(prefix: str, export: RunExport) -> str:
    """The folder of the model the run's terminal manifest names (`export_path`), relative to
    the run's export root: "" for the root itself (the smoke runtime's export, an eval's
    report), `global_step_N/policy` for SkyRL 0.3.0. A manifest that names no folder, or one
    outside the export root, is refused: it was not written by an rlaunch runtime."""
    paths = run_paths(prefix, export.name, export.version)
    manifest = read_terminal_manifest(prefix, export.name, export.version) or {}
    named = manifest.get("export_path")
    fix = (f"it was not written by an rlaunch runtime of this run: launch "
           f"{identity(export)} again")
    if not isinstance(named, str) or not named:
        raise BuildError(f"the terminal manifest {paths.terminal_manifest} of "
                         f"{identity(export)} names no export_path (the folder of the model "
                         f"it exported); {fix}")
    root = open_location(paths.export_root, "run export").prefix.rstrip("/")
    found = open_location(named, "terminal manifest export_path").prefix.rstrip("/")
    relative = found[len(root) + 1:] if found.startswith(root + "/") else None
    if found == root:
        return ""
    if relative is None or any(part in ("", ".", "..") for part in relative.split("/")):
        raise BuildError(f"the terminal manifest {paths.terminal_manifest} of "
                         f"{identity(export)} names export_path {named}, which is not in the "
                         f"run's export folder {paths.export_root}; {fix}")
    return relative


def _model_location(prefix: str, export: RunExport) -> tuple[str, str]:
    """The exported model's folder (`exported_folder`) and its URI in the store."""
    folder = exported_folder(prefix, export)
    root = run_paths(prefix, export.name, export.version).export_root
    return folder, join(root, folder) if folder else root


def _same_files(ident: str, previous: ArtifactRecord, folder: str,
                files: list[FileEntry]) -> None:
    """A calendar export recorded before as another folder (a record of the whole root, from
    before rlaunch recorded the manifest's folder) is recorded again only if that record
    listed the same files there: a calendar run's export is immutable."""
    before = previous.payload_folder
    prefix = "" if before is None else before + "/"
    inner = f"{folder}/" if folder else ""
    listed = [FileEntry(path=f"{prefix}{entry.path}"[len(inner):], size=entry.size,
                        sha256=entry.sha256) for entry in previous.files
              if f"{prefix}{entry.path}".startswith(inner)]
    if listed != files:
        raise BuildError(
            f"the export of {ident} changed after it was recorded: its record lists other "
            f"files in {folder or 'the export root'} than the store holds now. A calendar run "
            f"runs once and its export is immutable: restore it, or relaunch the run under a "
            f"new version"
        )


def _last_attempt_id(prefix: str, export: RunExport) -> str | None:
    attempt = last_attempt(Ledger(prefix).read(export.name, export.version)) or {}
    found = attempt.get("attempt_id")
    return found if isinstance(found, str) else None


def consumed_exports(spec: RunSpec, prefix: str) -> dict[str, dict[str, Any]]:
    """What a launch of `spec` reads of other runs, for its ledger attempt (`run_exports`): per
    run whose export it reads (identity), the export's content as its record in the store
    gives it (written or checked by the materialization just before) and the attempt of that
    run which wrote it."""
    consumed: dict[str, dict[str, Any]] = {}
    for _, export in spec.run_exports():
        uri = run_paths(prefix, export.name, export.version).export_root
        record = _read_record(open_location(uri, "run export"))
        if record is None:
            raise BuildError(f"{uri}/{RECORD_FILE} is missing: the export of {identity(export)} "
                             f"was not recorded as an input; launch again to record it")
        consumed[identity(export)] = {"content": export_content(record),
                                      "attempt_id": _last_attempt_id(prefix, export)}
    return consumed


def export_content_now(prefix: str, export: RunExport, consumed: Mapping[str, Any]) -> str | None:
    """The content of the export in the store now, for a stage that read `consumed` (its
    `run_exports` entry). Only the run's attempts write its export: while its last attempt is
    the one that wrote what the stage read, that is the content, and nothing is hashed. Else the
    files are hashed (through the digest cache on a local store); None when there are none."""
    if consumed.get("attempt_id") and _last_attempt_id(prefix, export) == consumed["attempt_id"]:
        return str(consumed.get("content"))
    if read_terminal_manifest(prefix, export.name, export.version) is None:
        return None
    files = _scan(open_location(_model_location(prefix, export)[1], "run export"))
    return files_content(files) if files else None


def _read_record(location: StoreLocation) -> ArtifactRecord | None:
    path = join(location.root, RECORD_FILE)
    try:
        text = location.fs.cat_file(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise BuildError(f"{path} cannot be read ({err}); delete it to record the export "
                         f"again") from None
    return parse_record(text, path)


def _listing(location: StoreLocation) -> dict[str, int]:
    base = location.root.rstrip("/") + "/"
    try:
        found = location.fs.find(location.root, detail=True)
    except FileNotFoundError:
        return {}
    return {path[len(base):]: int(info.get("size") or 0) for path, info in found.items()
            if path.startswith(base) and info.get("type") != "directory"
            and path[len(base):] != RECORD_FILE}


def _scan(location: StoreLocation) -> list[FileEntry]:
    """Every file of the export with its sha256 (a local folder through the digest cache)."""
    if location.is_local:
        return scan_payload(Path(location.root)) if Path(location.root).is_dir() else []
    entries = []
    for relative, size in sorted(_listing(location).items(), key=lambda i: i[0].encode()):
        digest = hashlib.sha256()
        with location.fs.open(join(location.root, relative), "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
        entries.append(FileEntry(path=relative, size=size, sha256=digest.hexdigest()))
    return entries


def _verify(location: StoreLocation, uri: str, record: ArtifactRecord) -> None:
    if location.is_local:
        verify_local(Path(location.root), record)
    else:
        verify_sizes(_listing(location), uri, record)


def _local_copy(store: ArtifactStore, location: StoreLocation, record: ArtifactRecord,
                log: Log) -> Path:
    """The export's model folder (`location`) itself on a local store; else a copy of its
    files in the local cache, checked against the record's sha256 (downloaded again when it
    does not match)."""
    if location.is_local:
        return Path(location.root)
    folder = local_cache_dir(store.prefix) / record.name / record.version / "export"
    try:
        verify_local(folder, record)
        return folder
    except StoreError:
        pass
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for entry in record.files:
        target = folder.joinpath(*entry.path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        location.fs.get_file(join(location.root, entry.path), str(target))
    verify_local(folder, record, where=record.identity)
    log(f"{record.identity}: downloaded its export into {folder}")
    return folder
