"""benchmarks/pants_check.py once at its smallest size (it runs the real ./pants in a scratch copy
of the repository and stops that copy's pantsd): it must run to the end, find in every synthetic
run the findings it expects, and print its table (the times themselves are not asserted)."""

from __future__ import annotations

import re
from pathlib import Path

from benchmarks.runner import run_benchmark


def test_pants_check_prints_list_and_check_times_of_its_synthetic_runs(tmp_path: Path) -> None:
    lines = run_benchmark("pants_check.py", "--sizes", "10", "--repeat", "1", temp=tmp_path)
    assert lines[0].split(" | ") == [f"{title:>11}" for title in (
        "runs", "cold list", "cold check", "warm list", "first check", "warm check",
        "warm check/list")], lines
    assert re.fullmatch(r" +10(?: \| +[\d.]+s){5} \| +[\d.]+x", lines[1]), lines[1]
    assert lines[2:] == ["check found in each synthetic run: 1 warning BATCH010 (as expected)",
                         "target: warm check within 1.5x of warm list at 200 runs"]
    # Its scratch copies, not Pants' own temporary files.
    assert list(tmp_path.glob("rlaunch-pants-bench-*")) == []
