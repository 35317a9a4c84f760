"""`rlaunch sweep SPEC...`: launch the points of a sweep, one line per point, then plot them."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rlaunch.interrupts import install as install_interrupts
from rlaunch.launch import EXIT_INTERRUPTED, EXIT_OK, LaunchRefused, resolve_store
from rlaunch.spec import SpecError, load_spec
from rlaunch.sweep.runner import SweepPoint, run_sweep
from rlaunch.view import RunStore, ViewError
from rlaunch.view.plot import CURVES_FILE, write_png


def _say(message: str) -> None:
    click.echo(message, err=True)


@click.command("sweep")
@click.argument("spec_paths", metavar="SPEC...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default="dist",
              show_default=True,
              help="Each point's launch YAML goes to OUT_DIR/<run name>/launch.yaml, the "
                   "sweep's curves to OUT_DIR/curves.png.")
@click.option("--store", metavar="PREFIX",
              help="Artifact store prefix (as for `rlaunch launch`).")
@click.option("--repo", type=click.Path(file_okay=False, path_type=Path),
              help="The launcher checkout whose git commit and cleanliness are recorded.")
@click.option("--max-parallel", type=click.IntRange(min=1), default=4, show_default=True,
              help="Points running at once on an executor that allows it (the local executor "
                   "runs one at a time on its head).")
def sweep_command(spec_paths: tuple[str, ...], out_dir: Path, store: str | None,
                  repo: Path | None, max_parallel: int) -> None:
    """Launch every SPEC of a sweep: smokes first, then the points in order, each exactly as
    `rlaunch launch SPEC` would. Prints one line per point as it starts and ends, then where the
    curves of the full points are. Exit 0 only if every point succeeded, else the exit code of
    the first that did not (1 refused, 3 failed or stopped), and 130 when Ctrl-C or SIGTERM
    interrupted it: no point starts after it, and the jobs of the points running are stopped
    and recorded (a second Ctrl-C while the sweep waits for that leaves at once)."""
    points = []
    for path in spec_paths:
        try:
            points.append(SweepPoint(path, load_spec(path)))
        except SpecError as err:
            _say(err.render())
            sys.exit(1)
    install_interrupts()
    try:
        outcomes = run_sweep(points, out_dir=out_dir, store=store, repo=repo,
                             max_parallel=max_parallel, line=click.echo, say=_say)
    except KeyboardInterrupt:
        # One no launch handled itself (in a point's preflight, say, or a second one while a
        # launch recorded the first); the head the sweep started is stopped on the way out.
        _say("sweep: interrupted; what each point has recorded: `rlaunch status NAME@VERSION`")
        sys.exit(EXIT_INTERRUPTED)
    succeeded = sum(1 for outcome in outcomes if outcome.status == "SUCCEEDED")
    click.echo(f"sweep: {succeeded} of {len(outcomes)} runs succeeded")
    _plot([p for p in points if p.spec.smoke_of is None], store, out_dir / CURVES_FILE)
    if any(outcome.exit_code == EXIT_INTERRUPTED for outcome in outcomes):
        sys.exit(EXIT_INTERRUPTED)
    failed = [outcome.exit_code for outcome in outcomes if outcome.exit_code != EXIT_OK]
    sys.exit(failed[0] if failed else EXIT_OK)


def _plot(points: list[SweepPoint], store: str | None, out: Path) -> None:
    curves = []
    try:
        for point in points:
            spec = point.spec
            runs = RunStore(resolve_store(spec, store)[1])
            record = runs.ledger.read(spec.name, spec.version)
            curve = runs.curve(spec.name, spec.version, record) if record else None
            if curve is not None and (curve.steps or curve.evals):
                curves.append(curve)
    except (ViewError, LaunchRefused) as err:
        _say(f"rlaunch: no curves for the sweep: {err}")
        return
    if curves:
        write_png(curves, out)
        click.echo(f"sweep: curves of {len(curves)} runs (reward, eval reward, KL by step): "
                   f"{out}")
