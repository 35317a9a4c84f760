"""The launch lock: at most one launch of a `name@version` at a time, per store.

A kernel file lock (`flock`, non-blocking) on `{prefix}/_ledger/{name}/{version}.lock` for a local
prefix; for an object-store prefix, which has no locks, on a file of the same name under this
machine's cache (launches from one machine still exclude each other; docs/launching.md says what
this does not cover). The holder writes its pid and host into the file so that the loser can say
who holds it. The kernel drops the lock when the holder dies, so a crash never leaves it stuck.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from rlaunch.ledger.errors import LedgerError
from rlaunch.store.fs import lock_dir_for_remote, open_location

_HOLDER_READ_S = 1.0


class LaunchLocked(LedgerError):
    """Another launch of the same identity holds the lock."""

    def __init__(self, identity: str, holder: dict[str, object] | None, lock_path: Path) -> None:
        self.identity = identity
        self.holder = holder or {}
        self.lock_path = lock_path
        pid = self.holder.get("pid", "unknown")
        host = self.holder.get("host", "unknown host")
        since = self.holder.get("since", "an unknown time")
        super().__init__(
            f"{identity} is being launched by another process (pid {pid} on {host}, since "
            f"{since}; lock {lock_path}). Only one launch of an identity may run at a time: "
            f"wait for it to finish, or stop it (`rlaunch stop {identity}`) and launch again"
        )


def lock_path_for(prefix: str, name: str, version: str) -> Path:
    location = open_location(prefix)
    if location.is_local:
        return Path(location.root) / "_ledger" / name / f"{version}.lock"
    return lock_dir_for_remote(location.prefix) / "_ledger" / name / f"{version}.lock"


class LaunchLock:
    """`with LaunchLock(prefix, name, version):` or `acquire()`/`release()`."""

    def __init__(self, prefix: str, name: str, version: str) -> None:
        self.identity = f"{name}@{version}"
        self.path = lock_path_for(prefix, name, version)
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LaunchLocked(self.identity, self._read_holder(), self.path) from None
        holder = {"pid": os.getpid(), "host": socket.gethostname(),
                  "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        self._fd = fd

    def _read_holder(self) -> dict[str, object] | None:
        # The winner writes its pid right after taking the lock: give it a moment.
        deadline = time.monotonic() + _HOLDER_READ_S
        while True:
            try:
                text = self.path.read_text()
                if text.strip():
                    return json.loads(text)
            except (OSError, ValueError):
                pass
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> LaunchLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
