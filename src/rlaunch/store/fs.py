"""Filesystems behind a store prefix: a local directory, or an fsspec URL (gs://, s3://, ...)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.spec import AbstractFileSystem

from rlaunch.paths import rlaunch_cache

# fsspec knows these protocols but ships no backend for them; name the package to install.
_BACKEND_PACKAGES = {
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "s3": "s3fs",
    "s3a": "s3fs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
}


class StoreError(Exception):
    """The store cannot be opened or read, or what it holds is not what its record claims."""


@dataclass(frozen=True)
class StoreLocation:
    """Where a prefix points: the filesystem, the root path inside it, and whether it is local
    (local roots get real renames and file locks; object stores get neither)."""

    prefix: str
    fs: AbstractFileSystem
    root: str
    is_local: bool


def open_location(prefix: str, what: str = "store prefix") -> StoreLocation:
    """Resolve a prefix (or any URI: `what` names it in errors). Local paths and `file://`
    URLs become absolute local paths."""
    if not prefix:
        raise StoreError(f"the {what} is empty; pass a directory or a gs://, s3:// URL")
    protocol = prefix.split("://", 1)[0] if "://" in prefix else "file"
    if protocol in ("file", "local"):
        local = prefix.split("://", 1)[1] if "://" in prefix else prefix
        root = str(Path(local).expanduser().resolve())
        return StoreLocation(prefix=root, fs=LocalFileSystem(), root=root, is_local=True)
    try:
        fs, root = fsspec.core.url_to_fs(prefix)
    except ImportError as err:
        package = _BACKEND_PACKAGES.get(protocol)
        wanted = f"the `{package}` package" if package else f"an fsspec backend for {protocol}://"
        raise StoreError(
            f"{what} {prefix!r} needs {wanted}, which is not installed in this runtime; "
            f"install it (pip install {package or '<backend>'}) or use a local directory "
            f"({err})"
        ) from None
    except ValueError as err:
        raise StoreError(f"{what} {prefix!r} is not a usable fsspec URL: {err}") from None
    return StoreLocation(
        prefix=prefix.rstrip("/"), fs=fs, root=root.rstrip("/"), is_local=False
    )


def local_cache_dir(prefix: str) -> Path:
    """Local copies of artifacts from an object-store prefix, one folder per prefix.

    Builders and runtimes read inputs from local paths; an object store is copied here once
    (verified against the record) and reused while the record is unchanged."""
    digest = hashlib.sha256(prefix.encode()).hexdigest()[:16]
    return rlaunch_cache() / "remote" / digest


def lock_dir_for_remote(prefix: str) -> Path:
    """Object stores have no file locks: builds on one machine still serialize through these."""
    return local_cache_dir(prefix) / ".locks"
