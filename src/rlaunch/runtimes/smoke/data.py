"""Problems from a dataset artifact (runtime-format parquet), and the order a run consumes them in.

The order is a pure function of (seed, step): step s (1-based) takes batch (s-1) mod E of
epoch (s-1) // E, where E = rows // train_batch_size (the tail that does not fill a batch is
dropped) and every epoch is a fresh seeded shuffle. Resuming needs only the step.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

from rlaunch.tasks.parquet import PromptFileError, read_countdown
from rlaunch.tasks.prompts import EVAL_FILE, TRAIN_FILE


class DataError(ValueError):
    """A dataset artifact the smoke runtime cannot read."""


def read_problems(directory: Path, filename: str, slot: str) -> list[dict]:
    """The countdown problems of a runtime-format prompt file (the rows SkyRL reads too)."""
    path = directory / filename
    if not path.is_file():
        present = sorted(p.name for p in directory.glob("*.parquet")) if directory.is_dir() else []
        found = f"it has {', '.join(present)}" if present else "it has no .parquet file"
        raise DataError(
            f"inputs.{slot}.uri is {directory}: expected {filename} there ({found}); build the "
            f"dataset artifact first (a countdown_data builder writes {TRAIN_FILE} and {EVAL_FILE})"
        )
    try:
        return read_countdown(path, slot)
    except PromptFileError as err:
        raise DataError(str(err)) from None


def derived_seed(*parts: object) -> int:
    """A 63-bit seed from any parts (stable across processes, unlike hash())."""
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def steps_per_epoch(rows: int, train_batch_size: int) -> int:
    return rows // train_batch_size


def batch_for_step(
    problems: list[dict], step: int, *, seed: int, train_batch_size: int
) -> list[dict]:
    per_epoch = steps_per_epoch(len(problems), train_batch_size)
    epoch, index = divmod(step - 1, per_epoch)
    order = list(range(len(problems)))
    random.Random(derived_seed(seed, "epoch", epoch)).shuffle(order)
    chosen = order[index * train_batch_size : (index + 1) * train_batch_size]
    return [problems[i] for i in chosen]


def data_position(step: int, rows: int, train_batch_size: int) -> dict:
    """Where the data stream stands after `step` steps."""
    per_epoch = steps_per_epoch(rows, train_batch_size)
    epoch, batch = divmod(step, per_epoch)
    return {"epoch": epoch, "batch_in_epoch": batch, "consumed_prompts": step * train_batch_size,
            "steps_per_epoch": per_epoch}
