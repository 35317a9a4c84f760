"""The launch lock: at most one launch of a `name@version` at a time, per store.

A file lock (`rlaunch.locks.try_exclusive`, non-blocking) on
`{prefix}/_ledger/{name}/{version}.lock` for a local prefix; for an object-store prefix, which has
no locks, on a file of the same name under this machine's cache (launches from one machine still
exclude each other; docs/launching.md says what this does not cover). The holder writes its pid
and host into the file so that the loser can say who holds it. The kernel drops the lock when the
holder dies, so a crash never leaves it stuck.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from types import TracebackType

from rlaunch.ledger.errors import LedgerError
from rlaunch.locks import HeldLock, read_holder, try_exclusive
from rlaunch.store.fs import lock_dir_for_remote, open_location


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
        self._held: HeldLock | None = None

    def acquire(self) -> None:
        holder = {"pid": os.getpid(), "host": socket.gethostname(),
                  "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        held = try_exclusive(self.path, holder)
        if held is None:
            raise LaunchLocked(self.identity, read_holder(self.path), self.path)
        self._held = held

    def release(self) -> None:
        if self._held is not None:
            self._held.release()
            self._held = None

    @property
    def held(self) -> bool:
        return self._held is not None

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
