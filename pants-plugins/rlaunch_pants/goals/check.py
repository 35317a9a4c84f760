"""`./pants check`: preflight every rl_run target with the library, in ONE process.

An rl_sweep stands for its runs: checking it checks each of them (once, also when the runs are
asked for too).

The specs of all the runs asked for are written into one sandbox and checked by one
`python -m rlaunch preflight --format json --scope spec` process (cached on the specs, the library
and the runtime lock); its JSON report is split into one CheckResult per run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from pants.core.goals.check import CheckRequest, CheckResult, CheckResults
from pants.engine.addresses import Addresses
from pants.engine.fs import CreateDigest, Digest, FileContent
from pants.engine.process import FallibleProcessResult, ProcessCacheScope
from pants.engine.rules import Get, MultiGet, collect_rules, rule
from pants.engine.target import FieldSet, Target, Targets
from pants.engine.unions import UnionRule
from pants.option.option_types import SkipOption
from pants.option.subsystem import Subsystem
from pants.util.logging import LogLevel
from pants.util.strutil import help_text, pluralize

from rlaunch_pants.process import RlaunchProcess
from rlaunch_pants.run_fields import WORLD_RULES_HELP, RlRunRolePlanField
from rlaunch_pants.specs import RunSpecDocument, RunSpecRequest, spec_file_path
from rlaunch_pants.sweep import RlSweepRunsField, SweepRuns, SweepRunsRequest


class RlaunchPreflightSubsystem(Subsystem):
    options_scope = "rlaunch-preflight"
    name = "rlaunch preflight"
    help = help_text(
        """
        The preflight of `rl_run` targets run by `./pants check`: geometry, allocation, batch
        arithmetic, context lengths, algorithm settings, pins and artifact handoffs, version and
        path syntax, the runtime profile, smoke geometry (`python -m rlaunch rules` lists every
        rule with its code).

        Only the rules that depend on the targets alone run here (scope `spec`), so results are
        cached. The rules that depend on the world are NOT run by `check`: they run at launch
        time, uncached, by `./pants run` (`rlaunch launch` preflights with scope `all`). They are
        (`python -m rlaunch rules` shows each rule's scope):

        {world_rules}
        """
    ).replace("{world_rules}", WORLD_RULES_HELP)

    skip = SkipOption("check")


@dataclass(frozen=True)
class RlRunPreflightFieldSet(FieldSet):
    """An rl_run, or an rl_sweep, which stands for its runs (each run is checked once)."""

    required_fields = ()

    @classmethod
    def is_applicable(cls, tgt: Target) -> bool:
        return tgt.has_field(RlRunRolePlanField) or tgt.has_field(RlSweepRunsField)


class RlaunchPreflightRequest(CheckRequest):
    field_set_type = RlRunPreflightFieldSet
    tool_name = RlaunchPreflightSubsystem.options_scope


def format_spec_report(entry: Mapping[str, Any], title: str) -> str:
    """One spec's text exactly as the library prints it (`text` in its JSON report): titled by
    the run's target and BUILD file, from the spec's `build_sources`."""
    text = entry.get("text")
    if not isinstance(text, str):
        raise ValueError(f"the preflight report for {title} has no text; is the library current?")
    return text


def _exit_code(entry: Mapping[str, Any]) -> int:
    """The library's exit status for this spec alone: 2 invalid, 1 an error, 0 clean."""
    if entry.get("valid") is False:
        return 2
    return 1 if any(f.get("severity") == "error" for f in entry.get("findings") or ()) else 0


def split_report(stdout: bytes, sources: Mapping[str, str]) -> Optional[dict[str, tuple[int, str]]]:
    """`{source: (exit code, text)}` from the preflight JSON report (sources map spec file ->
    target address), or None when stdout is not a report of exactly those specs."""
    try:
        entries = json.loads(stdout.decode())["specs"]
    except (ValueError, KeyError, TypeError):
        return None
    by_source = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("source") not in sources:
            return None
        source = entry["source"]
        by_source[source] = (_exit_code(entry), format_spec_report(entry, sources[source]))
    if set(by_source) != set(sources):
        return None
    return by_source


@rule(desc="Preflight rl_run targets", level=LogLevel.DEBUG)
async def preflight_runs(
    request: RlaunchPreflightRequest, subsystem: RlaunchPreflightSubsystem
) -> CheckResults:
    if subsystem.skip or not request.field_sets:
        return CheckResults([], checker_name=request.tool_name)

    targets = await Get(Targets, Addresses(fs.address for fs in request.field_sets))
    sweeps = await MultiGet(
        Get(SweepRuns, SweepRunsRequest(t.address, t[RlSweepRunsField]))
        for t in targets
        if t.has_field(RlSweepRunsField)
    )
    runs = {t.address for t in targets if t.has_field(RlRunRolePlanField)}
    runs.update(run.address for sweep in sweeps for run in sweep)
    # Sorted, so that the same set of runs is the same process (and cache key) every time.
    addresses = sorted(runs)
    documents = await MultiGet(Get(RunSpecDocument, RunSpecRequest(a)) for a in addresses)
    sources = {spec_file_path(doc.address): str(doc.address) for doc in documents}
    digest = await Get(
        Digest,
        CreateDigest(
            FileContent(spec_file_path(doc.address), doc.json.encode()) for doc in documents
        ),
    )
    result = await Get(
        FallibleProcessResult,
        RlaunchProcess(
            args=("preflight", "--format", "json", "--scope", "spec", *sources),
            description=f"Preflight {pluralize(len(documents), 'rl_run target')}",
            input_digest=digest,
            # Findings are a result too: a run with errors must not be re-checked every time.
            cache_scope=ProcessCacheScope.ALWAYS,
        ),
    )

    per_source = split_report(result.stdout, sources)
    if per_source is None:
        # The library did not produce a report (it crashed or refused its input): every run
        # fails, with what the process said.
        failure = "\n".join(
            part
            for part in (result.stderr.decode().strip(), result.stdout.decode().strip())
            if part
        )
        code = result.exit_code or 2
        return CheckResults(
            [
                CheckResult(code, "", failure, partition_description=address)
                for address in sources.values()
            ],
            checker_name=request.tool_name,
        )
    return CheckResults(
        [
            CheckResult(
                per_source[source][0],
                per_source[source][1],
                "",
                partition_description=address,
            )
            for source, address in sources.items()
        ],
        checker_name=request.tool_name,
    )


def rules():  # type: ignore[no-untyped-def]
    return [*collect_rules(), UnionRule(CheckRequest, RlaunchPreflightRequest)]
