"""The world a launch happens in: what `world`-scope rules may look at besides the spec.

Spec-scope rules are decided by the spec alone (so their result can be cached on the spec's
digest); world-scope rules also read this: the launching environment, the launcher's git state,
the launch ledger, existing checkpoint roots and recorded smoke results. The launch code builds
a World from the real ledger and store; `current_world()` builds one from the process's
environment and git checkout, with an empty ledger unless lookups are given.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlaunch.ledger.checkpoints import CheckpointListing
from rlaunch.paths import default_store_prefix
from rlaunch.store.probe import StoreProbe

RecordLookup = Callable[[str, str], Mapping[str, Any] | None]
"""`(name, version) -> record | None`."""
CheckpointLookup = Callable[[str], str | None]
"""`checkpoint_root -> runtime fingerprint recorded in it | None` (None: no checkpoint there)."""
CheckpointsLookup = Callable[[str], CheckpointListing | None]
"""`checkpoint root or global_step_N folder -> what it holds | None` (None: nothing there)."""


def no_record(name: str, version: str) -> None:
    return None


def no_checkpoint(checkpoint_root: str) -> None:
    return None


def no_checkpoints(path: str) -> None:
    return None


@dataclass(frozen=True)
class World:
    env: Mapping[str, str] = field(default_factory=dict)
    """The launching environment (credentials are looked up here by name, never printed)."""
    git_dirty: bool | None = None
    """Uncommitted changes in the launcher's checkout; None: not a git checkout, or unknown."""
    launcher_commit: str | None = None
    """40-hex commit of the launcher's checkout, when known."""
    ledger: RecordLookup = no_record
    """Previous launch record of `name@version`: at least `fingerprint`, `runtime_fingerprint`
    and `status`."""
    checkpoint_runtime: CheckpointLookup = no_checkpoint
    """Runtime fingerprint recorded in an existing checkpoint root."""
    smoke_record: RecordLookup = no_record
    """Recorded smoke result of `name@version`: `status`, `geometry`, `runtime_fingerprint`."""
    checkpoints: CheckpointsLookup = no_checkpoints
    """The pointer, step folders and the resumed step's files of a checkpoint root (or of a
    `resume.path` step folder), for the resume rules."""
    store_prefix: str = field(default_factory=default_store_prefix)
    """Store prefix used when the spec leaves `execution.store_prefix` null."""
    store_probe: StoreProbe | None = None
    """What the one bounded probe of the store found (rlaunch.store.probe); None: not probed.
    When it found the store unavailable, the lookups above raise StoreUnavailable instead of
    asking the store again."""


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def current_world(
    *,
    cwd: str | os.PathLike[str] | None = None,
    ledger: RecordLookup = no_record,
    checkpoint_runtime: CheckpointLookup = no_checkpoint,
    smoke_record: RecordLookup = no_record,
) -> World:
    """The world of this process: its environment, and the git state of `cwd` (the launcher)."""
    where = Path(cwd) if cwd is not None else Path.cwd()
    head = _git(["rev-parse", "HEAD"], where)
    # Untracked files count (a BUILD file not committed defines the run all the same); ignored
    # ones do not, nor does dist/, where launches write their YAML (a smoke's output must not
    # make its full run's tree dirty).
    status = _git(["status", "--porcelain", "--untracked-files=normal", "--", ":(top)",
                   ":(exclude)dist"], where)
    return World(
        env=dict(os.environ),
        git_dirty=None if status is None else bool(status.strip()),
        launcher_commit=head.strip() if head else None,
        ledger=ledger,
        checkpoint_runtime=checkpoint_runtime,
        smoke_record=smoke_record,
    )
