"""Issue 13 item 5: a damaged ledger, a damaged artifact record and an absurd identity get one
clear error naming the file, never a traceback."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rlaunch.cli import main
from rlaunch.ledger import Ledger, LedgerError
from rlaunch.store import ArtifactStore, StoreError


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ([1, 2], "a JSON object was expected, got list"),
        ({"attempts": 5}, "attempts is a int, not a list"),
        ({"attempts": [5]}, "attempts[0] is a int, not an object"),
        ({"attempts": [{"submission": "x"}]}, "attempts[0].submission is a str, not an object"),
    ],
)
def test_a_ledger_of_valid_json_in_the_wrong_shape_is_named(tmp_path, content, problem):
    record = tmp_path / "_ledger" / "run" / "dev.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps(content))
    message = (
        f"the ledger record {record} has the wrong shape ({problem}); it was not written by "
        f"rlaunch or was edited by hand: move it aside and launch again"
    )
    with pytest.raises(LedgerError) as caught:
        Ledger(str(tmp_path)).read("run", "dev")
    assert str(caught.value) == message
    result = CliRunner().invoke(main, ["status", "run@dev", "--store", str(tmp_path)])
    assert isinstance(result.exception, SystemExit)
    assert result.exit_code == 1
    assert result.stderr == f"Error: {message}\n"


def test_a_submission_missing_its_fields_is_named(tmp_path):
    record = tmp_path / "_ledger" / "run" / "dev.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"attempts": [{"submission": {"job": 1}}]}))
    result = CliRunner().invoke(main, ["status", "run@dev", "--store", str(tmp_path)])
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: the last attempt in the ledger {record} is damaged (not a submission record: "
        f"field 'executor' is missing); move the record aside\n"
    )


def test_a_5000_character_identity_is_refused_before_it_becomes_a_path(tmp_path):
    target = "a" * 5000 + "@dev"
    result = CliRunner().invoke(main, ["status", target, "--store", str(tmp_path)])
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert (
        "Invalid value for TARGET: " + "a" * 57 + "... (5004 characters) is longer than any run "
        "identity (200 characters at most)"
    ) in result.stderr


def test_a_record_that_is_a_directory_is_named_with_the_fix(tmp_path):
    root = tmp_path / "data" / "dev"
    (root / "_record.json").mkdir(parents=True)
    with pytest.raises(StoreError) as caught:
        ArtifactStore(str(tmp_path)).read_record("data", "dev")
    assert str(caught.value) == (
        f"{root / '_record.json'} cannot be read (Is a directory); the record was damaged by "
        f"hand: delete {root} and build again"
    )
