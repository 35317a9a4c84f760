"""The build record `_record.json`: what an artifact is, what it was built from, and its files.

The record is written last. A payload without a record is not built; a record whose files are
missing, resized or changed is corrupt, and reading it says which file.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from stat import S_ISREG
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from rlaunch.fingerprints import fingerprint_of
from rlaunch.paths import join
from rlaunch.store.digests import DigestCache, sha256_of
from rlaunch.store.fs import StoreError

RECORD_FILE = "_record.json"
RECORD_SCHEMA_VERSION = 1


class _RecordModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileEntry(_RecordModel):
    path: str
    """POSIX path relative to the artifact root."""
    size: int
    """Bytes."""
    sha256: str
    """Hex digest of the file's bytes (as `sha256sum` prints it)."""


class DepRef(_RecordModel):
    identity: str
    fingerprint: str


class Provenance(_RecordModel):
    builder: str
    """Builder name as the spec gives it (`sft_model`, `hf_snapshot`, `pkg.mod:Class`)."""
    builder_class: str
    """`module:Class` that ran."""
    rlaunch_version: str
    launcher_commit: str | None
    """Git commit of the launching checkout; null outside a git checkout."""
    built_at: str
    """UTC time the payload was published, ISO 8601 with a `Z`."""
    build_seconds: float
    run_attempt: str | None = None
    """A run export's record only: the run's attempt that wrote the export (the ledger's last
    attempt when it was recorded)."""


class ArtifactRecord(_RecordModel):
    schema_version: Literal[1]
    identity: str
    name: str
    version: str
    fingerprint: str
    kind: str
    type: str
    deps: dict[str, DepRef]
    config: dict[str, Any]
    """The artifact's content as fingerprinted: its spec without name, version and deps."""
    provenance: Provenance
    files: list[FileEntry]
    rows: int | None = None
    """Rows of a dataset as its builder counted them in the payload; null when not counted."""
    payload_folder: str | None = None
    """A run export's record only: the folder, under the record's own, that holds `files` in
    the store (the model the run's terminal manifest names: `global_step_8/policy` for SkyRL
    0.3.0); absent when the files are beside the record. Copies of the payload (the local
    cache, a node cache) hold the files at their root."""

    def to_json(self) -> str:
        document = self.model_dump(mode="json")
        if document["payload_folder"] is None:  # every other record reads as it always did
            del document["payload_folder"]
        return json.dumps(document, indent=2, sort_keys=True) + "\n"

    def payload_uri(self, root: str) -> str:
        """Where the files are in the store, for the record written at `root`."""
        return root if self.payload_folder is None else join(root, self.payload_folder)

    @property
    def total_bytes(self) -> int:
        return sum(entry.size for entry in self.files)


def own_fingerprint(record: ArtifactRecord) -> str | None:
    """The fingerprint the record's own `config` and `deps` give (as
    `rlaunch.spec.artifacts.fingerprint` computes it when building), or None when the recorded
    fingerprint is one of them. A non-None answer means the record was edited by hand or
    damaged after it was written; a record whose fingerprint and config were edited together
    consistently cannot be told from one built from other content."""
    deps = {slot: {"identity": dep.identity, "fingerprint": dep.fingerprint}
            for slot, dep in record.deps.items()}
    with_deps = fingerprint_of({**record.config, "deps": deps})
    candidates = [with_deps]
    if not deps:  # a hub or adopted artifact fingerprints no deps key at all
        candidates.append(fingerprint_of(record.config))
    if record.fingerprint in candidates:
        return None
    return with_deps if deps or "builder" in record.config else candidates[-1]


def edited_record(record_path: str, record: ArtifactRecord, own: str) -> str:
    """What a reader of a record says when `own_fingerprint(record)` is `own` (not None)."""
    return (
        f"{record_path} was edited by hand or damaged: it records {record.identity} with "
        f"fingerprint {record.fingerprint}, but its own config and deps give {own}; restore "
        f"it, or delete the artifact's folder and build it again"
    )


def parse_record(text: str, where: str) -> ArtifactRecord:
    try:
        return ArtifactRecord.model_validate_json(text)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "<top level>"
        raise StoreError(
            f"{where}: not a valid build record ({field}: {first['msg']}); delete the artifact "
            f"folder and build it again"
        ) from None


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file's bytes, read in full (no cache)."""
    return sha256_of(path)[0]


def scan_payload(root: Path) -> list[FileEntry]:
    """Every regular file under `root` (the record itself excluded), sorted by path. Digests
    come from the digest cache when a file is unchanged since it was last hashed, and are
    remembered for the next read."""
    cache = DigestCache(root)
    entries: list[FileEntry] = []
    for directory, subdirs, files in os.walk(root):
        subdirs.sort()
        for filename in files:
            path = Path(directory, filename)
            relative = path.relative_to(root).as_posix()
            if relative == RECORD_FILE:
                continue
            stat = path.stat()
            entries.append(FileEntry(
                path=relative, size=stat.st_size, sha256=cache.sha256(relative, stat=stat)
            ))
    cache.save()
    return sorted(entries, key=lambda entry: entry.path.encode())


def manifest_sha256(entries: list[FileEntry]) -> str:
    """Hex sha256 of a directory: the digest of its `sha256sum`-style manifest.

    The manifest has one line `<hex>  <relative/posix/path>\\n` per regular file, sorted by the
    path's UTF-8 bytes. Equivalent shell: `cd DIR && find . -type f -printf '%P\\0' |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum`."""
    lines = "".join(f"{entry.sha256}  {entry.path}\n" for entry in entries)
    return hashlib.sha256(lines.encode()).hexdigest()


def directory_sha256(root: Path) -> str:
    return manifest_sha256(scan_payload(root))


def verify_local(
    root: Path, record: ArtifactRecord, *, where: str | None = None, full: bool = False
) -> None:
    """Raise a StoreError naming every file under `root` that is missing, resized or changed
    (`where` names the place in the message when `root` is a local copy of it).

    A file whose identity (device, inode, size, mtime, ctime) is unchanged since it was last
    hashed is not read again (`rlaunch.store.digests`); `full` hashes every file regardless."""
    cache = DigestCache(root)
    problems: list[str] = []
    for entry in record.files:
        try:
            stat = os.stat(f"{root}/{entry.path}")
        except (FileNotFoundError, NotADirectoryError):
            stat = None
        if stat is None or not S_ISREG(stat.st_mode):
            problems.append(f"{entry.path}: missing")
            continue
        if stat.st_size != entry.size:
            problems.append(f"{entry.path}: {stat.st_size} bytes, the record says {entry.size}")
        elif (actual := cache.sha256(entry.path, full=full, stat=stat)) != entry.sha256:
            problems.append(f"{entry.path}: sha256 {actual[:16]}..., the record says "
                            f"{entry.sha256[:16]}...")
    cache.save()
    if problems:
        raise StoreError(_corrupt(record, where or str(root), problems))


def verify_sizes(listing: dict[str, int], root: str, record: ArtifactRecord) -> None:
    """Like `verify_local` for an object store, from a listing `relative path -> size`."""
    problems = []
    for entry in record.files:
        size = listing.get(entry.path)
        if size is None:
            problems.append(f"{entry.path}: missing")
        elif size != entry.size:
            problems.append(f"{entry.path}: {size} bytes, the record says {entry.size}")
    if problems:
        raise StoreError(_corrupt(record, root, problems))


def _corrupt(record: ArtifactRecord, root: str, problems: list[str]) -> str:
    listed = "; ".join(problems)
    return (
        f"{record.identity} at {root} does not match its record ({listed}); the payload changed "
        f"after it was built: rebuild it with `./pants run <its built_artifact target> -- "
        f"--force` (or `rlaunch build FILE --force`)"
    )
