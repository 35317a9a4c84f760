"""Curves of one or several runs in one PNG: training reward, eval reward and KL against step.

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display, no global figure
state), so it works headless and the caller gets the Figure back: its Line2D data are exactly the
numbers read from the runs' metrics.jsonl.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlaunch.view.runs import Curve, RunStore

PANELS = (
    ("reward", "training reward (mean)"),
    ("eval", "eval reward (greedy)"),
    ("kl", "KL to the reference"),
)
"""The three axes, left to right: (key, title)."""

CURVES_FILE = "curves.png"
"""What a followed launch writes beside its launch YAML."""


def _points(curve: Curve, panel: str) -> tuple[list[int], list[float]]:
    if panel == "reward":
        return curve.series("reward_mean")
    if panel == "eval":
        return curve.eval_series()
    return curve.series("kl")


def draw(curves: Sequence[Curve]) -> Any:
    """The Figure (matplotlib.figure.Figure) of `curves`: one axis per panel, one line per run
    labelled with its identity."""
    # Lazy: matplotlib costs ~0.5 s to import, and only `plot` (and the end of a launch) draws.
    from matplotlib.figure import Figure

    figure = Figure(figsize=(15, 4.5), dpi=100, layout="constrained")
    axes = figure.subplots(1, len(PANELS))
    for axis, (panel, title) in zip(axes, PANELS, strict=True):
        for curve in curves:
            steps, values = _points(curve, panel)
            axis.plot(steps, values, marker="o" if panel == "eval" else None,
                      markersize=4, linewidth=1.5, label=curve.identity)
        axis.set_title(title)
        axis.set_xlabel("step")
        axis.grid(True, alpha=0.3)
    axes[0].set_ylabel("reward")
    axes[-1].set_ylabel("KL")
    axes[0].legend(fontsize="small", loc="best")
    return figure


def write_png(curves: Sequence[Curve], out: Path) -> Any:
    """Draw `curves` and write them to `out` (PNG); returns the Figure."""
    figure = draw(curves)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, format="png")
    return figure


def default_output(identities: Sequence[str]) -> Path:
    """`dist/plots/<name>-<version>.png` for one run, `...-and-<n>-more.png` for several."""
    first = identities[0].replace("@", "-").replace("/", "_")
    suffix = f"-and-{len(identities) - 1}-more" if len(identities) > 1 else ""
    return Path("dist") / "plots" / f"{first}{suffix}.png"


def plot_finished_run(runs: RunStore, name: str, version: str, out: Path) -> Path | None:
    """The curves of one run, written after its launch ends; None when it logged no metrics (a
    runtime that writes no metrics.jsonl)."""
    curve = runs.curve(name, version, runs.record(name, version))
    if not curve.steps and not curve.evals:
        return None
    write_png([curve], out)
    return out
