"""The `rlaunch` command line: a click group; each package adds its own subcommands below."""

from __future__ import annotations

import click

from rlaunch import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="rlaunch", message="%(prog)s %(version)s")
def main() -> None:
    """rlaunch: declare RL post-training experiments as build targets, preflight them, render one
    launch YAML and submit it.

    Models, datasets, tokenizers, the RL runtime, the role plan and the cluster placement are
    pinned specs. Preflight proves, before any GPU is paid for, that a launch is sound: geometry,
    batch sizes, pins, versions, paths. The launch YAML is the single boundary to the runtime, and
    every front end submits through the same executor plugins.

    Usually driven through Pants (`./pants check|package|run <target>`); these commands are the
    library's own front end, which the Pants plugin calls too. `rlaunch COMMAND --help` tells
    what a command below does.
    """


# Subcommands: one `main.add_command(...)` line per command, imported from the package that owns it,
# e.g.
#   from rlaunch.preflight.commands import preflight, rules
#   main.add_command(rules)
#   main.add_command(preflight)
# ---- subcommands: add below this line ----
from rlaunch.render.commands import render  # noqa: E402
main.add_command(render)
from rlaunch.builders.commands import build  # noqa: E402
main.add_command(build)
from rlaunch.preflight.commands import preflight, rules  # noqa: E402
main.add_command(rules)
main.add_command(preflight)
from rlaunch.executors.commands import launch_command, logs_command, status_command, stop_command  # noqa: E402,E501
main.add_command(launch_command)
main.add_command(status_command)
main.add_command(logs_command)
main.add_command(stop_command)
