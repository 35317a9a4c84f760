"""Many files between a store and local folders at once: fsspec's batched `get` / `put`.

Object-store filesystems (s3fs, gcsfs) are asynchronous: fsspec's `_get` / `_put` run one
`_get_file` / `_put_file` coroutine per file, at most `batch_size` at a time. Synchronous ones
(a local directory, anything else) are wrapped in fsspec's `AsyncFileSystemWrapper`, whose
`_get_file` runs the synchronous copy in a thread, and go through the same batched `_get` /
`_put`. So every transfer has a bounded number of concurrent streams (`streams`, default
`$RLAUNCH_TRANSFER_STREAMS`, else 8) and reports progress by bytes.

Transfers to and from S3 are the exception: they go through s3transfer
(`rlaunch.store.s3_transfer`), which keeps `streams` requests in flight (files and the parts of
big files alike); s3fs's own multipart transfer of one big file reached about half of that rate.
"""

from __future__ import annotations

import os
import posixpath
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fsspec.asyn import AsyncFileSystem, sync
from fsspec.callbacks import Callback
from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper
from fsspec.spec import AbstractFileSystem

from rlaunch.store.fs import StoreError
from rlaunch.store.s3_transfer import download_files, upload_files

DEFAULT_STREAMS = 8
STREAMS_VARIABLE = "RLAUNCH_TRANSFER_STREAMS"
_REPORT_EVERY_SECONDS = 2.0

Log = Callable[[str], None]


@dataclass(frozen=True)
class FileCopy:
    """One file to move: `source` and `target` paths (a store path or a local path, by
    direction) and its size in bytes, as the record or listing says."""

    source: str
    target: str
    size: int


def transfer_streams(streams: int | None = None) -> int:
    """How many files move at once: `streams`, else `$RLAUNCH_TRANSFER_STREAMS`, else 8."""
    given: object = streams
    where = "streams"
    if streams is None:
        given = os.environ.get(STREAMS_VARIABLE)
        where = f"${STREAMS_VARIABLE}"
        if given is None:
            return DEFAULT_STREAMS
    try:
        chosen = int(str(given))
    except ValueError:
        chosen = 0
    if chosen < 1:
        raise StoreError(
            f"{where} must be a whole number of concurrent transfers, at least 1; got {given!r}"
        )
    return chosen


def download(
    fs: AbstractFileSystem,
    files: Sequence[FileCopy],
    *,
    what: str,
    streams: int | None = None,
    log: Log | None = None,
) -> ByteProgress:
    """Copy `files` (source: a path on `fs`; target: a local path) at most `streams` at a
    time; `log` gets a progress line (`what`: bytes, files, rate) every few seconds. Returns
    the progress: bytes and files done."""
    if is_s3(fs):
        return _run_s3(download_files, fs, files, what=what, streams=streams, log=log)
    return _run(fs, files, "_get", what=what, streams=streams, log=log)


def is_s3(fs: AbstractFileSystem) -> bool:
    """Whether `fs` is s3fs's filesystem (by protocol: s3fs need not be imported to ask)."""
    protocol = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return "s3" in protocol


def upload(
    fs: AbstractFileSystem,
    files: Sequence[FileCopy],
    *,
    what: str,
    streams: int | None = None,
    log: Log | None = None,
) -> ByteProgress:
    """Copy `files` (source: a local path; target: a path on `fs`), like `download`; the
    targets' folders are made first (once each), for filesystems that have folders."""
    if is_s3(fs):
        return _run_s3(upload_files, fs, files, what=what, streams=streams, log=log)
    for folder in sorted({posixpath.dirname(item.target) for item in files}):
        fs.makedirs(folder, exist_ok=True)
    return _run(fs, files, "_put", what=what, streams=streams, log=log)


def _run_s3(
    move: Callable[..., None],
    fs: AbstractFileSystem,
    files: Sequence[FileCopy],
    *,
    what: str,
    streams: int | None,
    log: Log | None,
) -> ByteProgress:
    batch = transfer_streams(streams)
    progress = ByteProgress(files, what=what, log=log)
    if files:
        move(fs, [(item.source, item.target, item.size) for item in files], streams=batch,
             progress=progress)
    progress.finish()
    return progress


def _run(
    fs: AbstractFileSystem,
    files: Sequence[FileCopy],
    method: str,
    *,
    what: str,
    streams: int | None,
    log: Log | None,
) -> ByteProgress:
    batch = transfer_streams(streams)
    progress = ByteProgress(files, what=what, log=log)
    if not files:
        return progress
    if isinstance(fs, AsyncFileSystem) and not isinstance(fs, AsyncFileSystemWrapper):
        runner, coroutine = fs, getattr(fs, method)
    else:
        # The wrapper rebinds `_get`/`_put` to the synchronous, one-file-at-a-time loop;
        # AsyncFileSystem's own batched versions are what run its `_get_file` in parallel.
        runner = AsyncFileSystemWrapper(fs, asynchronous=False)
        unbound = getattr(AsyncFileSystem, method)

        def coroutine(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            return unbound(runner, *args, **kwargs)

    sources = [item.source for item in files]
    targets = [item.target for item in files]
    sync(runner.loop, coroutine, sources, targets, batch_size=batch, callback=progress)
    progress.finish()
    return progress


class ByteProgress(Callback):
    """fsspec progress by bytes across many files moving at once (thread safe: a wrapped
    synchronous filesystem reports from worker threads)."""

    def __init__(self, files: Sequence[FileCopy], *, what: str, log: Log | None) -> None:
        super().__init__(size=len(files), value=0)
        self._sizes = {item.source: item.size for item in files}
        self.total_bytes = sum(self._sizes.values())
        self.done_bytes = 0
        self._what = what
        self._log = log
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._last_report = self._started

    def branched(self, path_1: str, path_2: str, **kwargs: object) -> Callback:
        return _FileProgress(self, self._sizes.get(path_1, 0))

    def call(self, *args: object, **kwargs: object) -> None:
        """fsspec counts finished files here; bytes arrive through `add_bytes`."""

    def file_done(self) -> None:
        """One more file finished (for uploads that report files themselves)."""
        with self._lock:
            self.value += 1

    def add_bytes(self, count: int) -> None:
        with self._lock:
            self.done_bytes += count
            now = time.monotonic()
            due = now - self._last_report >= _REPORT_EVERY_SECONDS
            if due:
                self._last_report = now
        if due:
            self._report()

    def finish(self) -> None:
        if time.monotonic() - self._started >= _REPORT_EVERY_SECONDS:
            self._report()

    def line(self) -> str:
        seconds = max(time.monotonic() - self._started, 1e-9)
        share = self.done_bytes / self.total_bytes if self.total_bytes else 1.0
        return (
            f"{self._what}: {_size(self.done_bytes)} of {_size(self.total_bytes)} "
            f"({share:.0%}), {self.value} of {self.size} file(s), "
            f"{_size(int(self.done_bytes / seconds))}/s"
        )

    def _report(self) -> None:
        if self._log is not None:
            self._log(self.line())


class _FileProgress(Callback):
    """One file's bytes: what its backend reports as it goes (s3fs and gcsfs do), and the
    rest of its size when it finishes (a local copy reports nothing on the way)."""

    def __init__(self, parent: ByteProgress, size: int) -> None:
        super().__init__(size=size, value=0)
        self._parent = parent
        self._reported = 0

    def call(self, *args: object, **kwargs: object) -> None:
        delta = min(self.value, self.size or self.value) - self._reported
        if delta > 0:
            self._reported += delta
            self._parent.add_bytes(delta)

    def close(self) -> None:
        rest = (self.size or 0) - self._reported
        if rest > 0:
            self._reported += rest
            self._parent.add_bytes(rest)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"

