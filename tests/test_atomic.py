"""rlaunch.atomic: whole files or nothing."""

from __future__ import annotations

import stat

import pytest

from rlaunch.atomic import write_json_atomically, write_text_atomically


def test_replaces_the_file_whole_with_the_mode_asked(tmp_path):
    target = tmp_path / "deep" / "record.json"
    write_text_atomically(target, "old\n")
    write_json_atomically(target, {"b": 1, "a": [2]}, mode=0o600)
    assert target.read_text() == '{\n  "a": [\n    2\n  ],\n  "b": 1\n}\n'
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["record.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "pointer.txt"
    write_text_atomically(target, "3\n")
    with pytest.raises(TypeError):
        write_text_atomically(target, 4)  # type: ignore[arg-type]
    assert target.read_text() == "3\n"
    assert [p.name for p in tmp_path.iterdir()] == ["pointer.txt"]
