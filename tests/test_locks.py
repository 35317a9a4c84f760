"""rlaunch.locks: the one lock mechanism of the library."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

from rlaunch.locks import exclusive, read_holder, try_exclusive

SRC = Path(__file__).resolve().parents[1] / "src"

HOLD = """
import sys, time
from pathlib import Path
from rlaunch.locks import exclusive
with exclusive(Path(sys.argv[1])):
    print("HELD", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_exclusive_waits_for_the_holder_and_says_so_once(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "x.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path), "1.5"],
                              env={**os.environ, "PYTHONPATH": str(SRC)},
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "HELD"
        waits: list[float] = []
        started = time.monotonic()
        with exclusive(path, on_wait=lambda: waits.append(time.monotonic() - started)):
            waited = time.monotonic() - started
        assert len(waits) == 1
        assert waited >= 0.5  # it got the lock only after the holder let go
    finally:
        holder.wait(timeout=30)


def test_try_exclusive_gives_one_holder_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "launch.lock"
    first = try_exclusive(path, {"pid": 123, "host": "here"})
    assert first is not None
    assert try_exclusive(path, {"pid": 456, "host": "there"}) is None
    assert read_holder(path) == {"pid": 123, "host": "here"}
    first.release()
    assert read_holder(path, wait_s=0) is None  # the holder is cleared on release
    second = try_exclusive(path, {"pid": 456, "host": "there"})
    assert second is not None
    second.release()


def test_no_other_module_takes_a_lock_its_own_way() -> None:
    others = []
    for path in sorted((SRC / "rlaunch").rglob("*.py")):
        if path.name == "locks.py" and path.parent.name == "rlaunch":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [alias.name for alias in node.names] if isinstance(node, ast.Import)
                else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            )
            others += [f"{path.relative_to(SRC)} imports {name}" for name in names
                       if name.split(".")[0] in ("fcntl", "filelock")]
    assert others == []
