"""Adapter for the `skyrl` runtime: `python -m rlaunch.runtimes.skyrl LAUNCH_YAML`.

SkyRL's entrypoint builds its config from `key.path=value` overrides on its command line, not
from a file. This adapter reads the launch YAML, turns its `skyrl` subtree into exactly those
overrides (nothing else is added: the YAML stays the only boundary) and replaces itself with
`python -m <runtime.entrypoint> <overrides...>` in the same process, so signals, exit status
and logs are SkyRL's own.
"""

from __future__ import annotations

import os
import sys

from rlaunch.render import LaunchDocument, LaunchError, load_launch
from rlaunch.render.skyrl import skyrl_cli_args


def command(launch: LaunchDocument) -> list[str]:
    """The argv that runs SkyRL on this launch document."""
    return [sys.executable, "-m", launch.runtime.entrypoint, *skyrl_cli_args(launch.skyrl_tree())]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m rlaunch.runtimes.skyrl LAUNCH_YAML", file=sys.stderr)
        return 2
    try:
        launch = load_launch(args[0])
    except LaunchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    argv_out = command(launch)
    print(f"rlaunch: starting SkyRL: {argv_out[1]} {argv_out[2]} ({len(argv_out) - 3} overrides)",
          file=sys.stderr, flush=True)
    os.execv(argv_out[0], argv_out)
    return 0  # not reached: execv replaces the process


if __name__ == "__main__":
    sys.exit(main())
