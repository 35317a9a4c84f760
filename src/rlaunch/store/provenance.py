"""Where a build came from: the launching checkout's git commit and the time."""

from __future__ import annotations

import subprocess
from pathlib import Path


def launcher_commit(cwd: Path | None = None) -> str | None:
    """`git rev-parse HEAD` of the checkout the build is launched from; None outside git
    (a Pants sandbox, a cluster job): the record then says so instead of guessing."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd or Path.cwd(),
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None
