"""The examples in docs/spec-format.md and docs/launch-yaml.md are what the code gives."""

from __future__ import annotations

from pathlib import Path

import yaml

from rlaunch.render import SECTIONS, render_launch
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.spec.skyrl_mapping import markdown_table

DOCS = Path(__file__).resolve().parents[2] / "docs"
LAUNCHER_COMMIT = "3f1c2b7a9d0e4f5a6b7c8d9e0f1a2b3c4d5e6f70"


def block_after(doc: str, marker: str) -> str:
    """The fenced code block right after the HTML comment starting with `marker`."""
    text = (DOCS / doc).read_text()
    after = text.split(f"<!-- {marker}", 1)[1]
    body = after.split("```yaml\n", 1)[1]
    return body.split("```\n", 1)[0]


def test_the_spec_format_example_is_the_worked_example():
    block = block_after("spec-format.md", "spec-example:")
    assert yaml.safe_load(block) == worked_example("colocated-1x8")
    parse_spec(yaml.safe_load(block))


def test_the_launch_yaml_example_is_the_render_byte_for_byte():
    spec = parse_spec(worked_example("colocated-1x8"))
    rendered = render_launch(spec, store_prefix="gs://rlaunch-example/store",
                             launcher_commit=LAUNCHER_COMMIT)
    assert block_after("launch-yaml.md", "launch-example:") == rendered


def test_the_launch_yaml_doc_describes_every_section():
    text = (DOCS / "launch-yaml.md").read_text()
    for section in SECTIONS:
        assert f"### `{section}`" in text


def test_the_launch_yaml_doc_shows_the_skyrl_mapping_table_as_the_code_has_it():
    text = (DOCS / "launch-yaml.md").read_text()
    region = text.split("<!-- skyrl-mapping", 1)[1].split("-->\n", 1)[1]
    assert region.split("<!-- /skyrl-mapping", 1)[0] == markdown_table()
