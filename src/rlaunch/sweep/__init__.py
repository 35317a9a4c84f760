"""Sweeps: many runs from one declaration, launched one after another (or several at once where
the executor allows), one line per point as it progresses (docs/runs.md, "Sweeps")."""

from rlaunch.sweep.runner import PointOutcome, launch_order, run_sweep

__all__ = ["PointOutcome", "launch_order", "run_sweep"]
