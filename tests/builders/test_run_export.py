"""A run's export as an input: recorded from the ledger and the store, never built."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import fsspec
import pytest

from rlaunch.builders import BuildError, materialize_artifacts
from rlaunch.ledger import Ledger, set_status, set_submission, start_attempt
from rlaunch.paths import run_paths
from rlaunch.spec import RunExport, parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.status import AttemptStatus
from rlaunch.store import RECORD_FILE


def stage2(version: str = "2026.11.29") -> RunExport:
    data = worked_example("grpo-stage2")
    data["model"]["version"] = data["model"]["run"]["version"] = version
    export = parse_spec(data).model
    assert isinstance(export, RunExport)
    return export


def finish(store: Path, export: RunExport, *, status: str = "SUCCEEDED",
           fingerprint: str | None = None, attempt: str = "a1") -> Path:
    """Record an attempt of the upstream run ending `status`; write its export and manifest."""
    ledger = Ledger(str(store))

    def started(record: dict) -> None:
        start_attempt(record, attempt_id=attempt,
                      fingerprint=fingerprint or export.run.fingerprint,
                      runtime_fingerprint="sha256:r", geometry={}, launcher_commit=None,
                      yaml_digest="sha256:y", yaml_path="/y", smoke_of=None,
                      skip_smoke_gate=None)
        set_submission(record, attempt, {"submission_id": "job"})
        set_status(record, attempt, AttemptStatus(status))

    ledger.update(export.name, export.version, started)
    paths = run_paths(str(store), export.name, export.version)
    folder = Path(paths.export_root)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"vocab_size": 50}')
    (folder / "model.safetensors").write_bytes(b"weights-" + attempt.encode())
    Path(paths.terminal_manifest).write_text(json.dumps({"status": "succeeded",
                                                          "export_path": paths.export_root}))
    return folder


def test_a_finished_runs_export_is_recorded_once_then_reused(tmp_path: Path) -> None:
    export = stage2()
    folder = finish(tmp_path, export)
    logs: list[str] = []
    paths = materialize_artifacts({"model": export}, str(tmp_path), log=logs.append)
    assert paths == {"model": folder}
    record = json.loads((folder / RECORD_FILE).read_text())
    assert record["identity"] == "colocated-1x8@2026.11.29"
    assert record["type"] == "run_export"
    assert [entry["path"] for entry in record["files"]] == ["config.json", "model.safetensors"]
    assert logs[0] == ("recorded the export of colocated-1x8@2026.11.29 as an input (2 file(s), "
                       "28 bytes)")
    logs.clear()
    materialize_artifacts({"model": export}, str(tmp_path), log=logs.append)
    assert logs[0].startswith("colocated-1x8@2026.11.29 (a run's export) up to date")


@pytest.mark.parametrize(("status", "fingerprint", "reason"), [
    ("FAILED", None, "its last attempt a1 is FAILED"),
    ("SUCCEEDED", "sha256:0123456789abcdef",
     "its last attempt a1 ran fingerprint 0123456789ab, not this spec's "),
])
def test_an_unfinished_run_is_refused_with_how_to_finish_it(
    tmp_path: Path, status: str, fingerprint: str | None, reason: str
) -> None:
    export = stage2()
    finish(tmp_path, export, status=status, fingerprint=fingerprint)
    with pytest.raises(BuildError) as error:
        materialize_artifacts({"model": export}, str(tmp_path), log=lambda text: None)
    message = str(error.value)
    assert message.startswith(
        "colocated-1x8@2026.11.29 is the export of run colocated-1x8@2026.11.29, which has not "
        f"finished: {reason}"
    )
    assert message.endswith(
        "launch it first: `./pants run` of a stage that consumes it launches it before the "
        "stage (or `rlaunch launch` its spec); `rlaunch show colocated-1x8@2026.11.29` shows "
        "its attempts"
    )


def test_a_never_launched_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="which has not finished: never launched; launch it"):
        materialize_artifacts({"model": stage2()}, str(tmp_path), log=lambda text: None)


def test_a_calendar_export_changed_after_it_was_recorded_is_refused(tmp_path: Path) -> None:
    export = stage2()
    folder = finish(tmp_path, export)
    materialize_artifacts({"model": export}, str(tmp_path), log=lambda text: None)
    (folder / "model.safetensors").write_bytes(b"other weights")
    with pytest.raises(BuildError, match="the export of colocated-1x8@2026.11.29 changed after "
                       "it was recorded: .*A calendar run runs once and its export is immutable"):
        materialize_artifacts({"model": export}, str(tmp_path), log=lambda text: None)


def test_a_dev_run_that_finished_again_is_recorded_again(tmp_path: Path) -> None:
    export = stage2("dev")
    folder = finish(tmp_path, export)
    materialize_artifacts({"model": export}, str(tmp_path), log=lambda text: None)
    finish(tmp_path, export, attempt="a2-longer")
    logs: list[str] = []
    materialize_artifacts({"model": export}, str(tmp_path), log=logs.append)
    assert logs[0] == ("colocated-1x8@dev: the dev run finished again since its export was "
                       "recorded; recording it again")
    record = json.loads((folder / RECORD_FILE).read_text())
    assert record["files"][1]["size"] == len(b"weights-a2-longer")


def test_on_an_object_store_the_export_is_hashed_there_and_copied_once(
    s3_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against moto's S3 server: the record lists each file's sha256 (streamed from S3), is
    written beside the export, and the local readers get a verified copy in the cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    export = stage2()
    ledger = Ledger(s3_store)

    def started(record: dict) -> None:
        start_attempt(record, attempt_id="a1", fingerprint=export.run.fingerprint,
                      runtime_fingerprint="sha256:r", geometry={}, launcher_commit=None,
                      yaml_digest="sha256:y", yaml_path="/y", smoke_of=None,
                      skip_smoke_gate=None)
        set_submission(record, "a1", {"submission_id": "job"})
        set_status(record, "a1", AttemptStatus.SUCCEEDED)

    ledger.update(export.name, export.version, started)
    paths = run_paths(s3_store, export.name, export.version)
    fs, root = fsspec.core.url_to_fs(paths.export_root)
    fs.pipe_file(f"{root}/config.json", b'{"vocab_size": 50}')
    fs.pipe_file(f"{root}/model.safetensors", b"remote weights")
    fs.pipe_file(fsspec.core.url_to_fs(paths.terminal_manifest)[1], json.dumps(
        {"status": "succeeded", "export_path": paths.export_root}).encode())
    logs: list[str] = []
    folder = materialize_artifacts({"model": export}, s3_store, log=logs.append)["model"]
    assert (folder / "model.safetensors").read_bytes() == b"remote weights"
    assert str(folder).startswith(str(tmp_path / "cache"))
    record = json.loads(fs.cat_file(f"{root}/_record.json"))
    assert record["files"][1] == {"path": "model.safetensors", "size": 14,
                                  "sha256": hashlib.sha256(b"remote weights").hexdigest()}
    assert logs[0] == ("recorded the export of colocated-1x8@2026.11.29 as an input (2 file(s), "
                       "32 bytes)")
    logs.clear()
    materialize_artifacts({"model": export}, s3_store, log=logs.append)
    assert logs[0].startswith("colocated-1x8@2026.11.29 (a run's export) up to date")


def test_a_dev_relaunch_that_wrote_files_of_the_same_sizes_is_recorded_again(
    s3_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On an object store the record is checked by sizes (hashing the bucket on every read
    would cost what the record saves); a dev relaunch of the same model writes files of the
    same sizes, so the record names the attempt that wrote the export, and another attempt
    records it again: the local copy and the sha256 the nodes verify follow the new bytes."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    export = stage2("dev")
    ledger = Ledger(s3_store)
    paths = run_paths(s3_store, export.name, export.version)
    fs, root = fsspec.core.url_to_fs(paths.export_root)

    def finish_remote(attempt: str) -> None:
        def started(record: dict) -> None:
            start_attempt(record, attempt_id=attempt, fingerprint=export.run.fingerprint,
                          runtime_fingerprint="sha256:r", geometry={}, launcher_commit=None,
                          yaml_digest="sha256:y", yaml_path="/y", smoke_of=None,
                          skip_smoke_gate=None)
            set_submission(record, attempt, {"submission_id": "job"})
            set_status(record, attempt, AttemptStatus.SUCCEEDED)

        ledger.update(export.name, export.version, started)
        fs.pipe_file(f"{root}/config.json", b'{"vocab_size": 50}')
        fs.pipe_file(f"{root}/model.safetensors", b"weights-" + attempt.encode())
        fs.pipe_file(fsspec.core.url_to_fs(paths.terminal_manifest)[1], json.dumps(
            {"status": "succeeded", "export_path": paths.export_root}).encode())

    finish_remote("a1")
    folder = materialize_artifacts({"model": export}, s3_store, log=lambda text: None)["model"]
    assert (folder / "model.safetensors").read_bytes() == b"weights-a1"
    finish_remote("a2")
    logs: list[str] = []
    folder = materialize_artifacts({"model": export}, s3_store, log=logs.append)["model"]
    assert logs[0] == ("colocated-1x8@dev: the dev run finished again since its export was "
                       "recorded; recording it again")
    assert (folder / "model.safetensors").read_bytes() == b"weights-a2"
    record = json.loads(fs.cat_file(f"{root}/_record.json"))
    assert record["provenance"]["run_attempt"] == "a2"
    assert record["files"][1]["sha256"] == hashlib.sha256(b"weights-a2").hexdigest()
