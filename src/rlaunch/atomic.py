"""Atomic local writes: a reader sees the old file or the new one, never half of one.

Every record this project writes last (ledger records, checkpoint pointers, launch YAMLs,
artifact records, run specs) goes through here.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomically(path: str | os.PathLike, text: str, *, mode: int = 0o644) -> Path:
    """Write `text` to a temporary file beside `path`, flush it to disk, then rename it over
    `path`. `mode` is applied before the rename (mkstemp files are private by default)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_json_atomically(path: str | os.PathLike, value: Any, *, mode: int = 0o644) -> Path:
    """Pretty, key-sorted JSON with a final newline, written atomically."""
    return write_text_atomically(path, json.dumps(value, indent=2, sort_keys=True) + "\n",
                                 mode=mode)


def replace_folder(staging: Path, target: Path, trash: Path) -> None:
    """Put a finished `staging` folder at `target` by rename (same filesystem), moving a previous
    `target` aside to `trash` first and removing it after: `target` is whole at every moment
    it exists."""
    moved = False
    if target.exists():
        os.rename(target, trash)
        moved = True
    os.rename(staging, target)
    if moved:
        shutil.rmtree(trash, ignore_errors=True)
