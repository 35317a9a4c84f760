"""Transfers to and from an S3 store through s3transfer, the transfer manager behind boto3 and
`aws s3 cp`.

s3fs's own `_put_file` / `_get_file` move a big file's parts in waves (`max_concurrency` parts,
then they wait for the slowest before starting the next wave; `_get_file` also opens a full GET
first), and sign every part on the event-loop thread; against the S3 test server one big file
went up at 30-70% and down at about 50% of s3transfer's rate, whatever the part size and
concurrency (docs/artifacts.md has the figures). s3transfer keeps `streams` requests in flight at
all times, small files and the parts of big ones alike, on a pool of threads that hash and send
in parallel, and reports bytes as they go.

The client is made from the same settings as the store's s3fs filesystem (its public
constructor options: keys, endpoint, session and client options, `anon`, timeouts), so it
reaches the same server with the same credentials; only the HTTP stack differs.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Sequence
from typing import Any, Protocol

# Uploads: s3transfer's (and `aws s3 cp`'s) defaults, files above 8 MiB go up in 8 MiB parts.
PART_BYTES = 8 << 20
# Downloads: s3fs's ranged-read size (its `default_block_size`), fewer requests per big file;
# s3transfer buffers a download in 256 KiB pieces whatever the range size.
RANGE_BYTES = 50 << 20


_SESSIONS: dict[str, Any] = {}


class Progress(Protocol):
    """What an upload reports to: bytes as they are sent, files as they finish."""

    def add_bytes(self, count: int) -> None: ...

    def file_done(self) -> None: ...


class _Reporter:
    """An s3transfer subscriber for one file (s3transfer calls the `on_*` methods a subscriber
    has). For a download it hands over the object's size and ETag from the folder's listing:
    s3transfer then starts with the ranged reads (pinned to that ETag), not with a HEAD request
    per file outside the `streams` bound."""

    def __init__(self, progress: Progress, listed: dict[str, Any] | None = None) -> None:
        """`listed`: a download's entry in its folder's listing (None for an upload)."""
        self._progress = progress
        self._listed = listed

    def on_queued(self, future: Any, **kwargs: Any) -> None:
        if self._listed is not None:
            future.meta.provide_transfer_size(self._listed["size"])
            future.meta.provide_object_etag(self._listed["ETag"])

    def on_progress(self, future: Any, bytes_transferred: int, **kwargs: Any) -> None:
        self._progress.add_bytes(bytes_transferred)

    def on_done(self, future: Any, **kwargs: Any) -> None:
        if _succeeded(future):
            self._progress.file_done()


def _succeeded(future: Any) -> bool:
    """Whether a finished transfer succeeded (its failure is raised where it is awaited)."""
    try:
        future.result()
    except BaseException:
        return False
    return True


def client_like(fs: Any, streams: int) -> Any:
    """A botocore S3 client with the settings `fs` (an `s3fs.S3FileSystem`) was made with, and
    a connection pool of `streams`."""
    # botocore: about 0.1 s to import, and only S3 uploads need it (not a local store's start-up).
    import botocore.session
    from botocore import UNSIGNED
    from botocore.config import Config

    config_kwargs = {
        "connect_timeout": fs.connect_timeout,
        "read_timeout": fs.read_timeout,
        **fs.config_kwargs,
        "max_pool_connections": streams,
    }
    client_kwargs = dict(fs.client_kwargs)
    init_kwargs = {
        "aws_access_key_id": fs.key,
        "aws_secret_access_key": fs.secret,
        "aws_session_token": fs.token,
        "endpoint_url": fs.endpoint_url,
    }
    init_kwargs = {name: value for name, value in init_kwargs.items()
                   if value is not None and name not in client_kwargs}
    if "use_ssl" not in client_kwargs:
        init_kwargs["use_ssl"] = fs.use_ssl
    if fs.anon:
        config_kwargs["signature_version"] = UNSIGNED
        for name in ("aws_access_key_id", "aws_secret_access_key", "aws_session_token"):
            init_kwargs.pop(name, None)
            client_kwargs.pop(name, None)
    # s3fs's session options (profile...). A session loads S3's service model once (0.2-0.4 s);
    # the clients of later transfers reuse it.
    key = repr(sorted(fs.kwargs.items()))
    session = _SESSIONS.get(key)
    if session is None:
        session = _SESSIONS[key] = botocore.session.Session(**fs.kwargs)
    return session.create_client("s3", config=Config(**config_kwargs), **init_kwargs,
                                 **client_kwargs)


def upload_files(fs: Any, files: Sequence[tuple[str, str, int]], *, streams: int,
                 progress: Progress) -> None:
    """Upload each (local path, `bucket/key` path on `fs`, size), at most `streams` requests in
    flight; the first failure cancels the rest and is raised."""
    # What s3fs adds to every write: requester-pays, encryption, ACL options.
    extra_args = {**fs.req_kw, **fs.s3_additional_kwargs}
    _run(fs, streams, PART_BYTES, [
        ("upload", (source, *fs.split_path(target)[:2], extra_args), _Reporter(progress))
        for source, target, _ in files
    ])
    for _, target, _ in files:
        fs.invalidate_cache(target)


def download_files(fs: Any, files: Sequence[tuple[str, str, int]], *, streams: int,
                   progress: Progress) -> None:
    """Download each (`bucket/key` path on `fs`, local path, size), like `upload_files`; the
    local folders are made first, and an object missing from its folder's listing raises
    FileNotFoundError before anything moves. s3transfer writes each file under a temporary name
    and renames it into place when complete."""
    for _, target, _ in files:
        os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    # One listing of the files' common folder (a request per 1000 objects), not a HEAD per file.
    folder = posixpath.commonpath([posixpath.dirname(source) for source, _, _ in files])
    fs.invalidate_cache(folder)
    listed = {name: entry for name, entry in fs.find(folder, detail=True).items()
              if entry.get("ETag")}
    missing = [source for source, _, _ in files if source not in listed]
    if missing:  # as s3fs says it: FileNotFoundError
        raise FileNotFoundError(f"s3://{missing[0]}: no such object in the store")
    extra_args = dict(fs.req_kw)
    _run(fs, streams, RANGE_BYTES, [
        ("download", (*fs.split_path(source)[:2], target, extra_args),
         _Reporter(progress, listed[source]))
        for source, target, _ in files
    ])


def _run(fs: Any, streams: int, part_bytes: int,
         calls: Sequence[tuple[str, tuple[Any, ...], _Reporter]]) -> None:
    # s3transfer: loads botocore (about 0.1 s); only S3 transfers need it.
    from s3transfer.manager import TransferConfig, TransferManager

    client = client_like(fs, streams)
    config = TransferConfig(multipart_threshold=part_bytes, multipart_chunksize=part_bytes,
                            max_request_concurrency=streams)
    try:
        with TransferManager(client, config) as manager:
            futures = [getattr(manager, method)(*args, subscribers=[reporter])
                       for method, args, reporter in calls]
            for future in futures:
                future.result()
    finally:
        client.close()
