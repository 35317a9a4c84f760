"""Preflight: prove a RunSpec sound before any GPU is paid for.

Every rule has a stable code, a family and a scope (`spec`: decided by the spec alone, so
cacheable; `world`: also reads the World: environment, git state, ledger, checkpoint roots).
`run_preflight` runs them all and returns every finding at once; `rlaunch rules` lists them.
"""

from rlaunch.preflight.finding import Finding, Severity
from rlaunch.preflight.registry import Rule
from rlaunch.preflight.report import format_json, format_text, spec_report
from rlaunch.preflight.runner import INTERNAL_CODE, all_rules, run_preflight
from rlaunch.preflight.world import World, current_world

__all__ = [
    "Finding", "INTERNAL_CODE", "Rule", "Severity", "World", "all_rules", "current_world",
    "format_json", "format_text", "run_preflight", "spec_report",
]
