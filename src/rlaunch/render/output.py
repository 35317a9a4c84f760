"""Writing a launch document as YAML, and reading one back (executors and runtimes do)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import yaml

from rlaunch.atomic import write_text_atomically
from rlaunch.paths import LAUNCH_DIGEST_ENV
from rlaunch.render.document import LAUNCH_SCHEMA_VERSION, SECTIONS, launch_document
from rlaunch.render.launchdoc import LaunchDocument, LaunchError
from rlaunch.spec import RunSpec
from rlaunch.spec.documents import Dumper

HEADER = (
    f"# rlaunch launch YAML (schema_version {LAUNCH_SCHEMA_VERSION}), rendered from a RunSpec by "
    "rlaunch.render.\n"
    "# Do not edit: change the spec and render again. Format: docs/launch-yaml.md\n"
)


class _Dumper(Dumper):
    """Safe dumper (a string our loader reads as a number is quoted) that never writes YAML
    aliases: a repeated mapping (the same model as policy and tokenizer source, say) is written
    out each time, so the file reads on its own.

    Pure Python on purpose (about 5 ms a document): libyaml's emitter may lay text out
    differently, and the bytes must not depend on whether a machine has libyaml."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dumps_launch(document: dict[str, Any]) -> str:
    """The YAML text of a launch document: header comment, keys in document order, block style,
    no line folding (a long path or command stays on one line), ASCII only.

    Non-ASCII characters are written as escapes in double-quoted strings: PyYAML's unicode output
    writes some (NEL, U+0085) raw, and they read back as line breaks, so a string would not
    survive the round trip."""
    body = yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=False,
        width=2**31 - 1,
    )
    return HEADER + body


def render_launch(spec: RunSpec, *, store_prefix: str, launcher_commit: str | None) -> str:
    """The launch YAML of `spec`: the same spec and arguments give the same bytes."""
    return dumps_launch(
        launch_document(spec, store_prefix=store_prefix, launcher_commit=launcher_commit)
    )


def write_atomically(path: str | os.PathLike, text: str) -> Path:
    """Write atomically, readable by all: a launch YAML holds no secret, and executors on
    other accounts read it."""
    return write_text_atomically(path, text, mode=0o644)


def render_to_file(
    spec: RunSpec,
    path: str | os.PathLike,
    *,
    store_prefix: str,
    launcher_commit: str | None,
) -> Path:
    """Render and write atomically; returns the path written."""
    text = render_launch(spec, store_prefix=store_prefix, launcher_commit=launcher_commit)
    return write_atomically(path, text)


def loads_launch(text: str, source: str = "<launch yaml>") -> LaunchDocument:
    """Parse launch YAML text and check that it is a schema this rlaunch reads, field by field."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise LaunchError(f"{source}: not valid YAML: {err}") from None
    if not isinstance(document, dict):
        raise LaunchError(
            f"{source}: a launch YAML is a mapping with schema_version {LAUNCH_SCHEMA_VERSION}, "
            f"got a {type(document).__name__}; render one with `rlaunch render SPEC -o FILE`"
        )
    version = document.get("schema_version")
    if version != LAUNCH_SCHEMA_VERSION:
        shown = "missing" if "schema_version" not in document else repr(version)
        raise LaunchError(
            f"{source}: schema_version is {shown}, this rlaunch reads schema_version "
            f"{LAUNCH_SCHEMA_VERSION}; render the spec again with this rlaunch "
            "(`rlaunch render SPEC -o FILE`) or use the rlaunch that wrote it"
        )
    missing = [section for section in SECTIONS if section not in document]
    if missing:
        raise LaunchError(
            f"{source}: missing section(s) {', '.join(missing)}; a launch YAML has "
            f"{', '.join(SECTIONS)} (docs/launch-yaml.md); render it again instead of editing it"
        )
    return LaunchDocument.parse(document, source)


def load_launch(path: str | os.PathLike) -> LaunchDocument:
    """Read a launch YAML file (as written by `render_to_file`) back, typed and checked."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise LaunchError(f"{source}: cannot read the launch YAML: {err.strerror}") from None
    expected = os.environ.get(LAUNCH_DIGEST_ENV)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if expected and digest != expected:
        raise LaunchError(
            f"{source}: its digest is {digest}, but this attempt was preflighted and recorded "
            f"with {expected} ({LAUNCH_DIGEST_ENV}): the file changed after the launch checked "
            f"it, so the job refuses to run it. Launch again."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LaunchError(f"{source}: the launch YAML is not UTF-8 text") from None
    return loads_launch(text, source)
