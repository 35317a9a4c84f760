"""`rlaunch build FILE`: build one artifact and its dependencies into the store, or reuse them."""

from __future__ import annotations

import traceback
from datetime import UTC, datetime
from pathlib import Path

import click
from pydantic import TypeAdapter, ValidationError

from rlaunch.builders.base import AnyArtifact, BuildError
from rlaunch.builders.graph import build_artifact, plan
from rlaunch.builders.pin import PinError, hf_model_text, resolve, write_into
from rlaunch.builders.rules import graph_problems
from rlaunch.spec.artifacts import Artifact
from rlaunch.spec.documents import DocumentError, read_document
from rlaunch.spec.io import validation_problems
from rlaunch.spec.syntax import SAFE_NAME, is_calendar, is_dev
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


def refuse_broken_graph(file: Path, artifact: AnyArtifact) -> None:
    """Exit 1, listing every problem, when the artifact's graph breaks a build rule."""
    problems = graph_problems([(artifact.name, artifact)])
    if problems:
        click.echo(f"error: {file}: the artifact graph breaks a rule:", err=True)
        for problem in problems:
            click.echo(f"  - {problem}", err=True)
        raise SystemExit(1)


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
        refuse_broken_graph(file, artifact)
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


@click.command("pin")
@click.argument("repo_id")
@click.option("--revision", default="main", show_default=True,
              help="Branch, tag or commit of the model repo to pin; resolved to its commit.")
@click.option("--name", default=None,
              help="The target's name (default: none written, so the BUILD directory's name).")
@click.option("--version", "version", default=None,
              help="The artifact's version. Default: today's date, YYYY.MM.DD (UTC).")
@click.option("--write", "build_file", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="Write the target into this BUILD file, in place of the hf_model of the same "
              "name (without --name: the one pinning REPO_ID), else at its end.")
def pin(repo_id: str, revision: str, name: str | None, version: str | None,
        build_file: Path | None) -> None:
    """Pin the Hugging Face model REPO_ID: resolve --revision to its 40-hex commit and print
    (or --write) the hf_model target with the facts read at that commit.

    The facts come from the model's config.json and the parameter count from its safetensors
    headers, read with huggingface_hub from $HF_ENDPOINT (default https://huggingface.co) with
    $HF_TOKEN. The snapshot builder checks the same facts against the files it downloads.
    Exit status: 0 pinned, 1 the Hub refused or the model lacks a fact, 2 bad arguments.
    """
    if version is not None and not (is_calendar(version) or is_dev(version)):
        raise click.BadParameter(
            f"{version!r} is not YYYY.MM.DD[.N] nor dev / <label>-dev", param_hint="--version")
    if name is not None and not SAFE_NAME.fullmatch(name):
        raise click.BadParameter(f"{name!r} is not a target name like qwen2.5-1.5b (lower-case "
                                 f"letters, digits, '.', '_', '-')", param_hint="--name")
    try:
        resolved = resolve(repo_id, revision)
        text = hf_model_text(resolved, name, version or datetime.now(UTC).strftime("%Y.%m.%d"))
        if build_file is None:
            click.echo(text, nl=False)
            return
        what = write_into(build_file, text, repo_id, name)
    except PinError as err:
        click.echo(f"error: rlaunch pin {repo_id} --revision {revision}: {err}", err=True)
        raise SystemExit(1) from None
    click.echo(f"{build_file}: {what} hf_model {name or repo_id} at {resolved.commit}")
