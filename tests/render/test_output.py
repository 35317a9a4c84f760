"""Writing the launch YAML atomically and reading it back with a schema check."""

from __future__ import annotations

import pytest

from rlaunch.render import (
    LaunchError,
    launch_document,
    load_launch,
    loads_launch,
    render_launch,
    render_to_file,
)
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example

PREFIX = "/srv/rlaunch-store"


@pytest.fixture
def spec():
    return parse_spec(worked_example("disaggregated-8x8-tp8"))


def test_render_to_file_writes_the_rendered_bytes_and_leaves_no_temporary(spec, tmp_path):
    path = tmp_path / "dist" / "launch.yaml"
    written = render_to_file(spec, path, store_prefix=PREFIX, launcher_commit=None)
    assert written == path
    assert path.read_bytes() == render_launch(
        spec, store_prefix=PREFIX, launcher_commit=None
    ).encode()
    assert [p.name for p in path.parent.iterdir()] == ["launch.yaml"]


def test_render_to_file_replaces_an_existing_file_whole(spec, tmp_path):
    path = tmp_path / "launch.yaml"
    path.write_text("stale: true\n" * 10_000)
    render_to_file(spec, path, store_prefix=PREFIX, launcher_commit=None)
    assert "stale" not in path.read_text()
    assert load_launch(path).run.id == "disaggregated-8x8-tp8@2026.11.29"


def test_load_launch_gives_back_the_document(spec, tmp_path):
    path = render_to_file(spec, tmp_path / "launch.yaml", store_prefix=PREFIX,
                          launcher_commit="a" * 40)
    loaded = load_launch(path)
    assert loaded.to_dict() == launch_document(spec, store_prefix=PREFIX,
                                               launcher_commit="a" * 40)
    assert loaded.runtime.launcher_commit == "a" * 40
    assert loaded.source == str(path)


def test_a_newer_schema_version_is_refused_with_what_to_do(spec):
    text = render_launch(spec, store_prefix=PREFIX, launcher_commit=None)
    newer = text.replace("schema_version: 1\n", "schema_version: 2\n", 1)
    with pytest.raises(LaunchError) as caught:
        loads_launch(newer, "dist/launch.yaml")
    assert str(caught.value) == (
        "dist/launch.yaml: schema_version is 2, this rlaunch reads schema_version 1; render the "
        "spec again with this rlaunch (`rlaunch render SPEC -o FILE`) or use the rlaunch that "
        "wrote it"
    )


def test_a_missing_schema_version_is_named(spec):
    text = render_launch(spec, store_prefix=PREFIX, launcher_commit=None)
    with pytest.raises(LaunchError) as caught:
        loads_launch(text.replace("schema_version: 1\n", "", 1), "l.yaml")
    assert str(caught.value).startswith("l.yaml: schema_version is missing, this rlaunch reads")


def test_missing_sections_are_listed():
    with pytest.raises(LaunchError) as caught:
        loads_launch("schema_version: 1\nrun: {}\nskyrl: {}\n", "l.yaml")
    assert str(caught.value) == (
        "l.yaml: missing section(s) runtime, execution, artifacts, inputs, resume; a launch YAML "
        "has schema_version, run, runtime, execution, artifacts, inputs, resume, skyrl "
        "(docs/launch-yaml.md); render it again instead of editing it"
    )


def test_not_a_mapping_and_not_yaml():
    with pytest.raises(LaunchError) as caught:
        loads_launch("- a\n- b\n", "l.yaml")
    assert str(caught.value) == (
        "l.yaml: a launch YAML is a mapping with schema_version 1, got a list; render one with "
        "`rlaunch render SPEC -o FILE`"
    )
    with pytest.raises(LaunchError) as caught:
        loads_launch("run: [unclosed\n", "l.yaml")
    assert str(caught.value).startswith("l.yaml: not valid YAML: ")


def test_an_unreadable_file_is_named(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(LaunchError) as caught:
        load_launch(missing)
    assert str(caught.value) == (
        f"{missing}: cannot read the launch YAML: No such file or directory"
    )


def test_the_written_file_is_readable_by_others(spec, tmp_path):
    path = render_to_file(spec, tmp_path / "launch.yaml", store_prefix=PREFIX,
                          launcher_commit=None)
    assert path.stat().st_mode & 0o777 == 0o644
