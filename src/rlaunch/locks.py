"""File locks: the library's one lock mechanism, for the ledger, the launch, builds and the head.

Built on filelock (a kernel `flock` on Unix). The kernel drops a lock when its holder dies, so a
crash never leaves one stuck. Two ways to take one:
- `exclusive(path)`: wait until it is free (a ledger record's read-modify-write, a build of one
  identity, the local head's check-and-start); `on_wait` is told once when someone else has it;
- `try_exclusive(path, holder)`: take it now or get None (a launch: of two concurrent launches
  of one identity, exactly one proceeds). The winner's `holder` description is written into the
  lock file while it holds it, so that the loser can say who has it (`read_holder`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

FIRST_WAIT_S = 0.2
"""How long `exclusive` waits quietly before it calls `on_wait`."""


@contextmanager
def exclusive(path: Path, *, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the lock at `path` (created, with its folder, if missing) for the `with` body."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path)
    try:
        lock.acquire(timeout=FIRST_WAIT_S)
    except Timeout:
        if on_wait is not None:
            on_wait()
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


class HeldLock:
    """A lock taken by `try_exclusive`; `release()` clears the holder and frees it."""

    def __init__(self, lock: FileLock, fd: int) -> None:
        self._lock = lock
        self._fd = fd

    def release(self) -> None:
        if not self._lock.is_locked:
            return
        try:
            os.ftruncate(self._fd, 0)
        finally:
            self._lock.release()


def try_exclusive(path: Path, holder: Mapping[str, Any]) -> HeldLock | None:
    """Take the lock at `path` without waiting and write `holder` (JSON) into it; None when
    another process (or another lock object of this one) holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    acquired: list[int] = []

    def record_holder(fd: int) -> None:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(dict(holder)).encode(), 0)
        acquired.append(fd)

    lock = FileLock(path, on_acquired=record_holder)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return HeldLock(lock, acquired[0])


def read_holder(path: Path, *, wait_s: float = 1.0) -> dict[str, Any] | None:
    """The holder a `try_exclusive` winner wrote into `path`; None if none appears within
    `wait_s` (the winner writes it right after taking the lock: it gets a moment)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            text = path.read_text()
            if text.strip():
                found = json.loads(text)
                return found if isinstance(found, dict) else None
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)
