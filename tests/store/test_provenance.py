"""Provenance: the launching checkout's commit, or null outside git."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from rlaunch.clock import utc_now
from rlaunch.store.provenance import launcher_commit


def test_the_commit_of_a_git_checkout_and_none_outside(tmp_path: Path) -> None:
    assert launcher_commit(tmp_path) is None
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True,
                              text=True)
        return done.stdout.strip()

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    head = git("rev-parse", "HEAD")
    assert launcher_commit(tmp_path) == head


def test_times_are_utc_iso_with_z() -> None:
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", utc_now())
