"""`adopt`: register an existing object (any fsspec URI) by its sha256, copying it into the store.

The payload is a copy, so an adopted artifact lives at `{prefix}/{name}/{version}/` like every
other one and keeps working if the source moves or changes; the record keeps the source URI.

Files are copied many at once (`rlaunch.store.transfer`), with progress by bytes.

- A file URI: the payload is the file under its own name; its sha256 is the file's.
- A directory URI: the payload is the directory's files; its sha256 is that of the directory's
  canonical manifest (`rlaunch.store.manifest_sha256`, see docs/artifacts.md).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from rlaunch.builders.base import AnyArtifact, BuildError, Log, expect_type
from rlaunch.builders.facts import verify_model_facts
from rlaunch.spec.artifacts import AdoptedArtifact, identity
from rlaunch.store.fs import StoreError, open_location
from rlaunch.store.records import directory_sha256, scan_payload
from rlaunch.store.transfer import FileCopy, download

_DIGEST = re.compile(r"^(?:sha256:)?([0-9a-f]{64})$")


class AdoptBuilder:
    """Copies `uri` into the payload and checks it against the declared `sha256`."""

    name = "adopt"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        expect_type(self.name, artifact, AdoptedArtifact)
        ident = identity(artifact)
        match = _DIGEST.match(artifact.sha256)
        if match is None:
            raise BuildError(
                f"{ident}: sha256 {artifact.sha256!r} is not a sha256 digest (64 lowercase hex, "
                f"optionally prefixed `sha256:`)"
            )
        declared = match[1]
        try:
            location = open_location(artifact.uri, what="adopted uri")
        except StoreError as err:
            raise BuildError(f"{ident}: {err}") from None
        fs, source = location.fs, location.root
        if fs.isdir(source):
            log(f"{ident}: copying directory {artifact.uri}")
            base = source.rstrip("/") + "/"
            listing = fs.find(source, detail=True)
            download(fs, [
                FileCopy(path, str(out_dir.joinpath(*path[len(base):].split("/"))),
                         int(info.get("size") or 0))
                for path, info in sorted(listing.items())
            ], what=f"{ident}: copying", log=log)
            actual, what = directory_sha256(out_dir), "the sha256 of its file manifest"
        elif fs.isfile(source):
            log(f"{ident}: copying file {artifact.uri}")
            name = posixpath.basename(source.rstrip("/"))
            download(fs, [FileCopy(source, str(out_dir / name), int(fs.size(source) or 0))],
                     what=f"{ident}: copying", log=log)
            actual, what = scan_payload(out_dir)[0].sha256, "the sha256 of the file"
        else:
            raise BuildError(f"{ident}: uri {artifact.uri} does not exist (nothing to adopt)")
        if actual != declared:
            raise BuildError(
                f"{ident}: {artifact.uri} has sha256:{actual} ({what}), but the spec declares "
                f"sha256:{declared}; the object changed, or the declared digest is wrong"
            )
        if artifact.kind == "model":
            verify_model_facts(artifact, out_dir, artifact.uri)
