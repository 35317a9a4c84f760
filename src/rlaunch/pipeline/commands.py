"""`rlaunch build FILE` for artifacts that read runs' exports (an eval stage): the runs that
have not finished are launched first, as a pipeline, then the artifact is built.

The command is the builders' own `build` (same options and messages) with that step in front;
an artifact that reads no run builds exactly as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from rlaunch.builders import commands as builders_commands
from rlaunch.builders.commands import ArtifactFileError, load_artifact
from rlaunch.pipeline.plan import artifact_runs
from rlaunch.pipeline.runner import run_pipeline
from rlaunch.spec.artifacts import identity

_BUILD = builders_commands.build


def _build(file: Path, store_prefix: str | None, only: bool, dry_run: bool,
           out_dir: Path | None, **options: Any) -> None:
    try:
        artifact = load_artifact(file)
    except ArtifactFileError as err:
        click.echo(err.render(), err=True)
        raise SystemExit(2) from None
    runs = artifact_runs(artifact)
    if runs and not only and not options.get("list_only"):
        # A graph the build would refuse launches no run first (an eval's report as a model).
        builders_commands.refuse_broken_graph(file, artifact)
        code = run_pipeline(runs, title=identity(artifact), source=str(file),
                            out_dir=out_dir or Path("dist"), store=store_prefix, repo=None,
                            dry_run=dry_run, line=click.echo,
                            say=lambda text: click.echo(text, err=True))
        if code or dry_run:
            raise SystemExit(code)
    click.get_current_context().invoke(_BUILD, file=file, store_prefix=store_prefix, **options)


build = click.Command(
    "build",
    callback=_build,
    params=[
        *_BUILD.params,
        click.Option(["--only"], is_flag=True,
                     help="An artifact that reads runs' exports: build it alone, without "
                          "launching the runs that have not finished (the build then refuses "
                          "it and says how to launch them)."),
        click.Option(["--out-dir"], type=click.Path(file_okay=False, path_type=Path),
                     help="Where the launch YAMLs of the runs it launches go, one folder per "
                          "run (default dist/)."),
        click.Option(["--dry-run"], is_flag=True,
                     help="An artifact that reads runs' exports: print the pipeline's plan and "
                          "preflight the runs to launch; launch and build nothing."),
    ],
    help=(_BUILD.help or "") + "\n\nAn artifact whose graph reads another run's export (an "
    "eval stage's model) launches that run first, with every unfinished run upstream of it, "
    "as `rlaunch launch` of a pipeline does; then it is built.",
    short_help=_BUILD.short_help,
)
