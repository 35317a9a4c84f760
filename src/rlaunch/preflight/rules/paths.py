"""Paths: names are safe path segments, derived roots do not collide, the store prefix is real.

Every root derives from an identity (`{prefix}/{name}/{version}/`, rlaunch.paths), so the rules
here are about the names and the prefix that go into that formula."""

from __future__ import annotations

from collections.abc import Iterator

from rlaunch.paths import artifact_root
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.syntax import SAFE_NAME

STORE_SCHEMES = ("gs://", "s3://", "file://")
NAME_MAX = 255
"""Linux's limit on one path segment, in bytes; a name is one segment of every root."""
SHOWN = 60
"""How much of a longer name a message shows."""


def _name_problem(name: str) -> str | None:
    if SAFE_NAME.fullmatch(name) and ".." not in name:
        if len(name) > NAME_MAX:
            return f"is {len(name)} characters long; a path segment holds at most {NAME_MAX}"
        return None
    if "/" in name:
        return "contains '/'"
    if ".." in name:
        return "contains '..'"
    if name.startswith("~"):
        return "starts with '~'"
    return (
        "is not made of lower-case letters, digits, '.', '_' and '-' starting with a letter or"
        " digit"
    )


@rule(
    "PATH001",
    "Names are safe path segments: [a-z0-9][a-z0-9._-]*, no '..', '/', '~', at most 255"
    " characters.",
    example=Example(edits={"name": "../escape"}),
    reads_plan=False,
)
def safe_names(check: Check) -> Iterator[Finding]:
    spec = check.spec
    names = [("name", spec.name)]
    names += [(f"{path}.name", artifact.name) for path, artifact in check.artifacts]
    if spec.smoke_of is not None:
        names.append(("smoke_of.name", spec.smoke_of.name))
    for path, name in names:
        problem = _name_problem(name)
        if problem is None:
            continue
        long = len(name) > NAME_MAX
        yield error(
            "PATH001", (path,),
            f"{path} {f'{name[:SHOWN]!r}...' if long else repr(name)} is not a safe path "
            f"segment: it {problem}",
            f"Shorten {path} to at most {NAME_MAX} characters." if long else
            f"Rename it, e.g. {path} {_suggest(name)!r}.",
        )


def _suggest(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name.lower())
    cleaned = cleaned.replace("..", ".").strip("._-")
    return cleaned or "my-run"


@rule(
    "PATH002",
    "Derived roots are unique: the run's root is no artifact's root, a smoke is not its full run.",
    example=Example(edits={"name": "qwen2.5-1.5b-instruct", "version": "2026.11.01"}),
    reads_plan=False,
)
def unique_roots(check: Check) -> Iterator[Finding]:
    spec = check.spec
    prefix = spec.execution.store_prefix or "<store>"
    root = artifact_root(prefix, spec.name, spec.version)
    for path, artifact in check.artifacts:
        if (artifact.name, artifact.version) == (spec.name, spec.version):
            yield error(
                "PATH002", ("name", "version", f"{path}.name"),
                f"the run {spec.identity} and {path} {artifact.name}@{artifact.version} derive"
                f" the same root {root}/",
                "Give the run a name of its own (runs and artifacts share the store).",
            )
            break
    smoke = spec.smoke_of
    if smoke is not None and (smoke.name, smoke.version) == (spec.name, spec.version):
        yield error(
            "PATH002", ("smoke_of.name", "smoke_of.version"),
            f"the smoke run {spec.identity} names itself as its full run (smoke_of"
            f" {smoke.name}@{smoke.version}); both would write {root}/",
            "Give the smoke run a name of its own, e.g. with a -smoke suffix.",
        )


def _prefix_problem(prefix: str) -> str | None:
    if "$" in prefix:
        return "expands an environment variable"
    if prefix.startswith("~"):
        return "is relative to a home directory"
    if "/../" in f"{prefix}/":
        return "contains '..'"
    if prefix.startswith(STORE_SCHEMES):
        scheme, _, rest = prefix.partition("://")
        if scheme == "file" and not rest.startswith("/"):
            return "is a file:// URL without an absolute path"
        return None if rest.strip("/") else "has no bucket or path"
    if "://" in prefix:
        return "uses a scheme the store does not support (gs://, s3://, file://)"
    if not prefix.startswith("/"):
        return "is a relative path"
    return None


@rule(
    "PATH003",
    "The store prefix is gs://, s3://, file:// or an absolute path; never ~ or $VAR.",
    example=Example(edits={"execution.store_prefix": "~/rlaunch-store"}),
    reads_plan=False,
)
def store_prefix_real(check: Check) -> Iterator[Finding]:
    prefix = check.spec.execution.store_prefix
    if prefix is None:
        return
    problem = _prefix_problem(prefix)
    if problem is not None:
        yield error(
            "PATH003", ("execution.store_prefix",),
            f"execution.store_prefix {prefix!r} {problem}",
            "Set execution.store_prefix to gs://bucket/path, s3://bucket/path, file:///abs/path"
            " or an absolute path (or null for the local default store).",
        )
