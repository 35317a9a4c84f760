"""The `rlaunch` command line: a click group of the commands each package defines."""

from __future__ import annotations

import click

from rlaunch import __version__
from rlaunch.builders.commands import pin
from rlaunch.launch_commands import launch_command, logs_command, status_command, stop_command
from rlaunch.pipeline.commands import build
from rlaunch.plans.commands import plans_command
from rlaunch.preflight.commands import preflight, rules, settings_command, upgrade_check_command
from rlaunch.render.commands import render
from rlaunch.sweep.commands import sweep_command
from rlaunch.view.commands import ls_command, plot_command, show_command


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


# Each package owns its commands; this group only lists them.
for command in (
    rules,
    settings_command,
    preflight,
    upgrade_check_command,
    plans_command,
    render,
    build,
    pin,
    launch_command,
    status_command,
    logs_command,
    stop_command,
    ls_command,
    show_command,
    plot_command,
    sweep_command,
):
    main.add_command(command)
