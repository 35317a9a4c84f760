"""The tree is ruff clean: ruff's default rules and the line length of pyproject.toml, over the
library, the plugin, the tests and the scripts (the ruff of the project runtime, pinned in
3rdparty/requirements.lock)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHECKED = ("src", "pants-plugins", "tests", "scripts", "examples", "benchmarks")


def ruff(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    # --no-cache: no .ruff_cache in the checkout.
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def test_the_tree_is_ruff_clean() -> None:
    done = ruff("--output-format", "concise", *CHECKED)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_line_over_the_limit_is_found(tmp_path: Path) -> None:
    """The settings the check runs with are the repository's: a 101-character line fails."""
    (tmp_path / "pyproject.toml").write_text((REPO / "pyproject.toml").read_text())
    (tmp_path / "long.py").write_text("X = " + repr("x" * 95) + "\n")
    done = ruff("--output-format", "concise", "long.py", cwd=tmp_path)
    assert done.returncode == 1
    assert "long.py:1:101: E501 Line too long (101 > 100)" in done.stdout
