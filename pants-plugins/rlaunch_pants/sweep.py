"""`rl_sweep`: the runs of one sweep declaration (build-support/experiments.py's `rl_sweep_runs`
writes the points, their smokes and this target), so that `./pants run <sweep>` launches them."""

from __future__ import annotations

from pants.engine.target import COMMON_TARGET_FIELDS, Dependencies, Target
from pants.util.strutil import help_text

from rlaunch_pants.fields import PositiveIntField


class RlSweepRunsField(Dependencies):
    help = help_text(
        """
        The `rl_run` targets of the sweep: every point and the smoke of each distinct geometry.
        `./pants run` launches the smokes first, then the points.

            dependencies=[":sweep-smoke", ":sweep-lr0.0003-kl0.001", ":sweep-lr0.001-kl0.001"]
        """
    )


class RlSweepMaxParallelField(PositiveIntField):
    alias = "max_parallel"
    default = 4
    help = help_text(
        """
        How many points run at once on an executor that allows it (`ray`, `iris`). The `local`
        executor runs them one after another on one Ray head whatever this says.

            max_parallel=8
        """
    )


class RlSweepTarget(Target):
    alias = "rl_sweep"
    core_fields = (*COMMON_TARGET_FIELDS, RlSweepRunsField, RlSweepMaxParallelField)
    help = help_text(
        """
        A sweep: many `rl_run` points of one declaration, launched together by `./pants run`
        (one line per point as it progresses, then one PNG of their curves). Written by the
        `rl_sweep_runs` macro (build-support/experiments.py) beside the points themselves,
        which `check` and `package` see like any run.

            rl_sweep(name="sweep", dependencies=[":sweep-smoke", ":sweep-lr0.0003"])
        """
    )
