"""A scratch copy of the repository for end-to-end tests that must change files or git state
(BUILD files broken at parse time, a commit to diff against), with its own pantsd, which
`ScratchRepo.close` stops (only that one: it is found by the copy's own pid file)."""

from __future__ import annotations

import copy
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

# What ./pants needs to run the backend on the experiments; tests/ and dist/ stay behind.
COPIED = (
    "pants",
    "pants.toml",
    "BUILD",
    ".gitignore",
    "3rdparty",
    "scripts",
    "pants-plugins",
    "build-support",
    "src",
    "experiments",
)
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


class ScratchRepo:
    def __init__(self, source: Path, root: Path) -> None:
        self.root = root
        # The caller's environment as a user's shell has it (the test layer's PYTHONPATH is not).
        self.env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
        for name in COPIED:
            path = source / name
            if path.is_dir():
                shutil.copytree(path, root / name, ignore=IGNORED, symlinks=True)
            elif path.exists():
                shutil.copy2(path, root / name)

    def view(self) -> ScratchRepo:
        """The same copy (its files, its pantsd), with an environment of its own to change."""
        other = copy.copy(self)
        other.env = dict(self.env)
        return other

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=rlaunch e2e", "-c", "user.email=e2e@rlaunch.invalid", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def commit_all(self, message: str) -> None:
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def write(self, relpath: str, text: str) -> None:
        path = self.root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def runtime_python(self) -> str:
        """The project runtime's interpreter (`scripts/runtime` of the copy)."""
        done = subprocess.run(
            [str(self.root / "scripts" / "runtime")],
            cwd=self.root, env=self.env, capture_output=True, text=True, check=True,
        )
        return done.stdout.strip()

    def pants(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.root / "pants"), *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    def close(self) -> None:
        self.stop_pantsd()

    def stop_pantsd(self) -> None:
        """Stop the copy's pantsd, if one runs, and wait until it is gone: the next ./pants
        starts a new one, which reads the files as they are then."""
        for pid_file in self.root.glob(".pids/*/pantsd/pid"):
            try:
                pid = int(pid_file.read_text().strip())
                # pantsd retitles itself "pantsd [<buildroot>]": never signal a reused pid.
                if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"pantsd"):
                    continue
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError):
                continue
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
