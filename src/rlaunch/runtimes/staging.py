"""Staging: every input of a job copied from the store to node-local disk before SkyRL starts.

Each input (`inputs.<slot>` of the launch YAML: identity, fingerprint, store URI) lands in
`{node cache}/{name}/{version}-{first 16 hex of the fingerprint}/`, verified file by file (size
and sha256)
against its store record. A folder there is complete or absent: files are copied into a staging
folder beside it (many at once, progress by bytes: `rlaunch.store.transfer`) and renamed into
place after they verify, with the record written last. A warm cache (same record, files
unchanged) copies nothing and reads nothing: the digest cache (`rlaunch.store.digests`) knows
the files hashed while staging, and a file whose identity has not changed is only `stat`ed.

The node cache is `$RLAUNCH_NODE_CACHE`, else `${XDG_CACHE_HOME:-~/.cache}/rlaunch/node-cache`.

Imports only what a SkyRL environment has (fsspec, pydantic, filelock; gcsfs/s3fs for object
stores): the adapter runs there.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlaunch.atomic import replace_folder
from rlaunch.paths import join, rlaunch_cache
from rlaunch.store import RECORD_FILE, StoreError
from rlaunch.store.fs import open_location
from rlaunch.store.digests import DigestCache
from rlaunch.store.records import (
    ArtifactRecord,
    edited_record,
    own_fingerprint,
    parse_record,
    verify_local,
)
from rlaunch.store.transfer import FileCopy, download

NODE_CACHE_ENV = "RLAUNCH_NODE_CACHE"
_SPACE_MARGIN_BYTES = 64 * 1024 * 1024
"""Free space kept on the node cache's disk beyond the inputs themselves."""

Say = Callable[[str], None]


class StagingError(Exception):
    """An input cannot be staged: not built, corrupt, the store unreachable, no space."""


@dataclass(frozen=True)
class StageInput:
    slot: str
    identity: str
    fingerprint: str
    uri: str


@dataclass(frozen=True)
class Staged:
    slot: str
    identity: str
    uri: str
    path: str
    bytes_copied: int
    files_copied: int


def node_cache_root() -> Path:
    """The node-local cache folder (a documented setting: `RLAUNCH_NODE_CACHE`)."""
    configured = os.environ.get(NODE_CACHE_ENV)
    if configured:
        return Path(configured).expanduser().resolve()
    return rlaunch_cache() / "node-cache"


def inputs_of(launch_inputs: Mapping[str, Any]) -> list[StageInput]:
    """The launch document's `inputs` section as staging requests, in its order."""
    return [
        StageInput(slot, entry.identity, entry.fingerprint, entry.uri)
        for slot, entry in launch_inputs.items()
    ]


def cached_folder(cache: Path, item: StageInput) -> Path:
    name, _, version = item.identity.partition("@")
    digest = item.fingerprint.split(":")[-1]  # `sha256:<hex>`
    return cache / name / f"{version}-{digest[:16]}"


def read_record(item: StageInput) -> ArtifactRecord:
    """The input's build record in the store, checked to name the identity and fingerprint the
    launch YAML names (a StagingError naming the input and the fix otherwise)."""
    where = f"inputs.{item.slot} ({item.identity})"
    record_uri = join(item.uri, RECORD_FILE)
    try:
        location = open_location(item.uri, what=f"{where} store URI")
        text = location.fs.cat_file(join(location.root, RECORD_FILE)).decode()
    except StoreError as err:
        raise StagingError(str(err)) from None
    except FileNotFoundError:
        raise StagingError(
            f"{where}: {record_uri} does not exist, so the artifact is not built in that store; "
            "build it there first (`rlaunch launch` and `./pants run` build a run's inputs "
            "before they submit; `rlaunch build FILE` builds one)"
        ) from None
    except Exception as err:  # the backends raise their own (botocore, aiohttp, OSError)
        raise StagingError(
            f"{where}: cannot read {record_uri}: the store is unreachable from this node "
            f"({type(err).__name__}: {err}); check the store's address and credentials in the "
            "job's environment"
        ) from None
    try:
        record = parse_record(text, record_uri)
    except StoreError as err:
        raise StagingError(f"{where}: {err}") from None
    if record.fingerprint != item.fingerprint and (own := own_fingerprint(record)) is not None:
        raise StagingError(f"{where}: {edited_record(record_uri, record, own)}")
    if record.identity != item.identity or record.fingerprint != item.fingerprint:
        raise StagingError(
            f"{where}: {record_uri} records {record.identity} with fingerprint "
            f"{record.fingerprint}, but the launch YAML names {item.identity} with fingerprint "
            f"{item.fingerprint}; the store changed since the YAML was rendered: launch again "
            "(a dev input is rebuilt), or bump the input's version if its content changed"
        )
    return record


def _is_warm(folder: Path, record: ArtifactRecord) -> bool:
    record_file = folder / RECORD_FILE
    if not record_file.is_file() or record_file.read_text() != record.to_json():
        return False
    try:
        verify_local(folder, record)
    except StoreError:
        return False
    return True


def _check_space(cache: Path, item: StageInput, record: ArtifactRecord) -> None:
    free = shutil.disk_usage(cache).free
    needed = record.total_bytes + _SPACE_MARGIN_BYTES
    if free < needed:
        raise StagingError(
            f"inputs.{item.slot} ({item.identity}): the node cache {cache} has "
            f"{free / 1e6:.1f} MB free, staging needs {record.total_bytes / 1e6:.1f} MB "
            f"(+{_SPACE_MARGIN_BYTES // 2**20} MiB margin); free space there or point "
            f"{NODE_CACHE_ENV} at a larger local disk"
        )


def _copy(item: StageInput, record: ArtifactRecord, staging: Path, say: Say) -> None:
    """Every file of the record into `staging`, many at once (`rlaunch.store.transfer`): for a
    run's export whose model is below the record (`payload_folder`, SkyRL's
    `global_step_N/policy`), that folder's files, at the staged folder's root."""
    source = record.payload_uri(item.uri)
    location = open_location(source, what=f"inputs.{item.slot} store URI")
    copies = [
        FileCopy(join(location.root, entry.path), str(staging / entry.path), entry.size)
        for entry in record.files
    ]
    try:
        download(location.fs, copies, what=f"staging {item.slot}: {item.identity}", log=say)
    except FileNotFoundError:
        missing = next(
            (entry.path for entry, copy in zip(record.files, copies)
             if not location.fs.exists(copy.source)),
            "a file",
        )
        raise StagingError(
            f"inputs.{item.slot} ({item.identity}): {join(source, missing)} is listed "
            "in its record but missing from the store; rebuild the artifact "
            "(`rlaunch build FILE --force`)"
        ) from None


def stage_input(item: StageInput, cache: Path, say: Say) -> Staged:
    """Stage one input into the cache (or find it there, warm) and return where it is."""
    record = read_record(item)
    folder = cached_folder(cache, item)
    if _is_warm(folder, record):
        say(f"staging {item.slot}: {item.identity} already in {folder} (0 bytes copied)")
        return Staged(item.slot, item.identity, item.uri, str(folder), 0, 0)
    folder.parent.mkdir(parents=True, exist_ok=True)
    _check_space(folder.parent, item, record)
    staging = folder.parent / f".staging-{folder.name}-{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir()
    started = time.monotonic()
    try:
        _copy(item, record, staging, say)
        try:
            verify_local(staging, record, where=f"the copy of {item.uri} in {staging}", full=True)
        except StoreError as err:
            raise StagingError(f"inputs.{item.slot} ({item.identity}): {err}") from None
        (staging / RECORD_FILE).write_text(record.to_json())
        trash = folder.parent / f".trash-{folder.name}-{os.getpid()}-{secrets.token_hex(4)}"
        replace_folder(staging, folder, trash)
        DigestCache.move(staging, folder)  # the digests just computed serve the warm checks
    except OSError as err:
        raise StagingError(
            f"inputs.{item.slot} ({item.identity}): copying into {staging} failed: {err}; "
            f"check the node cache {cache} ({NODE_CACHE_ENV}): space, permissions"
        ) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    seconds = time.monotonic() - started
    size = record.total_bytes
    say(f"staging {item.slot}: {item.identity} copied {len(record.files)} files, "
        f"{size / 1e6:.1f} MB in {seconds:.1f} s -> {folder}")
    return Staged(item.slot, item.identity, item.uri, str(folder), size, len(record.files))


def stage_inputs(items: list[StageInput], cache: Path | None = None,
                 say: Say = print) -> list[Staged]:
    """Stage every input on this node, once per identity (train and eval data often share)."""
    root = cache or node_cache_root()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise StagingError(
            f"the node cache {root} cannot be created ({err}); set {NODE_CACHE_ENV} to a "
            "writable local folder"
        ) from None
    done: dict[str, Staged] = {}
    staged: list[Staged] = []
    for item in items:
        key = f"{item.identity} {item.fingerprint}"
        if key not in done:
            done[key] = stage_input(item, root, say)
            staged.append(done[key])
        else:
            first = done[key]
            staged.append(Staged(item.slot, item.identity, item.uri, first.path, 0, 0))
    return staged


def local_overrides(value: Any, staged: list[Staged]) -> Any:
    """`value` (the launch YAML's skyrl subtree) with every store URI of a staged input, or a
    path under one, replaced by the staged folder."""
    if isinstance(value, dict):
        return {key: local_overrides(item, staged) for key, item in value.items()}
    if isinstance(value, list):
        return [local_overrides(item, staged) for item in value]
    if isinstance(value, str):
        for entry in staged:
            if value == entry.uri:
                return entry.path
            if value.startswith(entry.uri.rstrip("/") + "/"):
                return entry.path + value[len(entry.uri.rstrip("/")):]
    return value


def rewrites(before: dict[str, Any], after: dict[str, Any], prefix: str = "") -> list[str]:
    """`key: old -> new` for every override the staging rewrote (printed into the job log)."""
    lines: list[str] = []
    for key, value in before.items():
        path = f"{prefix}{key}"
        new = after[key]
        if isinstance(value, dict):
            lines.extend(rewrites(value, new, f"{path}."))
        elif value != new:
            lines.append(f"{path}: {value} -> {new}")
    return lines
