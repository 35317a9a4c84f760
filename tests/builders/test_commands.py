"""`rlaunch build FILE`: what it prints and its exit status."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from builders.helpers import calls_of, node
from rlaunch.cli import main
from rlaunch.spec.artifacts import BuiltArtifact, fingerprint


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def test_build_prints_each_node_then_identity_fingerprint_and_path(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    data = node("top", calls, deps={"in": node("leaf", calls)})
    spec = write(tmp_path / "top.yaml", data)
    store = tmp_path / "store"
    first = CliRunner().invoke(main, ["build", str(spec), "--store", str(store)])
    assert first.exit_code == 0, first.output
    top_fp = fingerprint(BuiltArtifact.model_validate(data))
    lines = first.output.splitlines()
    assert lines[-3:] == ["top@2026.01.01", f"  fingerprint: {top_fp}",
                          f"  path: {store / 'top' / '2026.01.01'}"]
    assert lines[0].startswith("building leaf@2026.01.01 with ")
    second = CliRunner().invoke(main, ["build", str(spec), "--store", str(store)])
    assert second.exit_code == 0
    assert "top@2026.01.01 up to date (sha256:" in second.output
    assert calls_of(calls) == ["leaf@2026.01.01", "top@2026.01.01"]
    forced = CliRunner().invoke(main, ["build", str(spec), "--store", str(store), "--force"])
    assert forced.exit_code == 0 and len(calls_of(calls)) == 4


def test_list_prints_identities_and_fingerprints_and_builds_nothing(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    leaf = node("leaf", calls)
    data = node("top", calls, deps={"in": leaf})
    spec = tmp_path / "top.json"
    spec.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["build", "--list", str(spec)])
    assert result.exit_code == 0
    assert result.output == (
        f"leaf@2026.01.01 {fingerprint(BuiltArtifact.model_validate(leaf))}\n"
        f"top@2026.01.01 {fingerprint(BuiltArtifact.model_validate(data))}\n"
    )
    assert calls_of(calls) == []


def test_a_rule_failure_exits_1_with_the_message(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    spec = write(tmp_path / "top.yaml",
                 node("top", calls, deps={"in": node("leaf", calls, version="dev")}))
    result = CliRunner().invoke(main, ["build", str(spec), "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert "error: the artifact graph breaks 1 rule(s):\n  - top.deps.in: top@2026.01.01 has " \
           "a calendar version but depends on leaf@dev" in result.output
    listed = CliRunner().invoke(main, ["build", "--list", str(spec)])
    assert listed.exit_code == 1 and "depends on leaf@dev" in listed.output


def test_a_crashing_builder_shows_its_traceback_and_exits_1(tmp_path: Path) -> None:
    from builders.helpers import FailingBuilder, builder_ref

    spec = write(tmp_path / "a.yaml",
                 node("a", tmp_path / "calls", builder=builder_ref(FailingBuilder)))
    result = CliRunner().invoke(main, ["build", str(spec), "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert "Traceback (most recent call last):" in result.output
    assert result.output.rstrip().endswith(
        "RuntimeError: the builder broke halfway")


def test_an_unreadable_or_invalid_file_exits_2(tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["build", str(tmp_path / "none.yaml")])
    assert missing.exit_code == 2
    assert "none.yaml: not a valid artifact (1 problem(s))\n  - cannot read the file: No such " \
           "file or directory" in missing.output
    bad = write(tmp_path / "bad.yaml", {"type": "built", "name": "x", "version": "dev",
                                        "kind": "model", "builder": "b", "config": {},
                                        "deps": {}, "facts": None, "rows": None, "colour": 1})
    invalid = CliRunner().invoke(main, ["build", str(bad)])
    assert invalid.exit_code == 2
    assert "  - colour: unknown key (remove it or check its spelling)" in invalid.output
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    not_a_mapping = CliRunner().invoke(main, ["build", str(tmp_path / "list.yaml")])
    assert not_a_mapping.exit_code == 2
    assert "the document must be a mapping, got list" in not_a_mapping.output
