"""Entry point of the `rlaunch_pants` backend (listed in pants.toml's `backend_packages`)."""

from __future__ import annotations

from collections.abc import Iterable

from pants.engine.rules import Rule

from rlaunch_pants import origins, process, references, specs, sweep
from rlaunch_pants import target_types as types
from rlaunch_pants.goals import check, package, plans, run, run_sweep
from rlaunch_pants.subsystem import RlaunchSubsystem


def target_types() -> list[type]:
    return types.target_types()


def rules() -> Iterable[Rule]:
    return [
        *RlaunchSubsystem.rules(),
        *references.rules(),
        *origins.rules(),
        *specs.rules(),
        *process.rules(),
        *check.rules(),
        *package.rules(),
        *plans.rules(),
        *run.rules(),
        *run_sweep.rules(),
        *sweep.rules(),
    ]
