"""Preflight: prove a RunSpec sound before any GPU is paid for.

Every rule has a stable code, a family and a scope (`spec`: decided by the spec alone, so
cacheable; `world`: also reads the World: environment, git state, ledger, checkpoint roots).
`run_preflight` runs them all and returns every finding at once; `rlaunch rules` lists them.

The folders: `engine` (what a rule sees and reports, the registry, the runner, the report),
`estimates` (memory and placement models the rules read), `rules` (the rules by family) and
`launch_checks` (checks only the launch can make). Importing this package registers every rule
and launch check; `commands` and `docs` are the `rlaunch rules`/`rlaunch preflight` front.
"""

# Importing `launch_checks` and `rules` registers every check before anything runs them.
from rlaunch.preflight import launch_checks, rules  # noqa: F401
from rlaunch.preflight.engine.finding import Finding, Severity
from rlaunch.preflight.engine.registry import Rule
from rlaunch.preflight.engine.report import format_json, format_text, spec_report
from rlaunch.preflight.engine.runner import INTERNAL_CODE, all_rules, run_preflight
from rlaunch.preflight.engine.world import World, current_world

__all__ = [
    "Finding", "INTERNAL_CODE", "Rule", "Severity", "World", "all_rules", "current_world",
    "format_json", "format_text", "run_preflight", "spec_report",
]
