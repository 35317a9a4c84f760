"""The World: defaults, and `current_world` from a real environment and git checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rlaunch.preflight import World, current_world


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout.strip()


def test_default_world_knows_nothing() -> None:
    world = World(store_prefix="/srv/s")
    assert (world.git_dirty, world.launcher_commit, dict(world.env)) == (None, None, {})
    assert world.ledger("a", "2026.11.29") is None
    assert world.smoke_record("a", "2026.11.29") is None
    assert world.checkpoint_runtime("/srv/s/a/2026.11.29/checkpoints") is None


def test_default_store_prefix_follows_rlaunch_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLAUNCH_STORE", "gs://bucket/store")
    assert World().store_prefix == "gs://bucket/store"


def test_current_world_reads_git_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLAUNCH_TEST_VAR", "1")
    outside = current_world(cwd=tmp_path)
    assert (outside.git_dirty, outside.launcher_commit) == (None, None)
    assert outside.env["RLAUNCH_TEST_VAR"] == "1"

    git(tmp_path, "init", "-q")
    (tmp_path / "BUILD").write_text("x\n")
    git(tmp_path, "add", "BUILD")
    git(tmp_path, "commit", "-q", "-m", "first")
    head = git(tmp_path, "rev-parse", "HEAD")
    clean = current_world(cwd=tmp_path)
    assert (clean.git_dirty, clean.launcher_commit) == (False, head)

    (tmp_path / "BUILD").write_text("y\n")
    assert current_world(cwd=tmp_path).git_dirty is True


def test_an_untracked_file_makes_the_launcher_tree_dirty(tmp_path: Path) -> None:
    """A calendar version must not launch from a BUILD file that is not committed (issue 13):
    untracked files count, ignored ones (dist/, caches) do not."""
    git(tmp_path, "init", "-q")
    (tmp_path / ".gitignore").write_text("*.log\n")
    git(tmp_path, "add", ".gitignore")
    git(tmp_path, "commit", "-q", "-m", "first")
    (tmp_path / "launch.log").write_text("ignored\n")
    # dist/ is where launches write their YAML: a smoke's must not block its full run.
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "launch.yaml").write_text("written by a launch\n")
    assert current_world(cwd=tmp_path).git_dirty is False
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "BUILD").write_text("rl_run(...)\n")
    assert current_world(cwd=tmp_path).git_dirty is True
