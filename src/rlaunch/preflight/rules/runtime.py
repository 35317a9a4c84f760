"""Runtime: pinned exactly, known to the catalog, with the entrypoint, strategy, backends and
fixes the run needs (rlaunch.spec.catalog)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.catalog import (
    FIXES,
    PROFILES,
    SKYRL_EVAL_ENTRYPOINT,
    RuntimeProfile,
    RuntimeRelease,
    profile,
    resolve,
)
from rlaunch.spec.syntax import COMMIT

PACKAGE_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==(\d+\.\d+\.\d+)")
SMOKE_RUNTIME = {
    "name": "rlaunch-smoke-0.1.0",
    "profile": "smoke",
    "package": "rlaunch==0.1.0",
    "git": None,
    "entrypoint": "rlaunch.runtimes.smoke",
    "required_fixes": [],
}


def _release(check: Check) -> RuntimeRelease | None:
    runtime = check.spec.runtime
    return resolve(runtime.profile, package=runtime.package, commit=runtime.commit)


@rule(
    "RT001",
    "The runtime is pinned by exactly one of package name==X.Y.Z or a 40-hex git commit.",
    example=Example(edits={"runtime.package": "skyrl"}),
    reads_plan=False,
)
def runtime_pinned(check: Check) -> Iterator[Finding]:
    runtime = check.spec.runtime
    if (runtime.package is None) == (runtime.git is None):
        yield error(
            "RT001", ("runtime.package", "runtime.git"),
            "runtime.package and runtime.git are both "
            f"{'null' if runtime.package is None else 'set'}; exactly one pins the runtime",
            "Set exactly one of runtime.package (name==X.Y.Z) or runtime.git (repo and commit).",
        )
    if runtime.package is not None:
        match = PACKAGE_PIN.fullmatch(runtime.package)
        known = profile(runtime.profile)
        if match is None:
            yield error(
                "RT001", ("runtime.package",),
                f"runtime.package {runtime.package!r} is not an exact pin name==X.Y.Z",
                "Pin one released version, e.g. runtime.package 'skyrl==0.3.0'.",
            )
        elif known is not None and match.group(1) != known.package:
            yield error(
                "RT001", ("runtime.package", "runtime.profile"),
                f"runtime.package {runtime.package!r} is not the {known.package} package of"
                f" profile {known.name}",
                f"Pin {known.package}==<version>, or use the profile of {match.group(1)}.",
            )
    if runtime.git is not None and (not runtime.git.repo or any(
            char.isspace() or not char.isprintable() for char in runtime.git.repo)):
        yield error(
            "RT001", ("runtime.git.repo",),
            f"runtime.git.repo {runtime.git.repo[:80]!r} is not a repository URL or owner/name:"
            " it is empty or holds whitespace or control characters, which no git or pip"
            " requirement accepts",
            "Set runtime.git.repo to the repository's URL (https://github.com/owner/name) or"
            " owner/name.",
        )
    if runtime.git is not None and COMMIT.fullmatch(runtime.git.commit) is None:
        yield error(
            "RT001", ("runtime.git.commit",),
            f"runtime.git.commit {runtime.git.commit!r} is not a 40-hex commit sha",
            "Pin runtime.git.commit to the full commit sha (git rev-parse <ref>).",
        )


@rule(
    "RT002",
    "The runtime profile and the pinned release are in the runtime catalog.",
    example=Example(edits={"runtime.package": "skyrl==0.2.9"}),
    reads_plan=False,
)
def runtime_known(check: Check) -> Iterator[Finding]:
    runtime = check.spec.runtime
    known = profile(runtime.profile)
    if known is None:
        yield error(
            "RT002", ("runtime.profile",),
            f"runtime.profile {runtime.profile!r} is not in the runtime catalog"
            f" ({', '.join(PROFILES)})",
            "Use a catalogued profile, or add it to rlaunch/spec/catalog.py.",
        )
        return
    if _release(check) is not None:
        return
    if runtime.package is not None and PACKAGE_PIN.fullmatch(runtime.package):
        yield error(
            "RT002", ("runtime.package",),
            f"runtime.package {runtime.package!r}: the catalog knows {known.package}"
            f" {', '.join(known.releases)} only, so nothing about this release can be proven",
            "Pin a catalogued release, or catalogue this one in rlaunch/spec/catalog.py.",
        )
    elif runtime.package is None and runtime.git is not None:
        yield warning(
            "RT002", ("runtime.git.commit",),
            f"runtime.git.commit {runtime.git.commit} is not catalogued for profile"
            f" {known.name}: its entrypoints are assumed from the releases and its fixes"
            " cannot be proven",
            "Catalogue the commit in rlaunch/spec/catalog.py, or pin a released version.",
        )


@rule(
    "RT003",
    "The entrypoint exists in the pinned runtime.",
    example=Example(edits={"runtime.entrypoint": "skyrl.train.entrypoints.main"}),
    reads_plan=False,
)
def entrypoint_exists(check: Check) -> Iterator[Finding]:
    runtime = check.spec.runtime
    known = profile(runtime.profile)
    if known is None:
        return
    release = _release(check)
    entrypoints = release.entrypoints if release is not None else known.entrypoints()
    if runtime.entrypoint not in entrypoints:
        where = f"{known.package} {release.version}" if release else f"profile {known.name}"
        yield error(
            "RT003", ("runtime.entrypoint",),
            f"runtime.entrypoint {runtime.entrypoint!r} is not an entrypoint of {where}"
            f" ({', '.join(entrypoints)})",
            f"Set runtime.entrypoint to {entrypoints[0]}.",
        )


def _profile_and_task(check: Check) -> tuple[RuntimeProfile, str, str] | None:
    """The runtime's profile, the task and the advantage estimator (RT004 reads them beside the
    plan: once per distinct part, `Check.shared`); None for a profile the catalog lacks."""
    spec = check.spec
    known = profile(spec.runtime.profile)
    if known is None:
        return None
    return known, spec.algorithm.environment, spec.algorithm.advantage_estimator


@rule(
    "RT004",
    "The runtime profile supports the strategy, the rollout backend, the weight sync, the task"
    " and the advantage estimator.",
    example=Example(
        edits={"runtime": SMOKE_RUNTIME, "algorithm.environment": "countdown",
               "role_plan.rollout.backend": "sglang"}
    ),
)
def runtime_supports_plan(check: Check) -> list[Finding]:
    findings: list[Finding] = []
    beside = check.shared(_profile_and_task)
    if beside is None:
        return findings
    known, environment, estimator = beside
    plan = check.plan
    rollout = plan.rollout
    wanted = [
        ("role_plan.strategy", "strategy", plan.strategy, known.strategies),
        ("role_plan.rollout.backend", "rollout backend", rollout.backend,
         known.rollout_backends),
        ("role_plan.rollout.weight_sync_backend", "weight sync backend",
         rollout.weight_sync_backend, known.weight_sync_backends),
        ("algorithm.environment", "task", environment, known.environments),
        ("algorithm.advantage_estimator", "advantage estimator", estimator, known.estimators),
    ]
    for path, what, value, supported in wanted:
        # None: the catalog does not list them (the runtime's own check refuses one it lacks).
        if supported is not None and value not in supported:
            findings.append(error(
                "RT004", (path, "runtime.profile"),
                f"{path} {value!r}: runtime profile {known.name} has no {what} {value}"
                f" (it has {', '.join(sorted(supported))})",
                f"Use a {what} of profile {known.name}, or a runtime that has {value}.",
            ))
    return findings


@rule(
    "RT005",
    "Every required fix is catalogued and contained in the pinned release.",
    example=Example(edits={"runtime.required_fixes": ["gradient-accumulation-loss-scale"]}),
    reads_plan=False,
)
def required_fixes_contained(check: Check) -> Iterator[Finding]:
    runtime = check.spec.runtime
    release = _release(check)
    for index, fix_id in enumerate(runtime.required_fixes):
        path = (f"runtime.required_fixes.{index}",)
        if fix_id not in FIXES:
            yield error(
                "RT005", path,
                f"runtime.required_fixes[{index}] {fix_id!r} is not a catalogued fix id"
                f" ({', '.join(FIXES)})",
                "Use a fix id from rlaunch/spec/catalog.py (or catalogue the fix there).",
            )
        elif release is None:
            yield error(
                "RT005", path,
                f"runtime.required_fixes[{index}] {fix_id!r} cannot be proven: the pinned"
                " runtime is not in the catalog",
                "Pin a catalogued release that contains the fix.",
            )
        elif fix_id not in release.fixes:
            yield error(
                "RT005", path,
                f"runtime.required_fixes[{index}] {fix_id!r} is not in"
                f" {runtime.profile} {release.version}",
                "Pin a release that contains the fix.",
            )


@rule(
    "RT006",
    "An eval-only entrypoint has eval data to score, trainer.eval_interval > 0 and"
    " trainer.dump_eval_results on.",
    example=Example(edits={"runtime.entrypoint": SKYRL_EVAL_ENTRYPOINT,
                           "settings": {"trainer.eval_interval": 0}}),
    reads_plan=False,
)
def eval_entrypoint_has_eval(check: Check) -> Iterator[Finding]:
    """SkyRL 0.3.0's `EvalOnlyEntrypoint` (skyrl/train/entrypoints/main_generate.py) loads the
    eval dataset through `BasePPOExp.get_eval_dataset`, which returns None unless
    `trainer.eval_interval > 0` and `data.val_data` is set; `run` then fails its assert on the
    job's GPUs. `skyrl.train.evaluate.evaluate` writes the per-sample results the report is made
    of only when `trainer.dump_eval_results` is on."""
    spec = check.spec
    if not spec.evaluates_only:
        return
    entrypoint = spec.runtime.entrypoint
    if spec.eval_data is None:
        yield error(
            "RT006", ("eval_data", "runtime.entrypoint"),
            f"eval_data is null, but runtime.entrypoint {entrypoint} only evaluates: it scores"
            " the model on the eval data and has nothing else to do",
            "Set eval_data to the dataset to score the model on.",
        )
    interval = spec.skyrl_setting("trainer.eval_interval")
    if not interval > 0:
        yield error(
            "RT006", ("settings.trainer.eval_interval", "runtime.entrypoint"),
            f"settings trainer.eval_interval {interval} <= 0: {entrypoint} loads no eval dataset"
            " then (BasePPOExp.get_eval_dataset) and stops at its assert on the GPUs",
            "Set trainer.eval_interval to a positive number (SkyRL's default is 5), or remove"
            " the setting.",
        )
    if spec.skyrl_setting("trainer.dump_eval_results") is not True:
        yield error(
            "RT006", ("settings.trainer.dump_eval_results", "runtime.entrypoint"),
            f"settings trainer.dump_eval_results is false: {entrypoint} then writes no"
            " per-sample results, and the eval report is made of them",
            "Remove the setting trainer.dump_eval_results (SkyRL's default is true).",
        )
