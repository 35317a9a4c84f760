"""The artifact store: `{prefix}/{name}/{version}/` holds a payload and its `_record.json`.

Publishing is crash safe. A build writes into a staging folder, the payload is moved into place
and the record is written last (atomically on a local filesystem; on an object store the record
object is the commit point). Whatever a killed build leaves behind has no record, so it does not
count as built, and the next build or reuse of that identity removes it while holding the
identity's lock.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rlaunch.atomic import replace_folder, write_text_atomically
from rlaunch.locks import exclusive
from rlaunch.paths import artifact_root, default_store_prefix, join
from rlaunch.store.digests import DigestCache
from rlaunch.store.fs import StoreError, local_cache_dir, lock_dir_for_remote, open_location
from rlaunch.store.records import (
    RECORD_FILE,
    ArtifactRecord,
    parse_record,
    verify_local,
    verify_sizes,
)
from rlaunch.store.transfer import FileCopy, Log, download, upload

# Names and versions become path segments; anything else is refused before touching the store.
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
# `.staging-{version}-{pid}-{rand}` and `.trash-{version}-{pid}-{rand}` beside the versions.
_LEFTOVER = re.compile(r"^\.(?P<what>staging|trash)-(?P<version>.+)-(?P<pid>\d+)-[0-9a-f]{8}$")


def _check_segment(what: str, value: str) -> None:
    if not _SEGMENT.match(value):
        raise StoreError(
            f"artifact {what} {value!r} cannot be a store path segment: use letters, digits and "
            f". _ + - only, starting with a letter or digit"
        )


class ArtifactStore:
    """An artifact store at a prefix: a local directory, or a gs://, s3:// (any fsspec) URL."""

    def __init__(self, prefix: str | None = None) -> None:
        self._location = open_location(prefix or default_store_prefix())

    @property
    def prefix(self) -> str:
        """The prefix as it appears in paths and launch YAMLs (absolute when local)."""
        return self._location.prefix

    @property
    def is_local(self) -> bool:
        return self._location.is_local

    def __repr__(self) -> str:
        return f"ArtifactStore({self.prefix!r})"

    def uri(self, name: str, version: str) -> str:
        """The artifact's root, `{prefix}/{name}/{version}` (rlaunch.paths.artifact_root)."""
        _check_segment("name", name)
        _check_segment("version", version)
        return artifact_root(self.prefix, name, version)

    def _root(self, name: str, version: str) -> str:
        _check_segment("name", name)
        _check_segment("version", version)
        return join(self._location.root, name, version)

    # ---- reading -------------------------------------------------------------------------

    def read_record(
        self, name: str, version: str, *, verify: bool = True
    ) -> ArtifactRecord | None:
        """The record of a built artifact, or None when it is not built (no record); with
        `verify`, also `verify(record)`."""
        root = self._root(name, version)
        record_path = join(root, RECORD_FILE)
        try:
            raw = self._location.fs.cat_file(record_path)
        except FileNotFoundError:
            return None
        except (IsADirectoryError, PermissionError, OSError) as err:
            raise StoreError(
                f"{record_path} cannot be read ({err.strerror or err}); the record was damaged "
                f"by hand: delete {root} and build again"
            ) from None
        try:
            text = raw.decode()
        except UnicodeDecodeError:
            raise StoreError(
                f"{record_path} is not UTF-8 text; the record was damaged: delete {root} and "
                f"build again"
            ) from None
        record = parse_record(text, record_path)
        if (record.name, record.version) != (name, version):
            raise StoreError(
                f"{record_path} records {record.identity}, not {name}@{version}; the folder was "
                f"moved or copied by hand: delete it and build again"
            )
        if verify:
            self.verify(record)
        return record

    def verify(self, record: ArtifactRecord, *, full: bool = False) -> None:
        """Check the files a record lists: present, of their size, and on a local store also
        their sha256 (an object store's checksums are checked when a copy is downloaded).
        Unchanged files are not read again (the digest cache); `full` reads every one."""
        root = self._root(record.name, record.version)
        if self.is_local:
            verify_local(Path(root), record, full=full)
        else:
            verify_sizes(self._listing(root), self.uri(record.name, record.version), record)

    def _listing(self, root: str) -> dict[str, int]:
        found = self._location.fs.find(root, detail=True)
        base = root.rstrip("/") + "/"
        return {
            path[len(base):]: int(info.get("size") or 0)
            for path, info in found.items()
            if path.startswith(base) and info.get("type") != "directory"
        }

    def local_path(
        self, record: ArtifactRecord, *, full: bool = False, log: Log | None = None
    ) -> Path:
        """A local folder with the artifact's payload: the store folder itself when the store
        is local, else a verified copy in the local cache (downloaded once per record, many
        files at once, `log` getting progress by bytes; its unchanged files are not hashed
        again unless `full`)."""
        if self.is_local:
            return Path(self._root(record.name, record.version))
        cached = local_cache_dir(self.prefix) / record.name / record.version
        cached_record = cached / RECORD_FILE
        if cached_record.is_file() and cached_record.read_text() == record.to_json():
            try:
                verify_local(cached, record, full=full)
                return cached
            except StoreError:
                pass  # a damaged local copy is simply fetched again
        staging = self._new_local_staging(cached.parent, record.version)
        root = self._root(record.name, record.version)
        uri = self.uri(record.name, record.version)
        try:
            download(self._location.fs, [
                FileCopy(join(root, entry.path), str(staging.joinpath(*entry.path.split("/"))),
                         entry.size)
                for entry in record.files
            ], what=f"downloading {record.identity}", log=log)
            verify_local(staging, record, where=uri)
            (staging / RECORD_FILE).write_text(record.to_json())
            self._swap_into_place(staging, cached, record.version)
            DigestCache.move(staging, cached)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return cached

    # ---- building ------------------------------------------------------------------------

    @contextmanager
    def lock(
        self, name: str, version: str, *, on_wait: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """Hold the identity's build lock; `on_wait` is called once if another process has it.

        The lock file lives in the store for a local prefix, and in the local cache for an
        object store (which has no locks: builds on one machine still serialize)."""
        _check_segment("name", name)
        _check_segment("version", version)
        if self.is_local:
            lock_path = Path(self._location.root, name, f".{version}.lock")
        else:
            lock_path = lock_dir_for_remote(self.prefix) / name / f"{version}.lock"
        with exclusive(lock_path, on_wait=on_wait):
            yield

    def new_staging(self, name: str, version: str) -> Path:
        """A fresh local folder for a build to write its payload into. Call under the lock."""
        _check_segment("name", name)
        _check_segment("version", version)
        if self.is_local:
            parent = Path(self._location.root, name)
        else:
            parent = local_cache_dir(self.prefix) / ".staging" / name
        return self._new_local_staging(parent, version)

    @staticmethod
    def _new_local_staging(parent: Path, version: str) -> Path:
        parent.mkdir(parents=True, exist_ok=True)
        staging = parent / f".staging-{version}-{os.getpid()}-{secrets.token_hex(4)}"
        staging.mkdir()
        return staging

    def clean_leftovers(self, name: str, version: str) -> list[str]:
        """Remove what killed builds of this identity left: staging and trash folders, and a
        payload without a record. Call under the identity's lock. Returns what was removed."""
        removed: list[str] = []
        if self.is_local:
            parents = [Path(self._location.root, name)]
        else:
            cache = local_cache_dir(self.prefix)
            parents = [cache / ".staging" / name, cache / name]
        for parent in parents:
            if not parent.is_dir():
                continue
            for child in parent.iterdir():
                match = _LEFTOVER.match(child.name)
                if match and match["version"] == version:
                    shutil.rmtree(child, ignore_errors=True)
                    removed.append(str(child))
        root = self._root(name, version)
        fs = self._location.fs
        if fs.exists(root) and not fs.exists(join(root, RECORD_FILE)):
            fs.rm(root, recursive=True)
            removed.append(self.uri(name, version))
        return removed

    def publish(self, staging: Path, record: ArtifactRecord, *, log: Log | None = None) -> None:
        """Move a finished staging folder into place and write its record last. Call under the
        identity's lock. A previous payload of the same identity (a dev rebuild, `--force`)
        stops counting as built before it is replaced. On an object store the files are
        uploaded many at once (`log` gets progress by bytes)."""
        root = self._root(record.name, record.version)
        fs = self._location.fs
        record_path = join(root, RECORD_FILE)
        if fs.exists(record_path):
            fs.rm_file(record_path)
        if self.is_local:
            self._swap_into_place(staging, Path(root), record.version)
            DigestCache.move(staging, root)
            write_text_atomically(record_path, record.to_json())
            return
        if fs.exists(root):
            fs.rm(root, recursive=True)
        upload(fs, [
            FileCopy(str(staging.joinpath(*entry.path.split("/"))), join(root, entry.path),
                     entry.size)
            for entry in record.files
        ], what=f"uploading {record.identity}", log=log)
        fs.pipe_file(record_path, record.to_json().encode())
        # The staged payload becomes the local copy, so it is not downloaded right back.
        (staging / RECORD_FILE).write_text(record.to_json())
        cached = local_cache_dir(self.prefix) / record.name / record.version
        cached.parent.mkdir(parents=True, exist_ok=True)
        self._swap_into_place(staging, cached, record.version)
        DigestCache.move(staging, cached)

    @staticmethod
    def _swap_into_place(staging: Path, target: Path, version: str) -> None:
        trash = target.parent / f".trash-{version}-{os.getpid()}-{secrets.token_hex(4)}"
        replace_folder(staging, target, trash)

