"""Checkpoint root layout, pointer, rotation and runtime record (smoke/checkpoint.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlaunch.runtimes.smoke import checkpoint as ckpt


def _save(root: Path, step: int, keep: int) -> Path:
    staging = ckpt.staging_dir(root, step)
    (staging / "policy_rank0").mkdir()
    return ckpt.commit(root, step, staging, {"global_step": step}, keep=keep)


def test_commit_moves_the_step_into_place_then_the_pointer(tmp_path: Path) -> None:
    final = _save(tmp_path, 3, keep=-1)
    assert final == tmp_path / "global_step_3"
    assert ckpt.latest_step(tmp_path) == 3
    assert (tmp_path / "latest_ckpt_global_step.txt").read_text() == "3\n"
    assert ckpt.read_state(final) == {"global_step": 3}
    assert not list(tmp_path.glob(".global_step_*"))


def test_rotation_keeps_the_newest(tmp_path: Path) -> None:
    for step in (2, 4, 6, 8):
        _save(tmp_path, step, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "global_step_6", "global_step_8", "latest_ckpt_global_step.txt"]


def test_a_partial_step_left_by_a_killed_attempt_is_replaced(tmp_path: Path) -> None:
    _save(tmp_path, 2, keep=-1)
    leftover = tmp_path / "global_step_4"
    (leftover / "junk").mkdir(parents=True)
    _save(tmp_path, 4, keep=-1)
    assert not (leftover / "junk").exists()
    assert ckpt.latest_step(tmp_path) == 4


def test_a_root_written_by_another_runtime_is_refused(tmp_path: Path) -> None:
    ckpt.record_runtime(tmp_path, runtime_fingerprint="sha256:old", run_fingerprint="sha256:r",
                        run_id="r@1")
    # An empty root may be taken over.
    ckpt.check_runtime(tmp_path, runtime_fingerprint="sha256:new", compatible=())
    _save(tmp_path, 2, keep=-1)
    with pytest.raises(ckpt.CheckpointError) as caught:
        ckpt.check_runtime(tmp_path, runtime_fingerprint="sha256:new", compatible=())
    assert str(caught.value) == (
        f"checkpoint root {tmp_path} was written by runtime sha256:old (see "
        f"{tmp_path / 'runtime.json'}), this run's runtime is sha256:new; resuming across "
        "runtimes is refused. Bump the run version (a fresh root), or declare the old runtime "
        "in resume.compatible_runtimes"
    )
    ckpt.check_runtime(tmp_path, runtime_fingerprint="sha256:new", compatible=("sha256:old",))
    assert json.loads((tmp_path / "runtime.json").read_text())["writer"] == "rlaunch.runtimes.smoke"


def test_checkpoints_of_another_run_configuration_are_not_resumed(tmp_path: Path) -> None:
    ckpt.record_runtime(tmp_path, runtime_fingerprint="sha256:rt", run_fingerprint="sha256:a",
                        run_id="r@dev")
    # Nothing to resume yet: a new configuration may take the root over.
    ckpt.check_run(tmp_path, run_fingerprint="sha256:b")
    _save(tmp_path, 2, keep=-1)
    ckpt.check_run(tmp_path, run_fingerprint="sha256:a")
    with pytest.raises(ckpt.CheckpointError) as caught:
        ckpt.check_run(tmp_path, run_fingerprint="sha256:b")
    assert str(caught.value) == (
        f"checkpoint root {tmp_path} holds checkpoints of run fingerprint sha256:a (see "
        f"{tmp_path / 'runtime.json'}), this run's fingerprint is sha256:b; resuming them would "
        "load the state of another configuration. Set resume.mode none to start over, or launch "
        "the new configuration under a new version"
    )


def test_a_directory_without_state_is_not_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(ckpt.CheckpointError, match="is not a complete smoke checkpoint"):
        ckpt.read_state(tmp_path)


def test_clear_starts_the_root_over(tmp_path: Path) -> None:
    for step in (2, 4):
        _save(tmp_path, step, keep=-1)
    ckpt.staging_dir(tmp_path, 6)
    ckpt.record_runtime(tmp_path, runtime_fingerprint="sha256:x", run_fingerprint="sha256:r",
                        run_id="r@1")
    assert ckpt.clear(tmp_path) == [2, 4]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runtime.json"]
    assert ckpt.latest_step(tmp_path) is None


def test_checkpoints_trained_from_another_export_are_not_resumed(tmp_path: Path) -> None:
    exports = {"model": {"identity": "stage1@dev", "content": "sha256:new"}}
    # A root written before the exports were recorded: nothing to resume, then checkpoints.
    ckpt.record_runtime(tmp_path, runtime_fingerprint="sha256:rt", run_fingerprint="sha256:a",
                        run_id="stage2@dev")
    ckpt.check_exports(tmp_path, exports=exports)
    _save(tmp_path, 2, keep=-1)
    with pytest.raises(ckpt.CheckpointError) as caught:
        ckpt.check_exports(tmp_path, exports=exports)
    assert str(caught.value) == (
        f"checkpoint root {tmp_path} records no content for the export of stage1@dev "
        f"(inputs.model) it was trained from (see {tmp_path / 'runtime.json'}), this run reads "
        "that export with content sha256:new: the upstream run was launched again since and "
        "exported other weights; resuming would go on training from the previous ones. Set "
        "resume.mode none to start over from the new export, or launch this run under a new "
        "version"
    )
    ckpt.record_runtime(tmp_path, runtime_fingerprint="sha256:rt", run_fingerprint="sha256:a",
                        run_id="stage2@dev", exports=exports)
    ckpt.check_exports(tmp_path, exports=exports)
    # A run that reads no export has nothing to compare.
    ckpt.check_exports(tmp_path, exports={})
