"""LAUNCH001, the smoke gate: a launch check (family `launch`, scope `world`).

It reads the ledger under the launch lock, so the launch runs it (`rlaunch.launch.preflight`)
besides the preflight rules; `rlaunch rules` lists it with them. A smoke's success is recorded
for its full run by `rlaunch.ledger.smoke`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rlaunch.ledger.ledger import Ledger
from rlaunch.ledger.smoke import role_geometry
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import launch_check
from rlaunch.preflight.rules.smoke import leaves
from rlaunch.spec import RunSpec
from rlaunch.spec.examples import worked_example
from rlaunch.spec.io import parse_spec
from rlaunch.spec.syntax import is_calendar
from rlaunch.status import AttemptStatus

SMOKE_GATE_CODE = "LAUNCH001"


def smoke_mismatch(result: Mapping[str, Any], spec: RunSpec) -> str | None:
    """Why a recorded smoke result does not stand for `spec`, or None when it does."""
    if result.get("status") != AttemptStatus.SUCCEEDED:
        return f"it ended {result.get('status')}"
    if result.get("runtime_fingerprint") != spec.runtime_fingerprint:
        return (f"it ran runtime {result.get('runtime_fingerprint')}, this run's runtime is "
                f"{spec.runtime_fingerprint}")
    mine = leaves(role_geometry(spec), "role_plan")
    theirs = leaves(result.get("geometry") or {}, "role_plan")
    differing = sorted(p for p in set(mine) | set(theirs) if mine.get(p) != theirs.get(p))
    if differing:
        shown = ", ".join(f"{p} {theirs.get(p)} (here {mine.get(p)})" for p in differing[:4])
        return f"its role geometry differs: {shown}"
    return None


_EXAMPLE_STORE = "/srv/rlaunch-store"


def _gate_example() -> list[Finding]:
    """worked example `colocated-1x8` (calendar version `2026.11.29`, `smoke_of: null`), with
    no smoke recorded in the ledger at `/srv/rlaunch-store`"""
    spec = parse_spec(worked_example("colocated-1x8"), "example of the smoke gate")
    return smoke_gate_findings(spec, Ledger(_EXAMPLE_STORE))


@launch_check(
    SMOKE_GATE_CODE,
    "A calendar-versioned full launch has a recorded successful smoke of the same role geometry"
    " and runtime fingerprint (the smoke gate; `--skip-smoke-gate REASON` waives it).",
    example=_gate_example,
)
def smoke_gate_findings(spec: RunSpec, ledger: Ledger) -> list[Finding]:
    """The smoke gate: a calendar-versioned full run (no `smoke_of`) launches only with a
    recorded successful smoke of the same role geometry and runtime fingerprint."""
    if spec.smoke_of is not None or not is_calendar(spec.version):
        return []
    results = list((ledger.read(spec.name, spec.version) or {}).get("smoke_results", []))
    reasons = []
    for result in reversed(results):
        reason = smoke_mismatch(result, spec)
        if reason is None:
            return []
        reasons.append(f"smoke {result.get('smoke')} attempt {result.get('attempt_id')}: {reason}")
    found = (
        "; ".join(reasons[:3])
        if reasons
        else f"no smoke is recorded for it in {ledger.record_path(spec.name, spec.version)}"
    )
    return [
        error(
            SMOKE_GATE_CODE, ("version", "smoke_of"),
            f"calendar version {spec.identity} is a full launch and needs a recorded successful "
            f"smoke of the same role geometry and runtime fingerprint ({spec.runtime_fingerprint})"
            f": {found}",
            f"Launch a smoke run of it first (a spec with smoke_of {spec.identity}, same role "
            f"plan and runtime), or pass --skip-smoke-gate REASON (recorded in the ledger).",
        )
    ]
