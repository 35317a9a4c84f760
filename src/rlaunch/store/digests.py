"""The digest cache: a file's sha256 is computed once, and again only when its identity changes.

A file's identity is what `stat` says about it: device, inode, size, mtime_ns and ctime_ns.
The cache remembers `relative path -> (identity, sha256)` for one local directory (an artifact
in a local store, or a node cache's copy of one). Asking for a digest stats the file; when the
identity equals the remembered one, the remembered digest is the answer and nothing is read.

What it trusts, and why that is enough (docs/artifacts.md, "The digest cache", says it for
users):

- Writing a file's bytes sets its ctime to the kernel's current time, and nothing but a clock
  change can set a ctime back (`touch`/`os.utime` restore an mtime, and that sets the ctime).
  Replacing a file gives a new inode; truncating or growing one changes the size.
- Timestamps tick: a write within the same tick as an earlier one can leave the ctime as it
  was. So an entry is only trusted when the file's ctime and mtime were at least
  `RACY_SECONDS` older than the moment the cache started reading it ("racily clean" in git's
  words); a younger entry is hashed again on the next read. 2 s covers filesystems with 1 s
  timestamps (Lustre, some NFS servers) and clocks that disagree by a little.
- The cache file carries an HMAC-SHA256 of its content (the directory, and each path,
  identity and digest), keyed by a random per-user key (`{cache}/key`, mode 0600). A file
  that does not check out (a bit flip, a truncated or hand-edited file, one copied from
  another directory, user or machine) or cannot be read counts as empty: its files are
  hashed again.

`--verify` (`rlaunch build`, `rlaunch launch`) ignores the cache, hashes every file and
refreshes the entries.

For node caches and anything else that keeps verified copies on a node::

    cache = DigestCache(folder)                 # loads the folder's cache file, if any
    digest = cache.sha256("model.safetensors")  # hashes only when the identity changed
    cache.save()                                # writes what changed (atomically)

or call `rlaunch.store.records.verify_local(folder, record)`, which does exactly that for every
file a build record lists. After moving a folder whose entries are known
(`os.rename(staging, final)`), `DigestCache.move(staging, final)` keeps them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import socket
import time
from pathlib import Path
from typing import Any, NamedTuple

from rlaunch.atomic import write_text_atomically
from rlaunch.paths import rlaunch_cache

RACY_SECONDS = 2.0
"""An entry is trusted only if the file was this much older than its hashing (see above)."""
_SCHEMA = 1
_CHUNK = 1 << 20


def cache_home() -> Path:
    """`${XDG_CACHE_HOME:-~/.cache}/rlaunch/digests`: one file per directory, plus the key."""
    return rlaunch_cache() / "digests"


class FileIdentity(NamedTuple):
    """What `stat` says about a file, all of which must be unchanged to reuse its digest."""

    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> FileIdentity:
        return cls(stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


# An entry as stored: [device, inode, size, mtime_ns, ctime_ns, read_at_ns, sha256], where
# read_at_ns is the wall-clock time just before the file was stat'ed and read. Kept as the
# parsed JSON lists: a cache of many files loads without building an object per file.
_DEVICE, _INODE, _SIZE, _MTIME, _CTIME, _READ_AT, _SHA256 = range(7)


def sha256_of(path: Path) -> tuple[str, FileIdentity | None, int]:
    """The file's sha256, its identity (None if it changed while being read) and the time
    just before it was opened."""
    read_at = time.time_ns()
    with open(path, "rb") as handle:
        before = FileIdentity.of(os.fstat(handle.fileno()))
        digest = hashlib.sha256()
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
        after = FileIdentity.of(os.fstat(handle.fileno()))
    return digest.hexdigest(), (before if before == after else None), read_at


class DigestCache:
    """The sha256 of the files under one local directory, remembered by file identity.

    `racy_seconds` (default `RACY_SECONDS`) is how much older than its hashing a file must be
    for its entry to be trusted. `state_dir` defaults to `cache_home()`.

    The cache file is one line with the HMAC of the rest, then the entries as JSON
    (`relative path -> [device, inode, size, mtime_ns, ctime_ns, read_at_ns, sha256]`); a
    file whose HMAC does not check out is ignored as a whole."""

    def __init__(
        self,
        root: Path | str,
        *,
        racy_seconds: float | None = None,
        state_dir: Path | None = None,
    ) -> None:
        self.root = Path(root).resolve()
        self._root_text = str(self.root)
        self._state_dir = state_dir or cache_home()
        self._racy_ns = int((RACY_SECONDS if racy_seconds is None else racy_seconds) * 1e9)
        self._key = _user_key(self._state_dir)
        self._entries: dict[str, list[Any]] = self._load()
        self._dirty = False
        self.hashed: list[str] = []
        """Relative paths this instance read in full (the rest came from the cache)."""

    @property
    def path(self) -> Path:
        """The cache file of this directory (per host, so a shared home keeps them apart)."""
        return cache_file(self.root, self._state_dir)

    def remembered(self) -> dict[str, str]:
        """`relative path -> sha256` of every entry held (trusted or not yet)."""
        return {relative: entry[_SHA256] for relative, entry in sorted(self._entries.items())}

    def remember(
        self, relative: str, identity: FileIdentity, sha256: str, read_at_ns: int
    ) -> None:
        """Record a digest computed elsewhere: `read_at_ns` must be the wall-clock time just
        before the file (then of `identity`) was opened for hashing."""
        self._entries[relative] = [*identity, read_at_ns, sha256]
        self._dirty = True

    def sha256(
        self, relative: str, *, full: bool = False, stat: os.stat_result | None = None
    ) -> str:
        """The hex sha256 of `root/relative`; read only when its identity is not remembered
        (or is too recent to trust), or always with `full`. `stat`: the file's `os.stat`,
        when the caller has it already. Raises OSError like `open`."""
        path = f"{self._root_text}/{relative}"
        entry = self._entries.get(relative)
        if entry is not None and not full:
            newest = max(entry[_MTIME], entry[_CTIME])
            if entry[_READ_AT] - newest >= self._racy_ns:
                stat = stat or os.stat(path)
                if (stat.st_ino == entry[_INODE] and stat.st_ctime_ns == entry[_CTIME]
                        and stat.st_mtime_ns == entry[_MTIME] and stat.st_size == entry[_SIZE]
                        and stat.st_dev == entry[_DEVICE]):
                    return str(entry[_SHA256])
        digest, identity, read_at = sha256_of(Path(path))
        self.hashed.append(relative)
        if identity is not None:
            self.remember(relative, identity, digest, read_at)
        elif self._entries.pop(relative, None) is not None:
            self._dirty = True
        return digest

    def save(self) -> None:
        """Write the cache file if anything changed. A failure to write only costs a re-hash
        later, so it is ignored."""
        if not self._dirty or self._key is None:
            return
        entries = dict(sorted(self._entries.items()))
        body = json.dumps({"schema": _SCHEMA, "root": self._root_text, "entries": entries},
                          separators=(",", ":"))
        try:
            write_text_atomically(self.path, f"{_mac(self._key, body)}\n{body}", mode=0o600)
        except OSError:
            return
        self._dirty = False

    @classmethod
    def move(cls, source: Path | str, target: Path | str, *, state_dir: Path | None = None) -> None:
        """`source` was renamed to `target` (a staging folder put into place): keep the
        entries of its files, whose identities a rename of their folder does not change."""
        old, new = cls(source, state_dir=state_dir), cls(target, state_dir=state_dir)
        new._entries = dict(old._entries)
        new._dirty = bool(new._entries)
        new.save()
        old.path.unlink(missing_ok=True)

    def _load(self) -> dict[str, list[Any]]:
        if self._key is None:
            return {}
        try:
            mac, _, body = self.path.read_text(encoding="utf-8").partition("\n")
            if not hmac.compare_digest(mac, _mac(self._key, body)):
                return {}
            document = json.loads(body)
            if document["schema"] != _SCHEMA or document["root"] != self._root_text:
                return {}
            entries = document["entries"]
            if not isinstance(entries, dict):
                return {}
            return entries
        except (OSError, ValueError, LookupError, TypeError, AttributeError):
            return {}


def _mac(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def cache_file(root: Path, state_dir: Path | None = None) -> Path:
    key = f"{socket.gethostname()}\0{root}".encode()
    return (state_dir or cache_home()) / f"{hashlib.sha256(key).hexdigest()[:32]}.json"


def _user_key(state_dir: Path) -> bytes | None:
    """The HMAC key of this user's cache, made on first use (a damaged one is replaced); None
    (nothing is cached) if the cache folder cannot be written."""
    key_path = state_dir / "key"
    try:
        key = key_path.read_bytes()
    except OSError:
        key = b""
    if len(key) == 32:
        return key
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        temporary = state_dir / f".key.{os.getpid()}.{secrets.token_hex(4)}"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(secrets.token_bytes(32))
        if key:
            os.replace(temporary, key_path)
        else:
            try:
                os.link(temporary, key_path)  # the first writer wins; the others read its key
            except FileExistsError:
                pass
            finally:
                temporary.unlink(missing_ok=True)
        key = key_path.read_bytes()
    except OSError:
        return None
    return key if len(key) == 32 else None
