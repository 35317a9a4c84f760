"""Ledger records on a local directory and on an fsspec URL: atomic writes, lookups for World."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlaunch.launch import record_status
from rlaunch.ledger import (
    Ledger,
    LedgerError,
    add_smoke_result,
    attempt_status,
    set_status,
    set_submission,
    start_attempt,
)
from rlaunch.status import AttemptStatus

ATTEMPT = {
    "fingerprint": "sha256:" + "a" * 64,
    "runtime_fingerprint": "sha256:" + "b" * 64,
    "geometry": {"strategy": "fsdp"},
    "launcher_commit": "c" * 40,
    "yaml_digest": "sha256:" + "d" * 64,
    "yaml_path": "/dist/run/launch.yaml",
    "smoke_of": None,
    "skip_smoke_gate": None,
}
SUBMISSION = {
    "executor": "local", "submission_id": "rlaunch-run-2026.11.29-a1", "address": "http://x",
    "attempt_id": "a1", "submitted_at": "t", "entrypoint": ["python", "-m", "m", "y"],
}


def launched(ledger: Ledger, name: str = "run", version: str = "2026.11.29") -> dict:
    ledger.update(name, version, lambda r: start_attempt(r, attempt_id="a1", **ATTEMPT))
    ledger.update(name, version, lambda r: set_submission(r, "a1", SUBMISSION))
    return ledger.update(name, version, lambda r: set_status(r, "a1", AttemptStatus.SUCCEEDED))


def test_a_record_lives_at_the_derived_path_and_keeps_every_field(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path / "store"))
    record = launched(ledger)
    path = tmp_path / "store" / "_ledger" / "run" / "2026.11.29.json"
    assert ledger.record_path("run", "2026.11.29") == str(path)
    assert json.loads(path.read_text()) == record
    assert record["identity"] == "run@2026.11.29"
    assert record["fingerprint"] == ATTEMPT["fingerprint"]
    assert record["status"] == "SUCCEEDED"
    assert record["submission"] == SUBMISSION
    [attempt] = record["attempts"]
    assert attempt["status"] == "SUCCEEDED" and attempt["finished_at"] is not None
    assert attempt["yaml_digest"] == ATTEMPT["yaml_digest"]
    # Atomic replacement leaves no temporary files behind.
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "2026.11.29.json", "2026.11.29.json.lock"
    ]


def test_lookups_for_the_world(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    assert ledger.launched_record("run", "2026.11.29") is None
    # A record holding only smoke results was never launched.
    result = {"smoke": "run-smoke@dev", "attempt_id": "s1", "status": "SUCCEEDED",
              "geometry": {}, "runtime_fingerprint": "sha256:r"}
    ledger.update("run", "2026.11.29", lambda r: add_smoke_result(r, result))
    assert ledger.launched_record("run", "2026.11.29") is None
    assert ledger.smoke_result("run", "2026.11.29") == result
    launched(ledger)
    assert ledger.launched_record("run", "2026.11.29")["fingerprint"] == ATTEMPT["fingerprint"]


def test_the_latest_successful_smoke_wins_over_a_later_failure(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    for attempt, status in (("s1", "SUCCEEDED"), ("s2", "FAILED")):
        result = {"smoke": "x@dev", "attempt_id": attempt, "status": status}
        ledger.update("run", "dev", lambda r, result=result: add_smoke_result(r, result))
    assert ledger.smoke_result("run", "dev")["attempt_id"] == "s1"


def test_checkpoint_runtime_reads_runtime_json(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    root = tmp_path / "run" / "dev" / "checkpoints"
    assert ledger.checkpoint_runtime(str(root)) is None
    root.mkdir(parents=True)
    (root / "runtime.json").write_text('{"runtime_fingerprint": "sha256:old"}')
    assert ledger.checkpoint_runtime(str(root)) == "sha256:old"
    (root / "runtime.json").write_text("not json")
    with pytest.raises(LedgerError) as caught:
        ledger.checkpoint_runtime(str(root))
    assert str(caught.value) == (
        f"{root}/runtime.json is not a runtime record ({{\"runtime_fingerprint\": ...}}); it was "
        "not written by an rlaunch runtime: point resume at a fresh root"
    )


def test_a_damaged_record_is_reported_with_its_path(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    path = Path(ledger.record_path("run", "dev"))
    path.parent.mkdir(parents=True)
    path.write_text("{truncated")
    with pytest.raises(LedgerError) as caught:
        ledger.read("run", "dev")
    assert str(caught.value).startswith(f"the ledger record {path} is not valid JSON (")
    assert str(caught.value).endswith("move it aside and launch again")


def test_an_fsspec_url_prefix_works_the_same(tmp_path: Path) -> None:
    ledger = Ledger("memory://rlaunch-ledger-test/store")
    record = launched(ledger)
    assert ledger.record_path("run", "2026.11.29") == (
        "memory://rlaunch-ledger-test/store/_ledger/run/2026.11.29.json"
    )
    assert Ledger("memory://rlaunch-ledger-test/store").read("run", "2026.11.29") == record


def test_the_w_and_b_run_a_runtime_reports_is_recorded_in_its_attempt(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path / "store"))
    launched(ledger)
    manifest = tmp_path / "store" / "run" / "2026.11.29" / "terminal.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"status": "succeeded", "attempt_id": "a1",
                                    "wandb_url": "https://wandb.ai/team/proj/runs/abc123"}))
    said: list[str] = []
    record_status(ledger, "run", "2026.11.29", "a1", AttemptStatus.SUCCEEDED, said.append)
    [attempt] = ledger.read("run", "2026.11.29")["attempts"]
    assert attempt["wandb_url"] == "https://wandb.ai/team/proj/runs/abc123"
    assert said[-1] == ("rlaunch: run@2026.11.29 attempt a1: W&B run "
                        "https://wandb.ai/team/proj/runs/abc123")


def test_an_attempt_records_the_run_exports_it_reads(tmp_path: Path) -> None:
    """What the attempt read of other runs; None when not known (and in older records)."""
    ledger = Ledger(str(tmp_path))
    read = {"sft@dev": {"content": "sha256:" + "e" * 64, "attempt_id": "u1"}}
    ledger.update("run", "dev", lambda r: start_attempt(r, attempt_id="a1", **ATTEMPT,
                                                         run_exports=read))
    ledger.update("run", "dev", lambda r: start_attempt(r, attempt_id="a2", **ATTEMPT))
    first, second = ledger.read("run", "dev")["attempts"]
    assert (first["run_exports"], second["run_exports"]) == (read, None)


def test_an_attempt_whose_run_exports_are_not_an_object_is_refused(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    launched(ledger, version="dev")
    path = Path(ledger.record_path("run", "dev"))
    record = json.loads(path.read_text())
    record["attempts"][0]["run_exports"] = ["sft@dev"]
    path.write_text(json.dumps(record))
    with pytest.raises(LedgerError) as caught:
        ledger.read("run", "dev")
    assert str(caught.value) == (
        f"the ledger record {path} has the wrong shape (attempts[0].run_exports is a list, not "
        "an object); it was not written by rlaunch or was edited by hand: move it aside and "
        "launch again"
    )


def test_a_record_written_before_the_status_enum_reads_and_is_written_the_same(
    tmp_path: Path,
) -> None:
    # The ledger's JSON as launches wrote it with string statuses (schema_version 1).
    old = {
        "schema_version": 1, "identity": "run@dev", "name": "run", "version": "dev",
        **ATTEMPT, "status": "submitting", "submission": None, "smoke_results": [],
        "updated_at": "2026-11-29T10:00:00Z",
        "attempts": [
            {"attempt_id": a, "status": s, "submission": None, "finished_at": None,
             "started_at": "2026-11-29T09:00:00Z", "error": None}
            for a, s in (("a1", "submit-failed"), ("a2", "LOST"), ("a3", "SUCCEEDED"),
                         ("a4", "submitting"))
        ],
    }
    path = tmp_path / "_ledger" / "run" / "dev.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    ledger = Ledger(str(tmp_path))
    attempts = ledger.read("run", "dev")["attempts"]
    assert [attempt_status(a) for a in attempts] == [
        AttemptStatus.SUBMIT_FAILED, AttemptStatus.LOST, AttemptStatus.SUCCEEDED,
        AttemptStatus.SUBMITTING,
    ]
    assert [attempt_status(a).is_terminal() for a in attempts] == [True, True, True, False]
    ledger.update("run", "dev", lambda r: set_status(r, "a4", AttemptStatus.SUBMIT_FAILED,
                                                     error="interrupted"))
    written = json.loads(path.read_text())
    assert (written["status"], written["attempts"][-1]["status"]) == ("submit-failed",
                                                                      "submit-failed")
    assert written["attempts"][-1]["finished_at"] is not None
    assert [a["status"] for a in written["attempts"][:3]] == ["submit-failed", "LOST", "SUCCEEDED"]
