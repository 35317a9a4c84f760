"""What a checkpoint root holds, read once before a launch resumes from it.

The resume rules (rlaunch.preflight.rules.resume) judge whether a root can be resumed by the
plan about to launch: the pointer, the step folders, and the files of the step the run would
load. Reading them is the store's business, so it happens here, on any fsspec filesystem; the
rules only compare names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rlaunch.ledger.errors import LedgerError
from rlaunch.paths import LATEST_CHECKPOINT_FILE, join
from rlaunch.store.fs import StoreError, open_location

STEP_FOLDER = re.compile(r"global_step_(\d+)")


@dataclass(frozen=True)
class CheckpointListing:
    """A checkpoint root (or, for `resume.mode from_path`, one step folder) as it is now."""

    root: str
    pointer: str | None
    """The text of latest_ckpt_global_step.txt, stripped; None when there is none."""
    steps: tuple[int, ...]
    """The N of every global_step_N folder, ascending."""
    step: int | None
    """The step whose files are listed: the pointer's, or the step folder given."""
    files: frozenset[str] | None
    """Paths of the files in that step's folder, relative to it; None when it does not exist."""


def _relative_files(fs, folder: str) -> frozenset[str] | None:
    try:
        found = fs.find(folder, withdirs=False)
    except FileNotFoundError:
        return None
    if not found and not fs.isdir(folder):
        return None
    base = folder.rstrip("/") + "/"
    return frozenset(path[len(base):] if path.startswith(base) else path for path in found)


def read_checkpoints(root: str) -> CheckpointListing | None:
    """The root's pointer, step folders and the pointed step's files; None when the root holds
    neither a pointer nor a step folder (nothing to resume)."""
    try:
        location = open_location(root, "checkpoint root")
    except StoreError as err:
        raise LedgerError(str(err)) from None
    fs, base = location.fs, location.root
    try:
        entries = fs.ls(base, detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise LedgerError(f"cannot list the checkpoint root {root}: {err}") from None
    names = [entry.rstrip("/").rsplit("/", 1)[-1] for entry in entries]
    steps = tuple(sorted(int(m.group(1)) for name in names if (m := STEP_FOLDER.fullmatch(name))))
    pointer = None
    if LATEST_CHECKPOINT_FILE in names:
        try:
            pointer = fs.cat_file(join(base, LATEST_CHECKPOINT_FILE)).decode(
                "utf-8", "replace").strip()
        except OSError as err:
            raise LedgerError(f"cannot read {join(root, LATEST_CHECKPOINT_FILE)}: {err}") from None
    if pointer is None and not steps:
        return None
    step = int(pointer) if pointer is not None and pointer.isdigit() else None
    files = None if step is None else _relative_files(fs, join(base, f"global_step_{step}"))
    return CheckpointListing(root, pointer, steps, step, files)


def read_step_folder(folder: str) -> CheckpointListing:
    """One global_step_N folder named by hand (`resume.path`): its files."""
    try:
        location = open_location(folder, "resume.path")
    except StoreError as err:
        raise LedgerError(str(err)) from None
    match = STEP_FOLDER.fullmatch(location.root.rstrip("/").rsplit("/", 1)[-1])
    files = _relative_files(location.fs, location.root)
    step = int(match.group(1)) if match else None
    return CheckpointListing(folder, None, () if step is None else (step,), step, files)


def list_checkpoints(path: str) -> CheckpointListing | None:
    """`World.checkpoints`: a checkpoint root, or one `global_step_N` folder (`resume.path`)."""
    if STEP_FOLDER.fullmatch(path.rstrip("/").rsplit("/", 1)[-1]):
        return read_step_folder(path)
    return read_checkpoints(path)
