"""Run one script of benchmarks/ as the suite does: in a fresh process, with `src` and `tests` on
its path. Both layers that run benchmarks use it (tests/benchmarks for the library,
tests/e2e for those that run ./pants); test_benchmarks.py reads their calls to it to find which
benchmarks the suite runs, and with which arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"


def run_benchmark(name: str, *args: str, python: str = sys.executable,
                  temp: Path | None = None) -> list[str]:
    """The lines `python benchmarks/NAME ARGS` printed on stdout, once it exited 0. `temp` is its
    TMPDIR (where it makes its scratch folders), for those that leave files there."""
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO / 'tests'}"}
    if temp is not None:
        env["TMPDIR"] = str(temp)
    result = subprocess.run([python, str(BENCHMARKS / name), *args], capture_output=True,
                            text=True, timeout=600, env=env, check=False)
    assert result.returncode == 0, (
        f"benchmarks/{name} {' '.join(args)} exited {result.returncode}:\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return result.stdout.splitlines()
