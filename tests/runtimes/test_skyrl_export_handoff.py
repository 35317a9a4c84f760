"""A SkyRL run's export as the next stage's model: the launcher's record of it, for manifests
and records it cannot take as a model. That SkyRL's own export is recorded as its last step's
`policy` folder, staged exactly, config.json at its root, and trained from by the next stage, is
tested with SkyRL's own loop in tests/e2e/test_rehearsal.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modelrepo import TINY_QWEN
from objectstores import ObjectStoreServer
from rlaunch.builders import BuildError, materialize_artifacts
from rlaunch.ledger import Ledger, set_status, set_submission, start_attempt
from rlaunch.models.tokenizer import CharTokenizer
from rlaunch.paths import run_paths
from rlaunch.spec import RunExport, parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.status import AttemptStatus
from runtimes.test_skyrl_adapter import launch_in_store, run, write

STAGE2 = parse_spec(worked_example("grpo-stage2"))
EXPORT = STAGE2.model
assert isinstance(EXPORT, RunExport)


def char_model(folder: Path) -> Path:
    """What SkyRL's `save_hf_model` writes beside the weights: the model's config.json and
    its tokenizer (here rlaunch's character tokenizer)."""
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_QWEN))
    CharTokenizer().save(folder)
    return folder


def finish_upstream(store: str, tmp_path: Path, server: ObjectStoreServer,
                    model_files: Path) -> dict:
    """The upstream run (the export's run) through the SkyRL adapter with the stand-in for
    SkyRL: it exports steps 4 and 8; its attempt `a1` is recorded SUCCEEDED in the ledger."""
    launch = launch_in_store(store, tmp_path)
    launch["runtime"]["entrypoint"] = "skyrl_outputs_stand_in"
    assert launch["run"]["fingerprint"] == EXPORT.run.fingerprint
    status, out, err = run([str(write(launch, tmp_path))], server, tmp_path,
                           RLAUNCH_ATTEMPT_ID="a1", STAND_IN_STEPS="8",
                           STAND_IN_EXPORTS="4 8", STAND_IN_MODEL_FILES=str(model_files))
    assert (status, err) == (0, ""), out
    record_success(store, launch["runtime"]["fingerprint"])
    return launch


def record_success(store: str, runtime_fingerprint: str) -> None:
    """The ledger says the export's run finished: its attempt `a1` SUCCEEDED."""
    def succeeded(record: dict) -> None:
        start_attempt(record, attempt_id="a1", fingerprint=EXPORT.run.fingerprint,
                      runtime_fingerprint=runtime_fingerprint, geometry={},
                      launcher_commit=None, yaml_digest="sha256:y", yaml_path="/y",
                      smoke_of=None, skip_smoke_gate=None)
        set_submission(record, "a1", {"submission_id": "job"})
        set_status(record, "a1", AttemptStatus.SUCCEEDED)

    Ledger(store).update(EXPORT.name, EXPORT.version, succeeded)


def test_a_terminal_manifest_naming_no_export_folder_is_refused(tmp_path: Path) -> None:
    """A manifest not written by an rlaunch runtime (no export_path, or one outside the run's
    export folder) cannot say which model the export is."""
    store = str(tmp_path / "store")
    paths = run_paths(store, EXPORT.name, EXPORT.version)
    record_success(store, "sha256:r")
    Path(paths.export_root).mkdir(parents=True)
    for named, problem in [
        (None, "names no export_path (the folder of the model it exported)"),
        (f"{paths.run_root}/checkpoints/global_step_8",
         f"names export_path {paths.run_root}/checkpoints/global_step_8, which is not in the "
         f"run's export folder {paths.export_root}"),
    ]:
        Path(paths.terminal_manifest).write_text(json.dumps(
            {"status": "succeeded"} | ({} if named is None else {"export_path": named})))
        with pytest.raises(BuildError) as refused:
            materialize_artifacts({"model": EXPORT}, store, log=lambda line: None)
        assert str(refused.value) == (
            f"the terminal manifest {paths.terminal_manifest} of colocated-1x8@2026.11.29 "
            f"{problem}; it was not written by an rlaunch runtime of this run: launch "
            "colocated-1x8@2026.11.29 again")


def test_an_export_recorded_whole_before_is_recorded_again_as_its_model(
    s3_server: ObjectStoreServer, tmp_path: Path,
) -> None:
    """A record written before rlaunch recorded the manifest's folder lists the whole export
    root (every exported step). A calendar export is recorded again as step 8's folder only
    when that record lists the same files there; nothing else changed."""
    store = str(tmp_path / "store")
    finish_upstream(store, tmp_path, s3_server, char_model(tmp_path / "model-files"))
    materialize_artifacts({"model": EXPORT}, store, log=lambda line: None)
    root = Path(run_paths(store, EXPORT.name, EXPORT.version).export_root)
    record = json.loads((root / "_record.json").read_text())
    whole = dict(record, files=[
        *[dict(entry, path=f"global_step_4/policy/{entry['path']}") for entry in record["files"]],
        *[dict(entry, path=f"global_step_8/policy/{entry['path']}") for entry in record["files"]],
    ])
    del whole["payload_folder"]
    (root / "_record.json").write_text(json.dumps(whole))
    logs: list[str] = []
    folder = materialize_artifacts({"model": EXPORT}, store, log=logs.append)["model"]
    assert folder == root / "global_step_8" / "policy"
    assert logs[0] == (
        f"colocated-1x8@2026.11.29: {root}/_record.json lists the files of the whole export "
        "root, the run's terminal manifest names global_step_8/policy as its model; recording "
        "it again")
    assert json.loads((root / "_record.json").read_text())["files"] == record["files"]
    # A whole-root record whose step 8 lists other bytes: the calendar export changed.
    whole["files"][-2]["sha256"] = "0" * 64
    (root / "_record.json").write_text(json.dumps(whole))
    with pytest.raises(BuildError) as refused:
        materialize_artifacts({"model": EXPORT}, store, log=lambda line: None)
    assert str(refused.value) == (
        "the export of colocated-1x8@2026.11.29 changed after it was recorded: its record "
        "lists other files in global_step_8/policy than the store holds now. A calendar run "
        "runs once and its export is immutable: restore it, or relaunch the run under a new "
        "version")
