"""The artifact store: built artifacts at `{prefix}/{name}/{version}/` with a `_record.json`.

The prefix is a local directory (default `rlaunch.paths.default_store_prefix()`) or an fsspec
URL (`gs://`, `s3://` when their backends are installed). See docs/artifacts.md.
"""

from rlaunch.store.fs import StoreError
from rlaunch.store.records import (
    RECORD_FILE,
    ArtifactRecord,
    DepRef,
    FileEntry,
    Provenance,
    directory_sha256,
    manifest_sha256,
    own_fingerprint,
    scan_payload,
    sha256_file,
)
from rlaunch.store.store import ArtifactStore

__all__ = [
    "RECORD_FILE", "ArtifactRecord", "ArtifactStore", "DepRef", "FileEntry", "Provenance",
    "StoreError", "directory_sha256", "manifest_sha256", "own_fingerprint", "scan_payload",
    "sha256_file",
]
