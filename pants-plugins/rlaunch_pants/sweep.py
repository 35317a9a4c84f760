"""`rl_sweep`: the runs of one sweep declaration (build-support/experiments.py's `rl_sweep_runs`
writes the points, their smokes and this target), so that `./pants run <sweep>` launches them and
`check` and `package` of the sweep cover them."""

from __future__ import annotations

from dataclasses import dataclass

from pants.engine.addresses import Address, Addresses
from pants.engine.rules import Get, collect_rules, rule
from pants.engine.target import (
    COMMON_TARGET_FIELDS,
    Dependencies,
    DependenciesRequest,
    InvalidFieldException,
    Target,
    Targets,
)
from pants.util.strutil import help_text

from rlaunch_pants.fields import PositiveIntField
from rlaunch_pants.run_fields import RlRunRolePlanField


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
        `rl_sweep_runs` macro (build-support/experiments.py) beside the points themselves.
        `check` and `package` of the sweep check and package each of its runs as itself.

            rl_sweep(name="sweep", dependencies=[":sweep-smoke", ":sweep-lr0.0003"])
        """
    )


@dataclass(frozen=True)
class SweepRunsRequest:
    address: Address
    runs: RlSweepRunsField


class SweepRuns(Targets):
    """The rl_run targets of one sweep, in declared order."""


@rule(desc="Finding the runs of an rl_sweep")
async def sweep_runs(request: SweepRunsRequest) -> SweepRuns:
    addresses = await Get(Addresses, DependenciesRequest(request.runs))
    targets = await Get(Targets, Addresses, addresses)
    others = [str(t.address) for t in targets if not t.has_field(RlRunRolePlanField)]
    if others or not targets:
        raise InvalidFieldException(
            f"The 'dependencies' field in target {request.address} must list rl_run targets "
            f"only (the points of the sweep and their smokes), but was "
            f"{sorted(others) if others else 'empty'}"
        )
    return SweepRuns(targets)


def rules():  # type: ignore[no-untyped-def]
    return collect_rules()
