"""The command line's own surface: `python -m rlaunch --version` and `--help`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

HELP_HEAD = """\
Usage: rlaunch [OPTIONS] COMMAND [ARGS]...

  rlaunch: declare RL post-training experiments as build targets, preflight
  them, render one launch YAML and submit it.

  Models, datasets, tokenizers, the RL runtime, the role plan and the cluster
  placement are pinned specs. Preflight proves, before any GPU is paid for,
  that a launch is sound: geometry, batch sizes, pins, versions, paths. The
  launch YAML is the single boundary to the runtime, and every front end
  submits through the same executor plugins.

  Usually driven through Pants (`./pants check|package|run <target>`); these
  commands are the library's own front end, which the Pants plugin calls too.
  `rlaunch COMMAND --help` tells what a command below does.

Options:
  --version   Show the version and exit.
  -h, --help  Show this message and exit.
"""


def run_python(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def run_rlaunch(*args: str) -> subprocess.CompletedProcess[str]:
    return run_python("-m", "rlaunch", *args)


def registered_commands() -> list[str]:
    code = "from rlaunch.cli import main; print(*sorted(main.commands), sep='\\n')"
    result = run_python("-c", code)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_version() -> None:
    result = run_rlaunch("--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, "rlaunch 0.1.0\n", "")


def test_help() -> None:
    result = run_rlaunch("--help")
    assert (result.returncode, result.stderr) == (0, "")
    # Subcommands are added by other packages; the text above them is fixed, and the "Commands:"
    # section below it lists exactly the registered commands.
    assert result.stdout.startswith(HELP_HEAD), result.stdout
    rest = result.stdout[len(HELP_HEAD) :]
    commands = registered_commands()
    if commands:
        assert rest.startswith("\nCommands:\n"), rest
        # A command's line starts with two spaces; its wrapped help continues further indented.
        listed = [
            line.split()[0]
            for line in rest.splitlines()[2:]
            if line.startswith("  ") and not line.startswith("   ")
        ]
        assert sorted(listed) == commands
    else:
        assert rest == ""


def test_short_help_option_is_the_same() -> None:
    assert run_rlaunch("-h").stdout == run_rlaunch("--help").stdout
