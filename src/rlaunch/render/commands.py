"""`rlaunch render`: write the launch YAML of a spec file."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rlaunch.paths import resolve_store_prefix
from rlaunch.render.document import RenderError
from rlaunch.render.output import render_launch, write_atomically
from rlaunch.spec import SpecError, load_spec


@click.command("render")
@click.argument("spec_file", metavar="SPEC", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "output",
    required=True,
    metavar="FILE",
    help="Where to write the launch YAML (atomically); `-` writes it to stdout.",
)
@click.option(
    "--store",
    "store",
    metavar="PREFIX",
    default=None,
    help="Artifact store prefix (/data/rlaunch, gs://bucket/rlaunch). Default: the spec's "
    "execution.store_prefix, else $RLAUNCH_STORE, else ~/.cache/rlaunch/store.",
)
@click.option(
    "--launcher-commit",
    metavar="SHA",
    default=None,
    help="40-hex commit of the launcher checkout, recorded as runtime.launcher_commit.",
)
def render(spec_file: Path, output: str, store: str | None, launcher_commit: str | None):
    """Render the launch YAML of the RunSpec file SPEC (YAML or JSON) into FILE.

    The same spec and options always give the same bytes. Render does not judge the spec:
    it writes what the spec says, even where preflight would refuse it. `rlaunch preflight`
    checks a spec, and launching refuses one with findings. Exit status: 0 written, 2 the spec
    or an option is unusable, 1 the file could not be written.
    """
    try:
        spec = load_spec(spec_file)
    except SpecError as err:
        click.echo(err.render(), err=True)
        sys.exit(2)
    prefix = resolve_store_prefix(store, spec.execution.store_prefix)
    try:
        text = render_launch(spec, store_prefix=prefix, launcher_commit=launcher_commit)
    except RenderError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(2)
    if output == "-":
        click.echo(text, nl=False)
        return
    try:
        written = write_atomically(output, text)
    except OSError as err:
        click.echo(f"error: cannot write the launch YAML to {output}: {err.strerror}", err=True)
        sys.exit(1)
    click.echo(f"rendered {spec.identity} -> {written}", err=True)
