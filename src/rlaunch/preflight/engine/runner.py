"""Run every rule on a spec and collect every finding (never stop at the first).

The rules are registered when their modules are imported; `rlaunch.preflight` imports them all
(`rlaunch.preflight.rules` and `rlaunch.preflight.launch_checks`), and Python runs it before any
module of the package, this one included."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from operator import attrgetter, itemgetter
from typing import Any, Literal

from rlaunch.preflight.engine.check import Check, forget_counts
from rlaunch.preflight.engine.finding import Finding
from rlaunch.preflight.engine.registry import Rule, registered_rules
from rlaunch.preflight.engine.world import World
from rlaunch.ledger import LedgerError
from rlaunch.memo import Memo
from rlaunch.spec.run import RunSpec
from rlaunch.store.fs import StoreError
from rlaunch.store.probe import StoreUnavailable

RunScope = Literal["spec", "all"]
INTERNAL_CODE = "PRE000"
"""Code of the finding that reports a rule which crashed (a bug in rlaunch, never the user's)."""
STORE_CODE = "EXEC009"
"""Code of the finding that reports the store: its probe, and world rules that could not read it."""


def all_rules() -> tuple[Rule, ...]:
    return registered_rules()


@lru_cache(maxsize=2)
def rules_for(scope: RunScope) -> tuple[Rule, ...]:
    """`spec`: the rules decided by the spec alone; `all`: those and the world rules."""
    return tuple(r for r in registered_rules() if scope == "all" or r.scope == "spec")


@lru_cache(maxsize=16)
def _rules_for_release(scope: RunScope, release: str) -> tuple[Rule, ...]:
    """The rules of `scope` that apply to a run of SkyRL `release`."""
    return tuple(rule for rule in rules_for(scope) if rule.applies_to(release))


Outcome = tuple[tuple[Finding, ...], bool]
"""A rule's findings on a spec, and whether the store's probe found the store unavailable to it
(the rule did not run; EXEC009 names it)."""

BESIDE_PLAN = tuple(name for name in RunSpec.model_fields if name != "role_plan")
"""The RunSpec fields a rule declared with `reads_plan=False` may read: every one but
`role_plan`."""
_beside_plan_values = itemgetter(*BESIDE_PLAN)
"""A spec's BESIDE_PLAN values, read from its `__dict__` (where pydantic keeps its fields): one C
call, where 21 attribute reads of a pydantic model each go through its `__getattr__` hook."""

Step = tuple[Rule, Outcome | None]
"""A rule to run, or a rule and its outcome already known."""
_BESIDE_PLAN_STEPS: Memo[tuple[int, ...], list[Any]] = Memo(256)
"""The identities of a spec's BESIDE_PLAN values -> `[those, rules, steps, calls, shared]`: held
(so no other object can take their identities while the entry lives); the spec-scope rules of
its SkyRL release; once a preflight of such a spec has run, its steps (every rule that reads the
plan, and those that do not with their outcome, left out when they found nothing) and the same
as `calls` for the fast path: per step a function of the Check giving its findings (the rule's
own, or one giving the known findings); `shared`, the values its Checks derive from those values
alone (`Check.shared`). A search, and parse_spec's reuse of the part beside the plan
(rlaunch.spec.io), hand preflight the very same objects plan after plan; an equal copy is a new
entry, never a wrong one."""


def _beside_plan_entry(spec: RunSpec) -> list[Any]:
    """`[values, rules, steps or None, calls or None, shared]` for a spec-scope preflight of
    specs whose BESIDE_PLAN values are `spec`'s very objects."""
    values = _beside_plan_values(spec.__dict__)
    key = tuple(map(id, values))
    entry = _BESIDE_PLAN_STEPS.get(key)
    if entry is None:
        entry = _BESIDE_PLAN_STEPS.put(key, [
            values, _rules_for_release("spec", spec.skyrl_release), None, None, {}])
    return entry


def plan_rules(spec: RunSpec) -> tuple[tuple[Rule, ...], Check]:
    """The rules a spec-scope preflight runs on every plan beside `spec`'s other fields (those
    that read the role plan; the others run once per distinct rest of the spec), and a Check of
    `spec` that shares that rest's derived values, as run_preflight makes it: what a profile of
    preflight times rule by rule (benchmarks/preflight_throughput.py)."""
    entry = _beside_plan_entry(spec)
    return tuple(rule for rule in entry[1] if rule.reads_plan), Check(spec, None, entry[4])


def _known(found: tuple[Finding, ...]) -> Callable[[Check], tuple[Finding, ...]]:
    """A step whose findings are known, as a function of the Check like a rule."""
    def findings(check: Check) -> tuple[Finding, ...]:
        return found
    return findings


def _calls(steps: list[Step]) -> tuple[Callable[[Check], Iterable[Finding]], ...] | None:
    """The steps as the fast path runs them; None when a known outcome found the store
    unavailable (the per-rule path says so)."""
    if any(outcome is not None and outcome[1] for _, outcome in steps):
        return None
    return tuple(rule.func if outcome is None else _known(outcome[0]) for rule, outcome in steps)


def _run_calls(calls: tuple[Callable[[Check], Iterable[Finding]], ...], check: Check
               ) -> list[Finding] | None:
    """Every step's findings in order, when no rule raises; else None (the caller runs the
    per-rule path, which reports the rule as `_run_rule` does)."""
    findings: list[Finding] = []
    try:
        for call in calls:
            findings += call(check)  # an operator, where `extend` is a method call
    except Exception:  # noqa: BLE001 - the per-rule path runs again and reports the rule
        return None
    return findings


def forget_reused() -> None:
    """Empty the reused outcomes and the Check's memo of counts (a benchmark's cold start; a
    test's uncached run)."""
    _BESIDE_PLAN_STEPS.clear()
    forget_counts()


def _run_rule(rule: Rule, check: Check) -> Outcome:
    """Run one rule. Never raises: a rule that crashes is reported as a PRE000 error naming it,
    with the findings it yielded before."""
    found: list[Finding] = []
    try:
        found.extend(rule.func(check))
    except StoreUnavailable:
        # The store's probe found it unavailable; EXEC009 says so once, naming these.
        return tuple(found), True
    except (LedgerError, StoreError, OSError) as exc:
        # The store answered the probe, then failed a read: the store's, not a bug.
        found.append(Finding(
            STORE_CODE, "error", (),
            f"rule {rule.code} could not read the store ({type(exc).__name__}: {exc}); its"
            " check did not run",
            "Check that the store is reachable and readable with this machine's"
            " credentials, then run preflight again.",
        ))
    except Exception as exc:  # noqa: BLE001 - a crashing rule must not hide the others
        found.append(Finding(
            INTERNAL_CODE, "error", (),
            f"rule {rule.code} crashed on this spec ({type(exc).__name__}: {exc}); its"
            " check did not run",
            "This is a bug in rlaunch: report it with the spec.",
        ))
    return tuple(found), False


def run_preflight(
    spec: RunSpec, *, scope: RunScope = "spec", world: World | None = None
) -> list[Finding]:
    """Every finding of every rule in `scope`, errors first, then in rule order.

    Never raises on a spec that parses: a rule that crashes is reported as a PRE000 error
    naming the rule, and the other rules still run. At spec scope, a rule that reads nothing of
    the role plan is run once per distinct rest of the spec (`_BESIDE_PLAN_STEPS`), and once
    that is known the rules run in one loop under one `try` (`_run_calls`); should one raise,
    every rule runs again one by one (`_run_rule`) on a fresh Check, so its findings are the
    same either way (spec-scope rules read nothing but the spec)."""
    if scope not in ("spec", "all"):
        raise ValueError(f"scope must be 'spec' or 'all', got {scope!r}")
    if scope == "all" and world is None:
        raise ValueError(
            "scope 'all' needs a world: pass world=rlaunch.preflight.current_world() or one"
            " built by the launcher"
        )
    if scope == "spec":
        entry = _beside_plan_entry(spec)
        rules, shared = entry[1], entry[4]
        check = Check(spec, None, shared)
        if entry[3] is not None:
            fast = _run_calls(entry[3], check)
            if fast is not None:
                fast.sort(key=_after_errors)
                return fast
            # A rule raised: every rule again, one by one, on a fresh Check.
            check = Check(spec, None, shared)
    else:
        entry = None
        rules = _rules_for_release(scope, spec.skyrl_release)
        check = Check(spec, world)
    known: list[Step] | None = entry[2] if entry is not None else None
    steps = known if known is not None else [(rule, None) for rule in rules]
    ran: list[tuple[Rule, Outcome]] = []
    findings: list[Finding] = []
    unchecked: list[str] = []
    for rule, outcome in steps:
        if outcome is None:
            outcome = _run_rule(rule, check)
            ran.append((rule, outcome))
        found, store_unavailable = outcome
        findings.extend(found)
        if store_unavailable:
            unchecked.append(rule.code)
    if entry is not None and known is None:
        entry[2] = [(rule, None if rule.reads_plan else outcome) for rule, outcome in ran
                    if rule.reads_plan or outcome != ((), False)]
        entry[3] = _calls(entry[2])
    if unchecked:
        findings = [
            finding._replace(message=f"{finding.message}; not checked without it:"
                                      f" {', '.join(unchecked)}")
            if finding.code == STORE_CODE and not finding.paths else finding
            for finding in findings
        ]
    findings.sort(key=_after_errors)
    return findings


_after_errors = attrgetter("severity")
"""Sort key: errors first, the order within each kept (the sort is stable, and the severities
are `error` and `warning`, in that order as strings: a key read in C, where a function of ours
would cost a Python call per finding)."""
