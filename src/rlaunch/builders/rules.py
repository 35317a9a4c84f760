"""Rules every build obeys, checked on the whole graph before anything is built.

- A version is a calendar version (`YYYY.MM.DD` or `YYYY.MM.DD.N`, a real date: immutable) or
  a dev version (`dev`, `<label>-dev`: rebuilt on every build).
- A calendar-versioned artifact never depends on a dev one: it could not be rebuilt the same.
- One identity names one artifact: the same `name@version` with two contents is refused.
- A dependency is never an eval run's export: it is a report, not a model (preflight's PIPE004).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from rlaunch.builders.base import AnyArtifact
from rlaunch.preflight.rules.pipeline import eval_exports_read_as_models
from rlaunch.spec import syntax
from rlaunch.spec.artifacts import BuiltArtifact, fingerprint, identity


def version_class(version: str) -> Literal["calendar", "dev"] | None:
    """`calendar`, `dev`, or None for anything else (a branch-like `v1`, an impossible date).

    The syntax is preflight's (one definition of a version for the whole project)."""
    if syntax.is_dev(version):
        return "dev"
    return "calendar" if syntax.is_calendar(version) else None


def is_dev(version: str) -> bool:
    return version_class(version) == "dev"


def short(fingerprint_value: str) -> str:
    """`sha256:abcd1234`: enough of a fingerprint to tell two apart in a progress line."""
    algorithm, _, digest = fingerprint_value.partition(":")
    return f"{algorithm}:{digest[:8]}"


def graph_problems(roots: Iterable[tuple[str, AnyArtifact]]) -> list[str]:
    """Every rule violation in the graphs under `roots` (`(field path, artifact)` pairs)."""
    problems: list[str] = []
    seen: dict[str, tuple[str, str]] = {}

    def visit(path: str, artifact: AnyArtifact) -> None:
        ident = identity(artifact)
        content_fp = fingerprint(artifact)
        if ident in seen:
            first_fp, first_path = seen[ident]
            if first_fp != content_fp:
                problems.append(
                    f"{path}: {ident} appears twice with different content ({first_path} is "
                    f"{short(first_fp)}, {path} is {short(content_fp)}); one identity names one "
                    f"artifact: give one of them another name or version"
                )
            return
        seen[ident] = (content_fp, path)
        kind = version_class(artifact.version)
        if kind is None:
            problems.append(
                f"{path}.version: {artifact.version!r} of {artifact.name} is neither a calendar "
                f"version (YYYY.MM.DD or YYYY.MM.DD.N, a real date) nor a dev version (`dev`, "
                f"`<label>-dev`)"
            )
        if not isinstance(artifact, BuiltArtifact):
            return
        for slot, dep in sorted(artifact.deps.items()):
            if kind == "calendar" and is_dev(dep.version):
                problems.append(
                    f"{path}.deps.{slot}: {ident} has a calendar version but depends on "
                    f"{identity(dep)}, a dev version that changes on every build; give "
                    f"{dep.name} a calendar version, or make {artifact.name} a dev version too"
                )
            problems.extend(
                f"{finding.code} {finding.message}. {finding.fix}"
                for finding in eval_exports_read_as_models([(f"{path}.deps.{slot}", dep)])
            )
            visit(f"{path}.deps.{slot}", dep)

    for path, artifact in roots:
        visit(path, artifact)
    return problems


def graph_order(roots: Iterable[AnyArtifact]) -> list[AnyArtifact]:
    """Every artifact of the graphs once, dependencies before their dependents."""
    ordered: list[AnyArtifact] = []
    seen: set[str] = set()

    def visit(artifact: AnyArtifact) -> None:
        ident = identity(artifact)
        if ident in seen:
            return
        if isinstance(artifact, BuiltArtifact):
            for _, dep in sorted(artifact.deps.items()):
                visit(dep)
        seen.add(ident)
        ordered.append(artifact)

    for root in roots:
        visit(root)
    return ordered
