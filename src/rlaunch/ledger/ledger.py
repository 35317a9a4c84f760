"""Reading and writing ledger records under a store prefix, on any fsspec filesystem.

Records live at `rlaunch.paths.run_paths(prefix, name, version).ledger_record`
(`{prefix}/_ledger/{name}/{version}.json`). Every change is a read-modify-write under a short
blocking lock (`{version}.json.lock`), written atomically: a temporary file renamed over the
record on a local filesystem, a single object put on an object store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rlaunch.atomic import write_text_atomically
from rlaunch.ledger.errors import LedgerError
from rlaunch.ledger.lock import LaunchLock, lock_path_for
from rlaunch.ledger.records import latest_smoke_result, launched, new_record
from rlaunch.locks import exclusive
from rlaunch.paths import join, run_paths
from rlaunch.store.fs import StoreError, open_location

RUNTIME_RECORD = "runtime.json"
"""Written by a runtime into the checkpoint root it writes: `{"runtime_fingerprint": ...}`."""


class Ledger:
    """The launch ledger of one store prefix (a local directory or an fsspec URL)."""

    def __init__(self, prefix: str) -> None:
        try:
            self._location = open_location(prefix)
        except StoreError as err:
            raise LedgerError(str(err)) from None

    @property
    def prefix(self) -> str:
        return self._location.prefix

    @property
    def is_local(self) -> bool:
        return self._location.is_local

    def record_path(self, name: str, version: str) -> str:
        return run_paths(self.prefix, name, version).ledger_record

    def _fs_path(self, url_or_path: str) -> str:
        """The path inside the filesystem for a path under the prefix."""
        if self._location.is_local:
            return url_or_path
        return self._location.root + url_or_path[len(self.prefix) :]

    def read(self, name: str, version: str) -> dict[str, Any] | None:
        path = self.record_path(name, version)
        try:
            raw = self._location.fs.cat_file(self._fs_path(path))
        except FileNotFoundError:
            return None
        except OSError as err:
            raise LedgerError(f"cannot read the ledger record {path}: {err}") from None
        try:
            record = json.loads(raw)
        except ValueError as err:
            raise LedgerError(
                f"the ledger record {path} is not valid JSON ({err}); it was not written by "
                f"rlaunch or was damaged: move it aside and launch again"
            ) from None
        problem = _shape_problem(record)
        if problem:
            raise LedgerError(
                f"the ledger record {path} has the wrong shape ({problem}); it was not written by "
                f"rlaunch or was edited by hand: move it aside and launch again"
            )
        return record

    def _write(self, name: str, version: str, record: dict[str, Any]) -> None:
        path = self.record_path(name, version)
        text = json.dumps(record, indent=2, sort_keys=True) + "\n"
        if self._location.is_local:
            write_text_atomically(path, text)
        else:
            self._location.fs.pipe_file(self._fs_path(path), text.encode())

    def update(
        self, name: str, version: str, change: Callable[[dict[str, Any]], None]
    ) -> dict[str, Any]:
        """Apply `change` to the record (a new one if none exists) and write it back."""
        with exclusive(lock_path_for(self.prefix, name, version).with_suffix(".json.lock")):
            record = self.read(name, version) or new_record(name, version)
            change(record)
            self._write(name, version, record)
            return record

    def launch_lock(self, name: str, version: str) -> LaunchLock:
        return LaunchLock(self.prefix, name, version)

    # -- lookups for rlaunch.preflight.engine.world.World ------------------------------------

    def launched_record(self, name: str, version: str) -> dict[str, Any] | None:
        """`World.ledger`: the record of a previous launch, None if never launched."""
        record = self.read(name, version)
        return record if launched(record) else None

    def smoke_result(self, name: str, version: str) -> dict[str, Any] | None:
        """`World.smoke_record`: the recorded smoke result standing for `name@version`."""
        return latest_smoke_result(self.read(name, version))

    def checkpoint_runtime(self, checkpoint_root: str) -> str | None:
        """`World.checkpoint_runtime`: the runtime fingerprint recorded in a checkpoint root
        (`runtime.json`), None when no runtime has written there."""
        try:
            location = open_location(checkpoint_root)
        except StoreError:
            return None
        path = join(location.root, RUNTIME_RECORD)
        try:
            raw = location.fs.cat_file(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            raise LedgerError(f"cannot read {path}: {err}") from None
        try:
            value = json.loads(raw).get("runtime_fingerprint")
        except (ValueError, AttributeError):
            raise LedgerError(
                f"{path} is not a runtime record ({{\"runtime_fingerprint\": ...}}); it was not "
                f"written by an rlaunch runtime: point resume at a fresh root"
            ) from None
        return str(value) if value else None


def _shape_problem(record: Any) -> str | None:
    """What makes a parsed ledger record unusable, or None: the parts every reader indexes."""
    if not isinstance(record, dict):
        return f"a JSON object was expected, got {type(record).__name__}"
    attempts = record.get("attempts", [])
    if not isinstance(attempts, list):
        return f"attempts is a {type(attempts).__name__}, not a list"
    for index, attempt in enumerate(attempts):
        if not isinstance(attempt, dict):
            return f"attempts[{index}] is a {type(attempt).__name__}, not an object"
        for key in ("submission", "run_exports"):
            value = attempt.get(key)
            if value is not None and not isinstance(value, dict):
                return f"attempts[{index}].{key} is a {type(value).__name__}, not an object"
    return None
