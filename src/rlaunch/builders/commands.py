"""`rlaunch build FILE`: build one artifact and its dependencies into the store, or reuse them."""

from __future__ import annotations

import traceback
from pathlib import Path

import click
from pydantic import TypeAdapter, ValidationError

from rlaunch.builders.base import AnyArtifact, BuildError
from rlaunch.builders.graph import build_artifact, plan
from rlaunch.builders.rules import graph_problems
from rlaunch.spec.artifacts import Artifact
from rlaunch.spec.documents import DocumentError, read_document
from rlaunch.spec.io import validation_problems
from rlaunch.store import StoreError

_ARTIFACT = TypeAdapter(Artifact)


class ArtifactFileError(Exception):
    """An artifact file that cannot be read or is not one artifact in the public format."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))

    def render(self) -> str:
        lines = [f"{self.source}: not a valid artifact ({len(self.problems)} problem(s))"]
        lines += [f"  - {problem}" for problem in self.problems]
        lines.append(
            "  An artifact file holds one artifact (type hf_model, hf_dataset, adopted or built); "
            "the format is documented in docs/spec-format.md and docs/artifacts.md."
        )
        return "\n".join(lines)


def load_artifact(path: str | Path) -> AnyArtifact:
    """Read a YAML/JSON file holding one artifact in the public format."""
    source = str(path)
    try:
        data = read_document(path)
    except DocumentError as err:
        raise ArtifactFileError(source, [str(err)]) from None
    if not isinstance(data, dict):
        raise ArtifactFileError(
            source, [f"the document must be a mapping, got {type(data).__name__}"]
        )
    try:
        return _ARTIFACT.validate_python(data)
    except ValidationError as err:
        raise ArtifactFileError(source, validation_problems(err)) from None


@click.command("build")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--store",
    "store_prefix",
    metavar="PREFIX",
    default=None,
    help="Store prefix: a directory or a gs://, s3:// URL. Default: $RLAUNCH_STORE, else "
    "~/.cache/rlaunch/store.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Rebuild every artifact of the graph even when up to date (a calendar version still "
    "may not change content).",
)
@click.option(
    "--verify",
    is_flag=True,
    help="Hash every file of every reused artifact instead of trusting the digest cache for "
    "files unchanged since they were hashed (device, inode, size, mtime, ctime).",
)
@click.option(
    "--list",
    "list_only",
    is_flag=True,
    help="Print the identities and fingerprints the graph uses, dependencies first; build "
    "nothing.",
)
def build(
    file: Path, store_prefix: str | None, force: bool, verify: bool, list_only: bool
) -> None:
    """Build the artifact in FILE and its dependencies into the store, reusing what is built.

    FILE is YAML or JSON holding ONE artifact (hf_model, hf_dataset, adopted or built, as in a
    run spec). Each artifact is built once per identity (name@version) and reused while its
    fingerprint is unchanged. A calendar version (YYYY.MM.DD[.N]) is immutable: building it
    with other content is refused ("bump the version"), and it may not depend on a dev version;
    dev versions (`dev`, `<label>-dev`) are rebuilt every time.

    Prints what it did per artifact, then the identity, fingerprint and path. Exit status: 0
    built or up to date, 1 a rule refused or a build failed, 2 FILE unreadable or not an
    artifact.
    """
    try:
        artifact = load_artifact(file)
    except ArtifactFileError as err:
        click.echo(err.render(), err=True)
        raise SystemExit(2) from None
    if list_only:
        for ident, content_fp, _ in plan(artifact):
            click.echo(f"{ident} {content_fp}")
        problems = graph_problems([(artifact.name, artifact)])
        if problems:
            click.echo(f"error: {file}: the artifact graph breaks a rule:", err=True)
            for problem in problems:
                click.echo(f"  - {problem}", err=True)
            raise SystemExit(1)
        return
    try:
        result = build_artifact(
            artifact, store_prefix, force=force, verify=verify, log=click.echo
        )
    except (BuildError, StoreError) as err:
        cause = err.__cause__
        if cause is not None and not isinstance(cause, (BuildError, StoreError)):
            # A builder crashed (a bug, not a user mistake): its traceback is what helps.
            click.echo("".join(traceback.format_exception(cause)).rstrip(), err=True)
        click.echo(f"error: {err}", err=True)
        raise SystemExit(1) from None
    click.echo(result.identity)
    click.echo(f"  fingerprint: {result.fingerprint}")
    click.echo(f"  path: {result.uri}")
