"""Uploads to an S3 store through s3transfer, the transfer manager behind boto3 and `aws s3 cp`.

s3fs's own `_put_file` sends a big file's parts in waves (`max_concurrency` parts, then it waits
for the slowest before reading the next wave) and signs every part on its event-loop thread;
against the S3 test server one big file went up at 30-70% of s3transfer's rate whatever its part
size and concurrency (docs/artifacts.md has the figures). s3transfer keeps `streams` requests in
flight at all times, small files and the parts of big ones alike, on a pool of threads that hash
and send in parallel, and reports bytes as they go.

The client is made from the same settings as the store's s3fs filesystem (its public
constructor options: keys, endpoint, session and client options, `anon`, timeouts), so it reaches
the same server with the same credentials; only the HTTP stack differs. Downloads stay with
s3fs (`transfer.download`): its ranged reads already run as fast as s3transfer's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

# s3transfer's (and `aws s3 cp`'s) defaults: files above 8 MiB go up in 8 MiB parts.
PART_BYTES = 8 << 20


class Progress(Protocol):
    """What an upload reports to: bytes as they are sent, files as they finish."""

    def add_bytes(self, count: int) -> None: ...

    def file_done(self) -> None: ...


class _Reporter:
    """An s3transfer subscriber (s3transfer calls the `on_*` methods a subscriber has)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress

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
    session = botocore.session.Session(**fs.kwargs)  # s3fs's session options (profile...)
    return session.create_client("s3", config=Config(**config_kwargs), **init_kwargs,
                                 **client_kwargs)


def upload_files(fs: Any, pairs: Sequence[tuple[str, str]], *, streams: int,
                 progress: Progress) -> None:
    """Upload each (local path, `bucket/key` path on `fs`) pair, at most `streams` requests in
    flight; the first failure cancels the rest and is raised."""
    # s3transfer: loads botocore (about 0.1 s); only S3 uploads need it.
    from s3transfer.manager import TransferConfig, TransferManager

    client = client_like(fs, streams)
    config = TransferConfig(multipart_threshold=PART_BYTES, multipart_chunksize=PART_BYTES,
                            max_request_concurrency=streams)
    reporter = _Reporter(progress)
    # What s3fs adds to every write: requester-pays, encryption, ACL options.
    extra_args = {**fs.req_kw, **fs.s3_additional_kwargs}
    with TransferManager(client, config) as manager:
        futures = []
        for source, target in pairs:
            bucket, key, _ = fs.split_path(target)
            futures.append(manager.upload(source, bucket, key, extra_args,
                                          subscribers=[reporter]))
        for future in futures:
            future.result()
    for _, target in pairs:
        fs.invalidate_cache(target)
    client.close()
