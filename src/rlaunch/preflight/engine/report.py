"""Presenting findings: text for people, JSON for the Pants plugin and other programs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rlaunch.preflight.engine.finding import Finding
from rlaunch.spec.sources import BuildSources


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def format_text(
    findings: Sequence[Finding],
    source: str,
    identity: str | None = None,
    sources: BuildSources | None = None,
) -> str:
    """One spec's findings, errors first:

        experiments/run.yaml (example@2026.11.29): 1 error, 0 warnings
        error GEO003 role_plan.policy.num_nodes, ...: policy world 12 = ...
            fix: Make TP x PP x CP a divisor of 12 ...

    A spec the Pants plugin wrote (`sources`) is titled by its rl_run target and BUILD file,
    and every finding also names the targets and fields as the BUILD files write them:

        experiments/x:grpo (experiments/x/BUILD:40) (example@dev): refused, 1 error, ...
        error GEO003 role_plan.policy.num_nodes, ...: policy world 12 = ...
            in experiments/x/BUILD:10 (experiments/x:plan): policy.num_nodes, ...
            fix: ...
    """
    errors = sum(1 for finding in findings if finding.is_error)
    warnings = len(findings) - errors
    if sources is not None:
        source = sources.title()
    title = f"{source} ({identity})" if identity else source
    status = "ok" if not errors else "refused"
    lines = [f"{title}: {status}, {_count(errors, 'error')}, {_count(warnings, 'warning')}"]
    ordered = sorted(findings, key=lambda finding: not finding.is_error)
    for finding in ordered:
        where = ", ".join(finding.paths) or "<spec>"
        lines.append(f"{finding.severity} {finding.code} {where}: {finding.message}")
        if sources is not None:
            lines += [f"    in {target}" for target in sources.describe(finding.paths)]
        lines.append(f"    fix: {finding.fix}")
    return "\n".join(lines) + "\n"


def spec_report(
    source: str,
    identity: str | None,
    findings: Sequence[Finding],
    problems: Sequence[str] | None = None,
    text: str | None = None,
) -> dict[str, Any]:
    """One entry of the JSON report. `problems`: why the spec could not be read (then no
    findings). `text`: the entry as `--format text` prints it, so that a caller showing it
    (the Pants check) never formats findings a second way."""
    report: dict[str, Any] = {
        "source": source,
        "identity": identity,
        "valid": problems is None,
        "errors": sum(1 for finding in findings if finding.is_error),
        "warnings": sum(1 for finding in findings if not finding.is_error),
        "findings": [finding.to_dict() for finding in findings],
    }
    if problems is not None:
        report["problems"] = list(problems)
    if text is not None:
        report["text"] = text
    return report


def format_json(reports: Sequence[dict[str, Any]]) -> str:
    return json.dumps({"specs": list(reports)}, indent=2) + "\n"
