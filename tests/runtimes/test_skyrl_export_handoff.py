"""A SkyRL run's export as the next stage's model: the launcher's record of it, for manifests
it cannot take as a model. That SkyRL's own export is recorded as its last step's `policy`
folder, staged exactly, config.json at its root, and trained from by the next stage, and that a
record of the whole export root is recorded again as that folder (or refused when the folder
changed), is tested with SkyRL's own loop in tests/e2e/test_rehearsal.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlaunch.builders import BuildError, materialize_artifacts
from rlaunch.ledger import Ledger, set_status, set_submission, start_attempt
from rlaunch.paths import run_paths
from rlaunch.spec import RunExport, parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.status import AttemptStatus

STAGE2 = parse_spec(worked_example("grpo-stage2"))
EXPORT = STAGE2.model
assert isinstance(EXPORT, RunExport)


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
