"""The plan of a pipeline: the upstream runs first, each launched or reused, and why."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from rlaunch.builders import materialize_artifacts
from rlaunch.builders.run_export import consumed_exports
from rlaunch.launch import LaunchRefused
from rlaunch.ledger import Ledger, set_status, set_submission, start_attempt
from rlaunch.paths import run_paths
from rlaunch.pipeline import plan_pipeline, stage_specs
from rlaunch.spec import RunExport, RunSpec, parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.status import AttemptStatus


def chain(version: str = "dev") -> RunSpec:
    """colocated-1x8 -> grpo-stage2 -> grpo-stage3, each reading the previous one's export."""
    data = worked_example("grpo-stage2")
    for run in (data, data["model"]["run"]):
        run["version"] = version
    data["model"]["version"] = version
    third = worked_example("colocated-1x8")
    third.update(name="grpo-stage3", version=version)
    third["model"] = {"type": "run_export", "name": "grpo-stage2", "version": version,
                      "run": data}
    return parse_spec(third)


def finish(store: Path, spec: RunSpec, status: str = "SUCCEEDED", attempt: str = "a1",
           run_exports: dict[str, Any] | None = None) -> None:
    def update(record: dict) -> None:
        start_attempt(record, attempt_id=attempt, fingerprint=spec.fingerprint,
                      runtime_fingerprint="sha256:r", geometry={}, launcher_commit=None,
                      yaml_digest="sha256:y", yaml_path="/y", smoke_of=None,
                      skip_smoke_gate=None, run_exports=run_exports)
        set_submission(record, attempt, {"submission_id": "job"})
        set_status(record, attempt, AttemptStatus(status))

    Ledger(str(store)).update(spec.name, spec.version, update)


def checkpointed(store: Path, step: int) -> Path:
    """grpo-stage2@dev's root holds a checkpoint: its pointer names `step`."""
    pointer = store / "grpo-stage2/dev/checkpoints/latest_ckpt_global_step.txt"
    pointer.parent.mkdir(parents=True)
    pointer.write_text(f"{step}\n")
    return pointer


def actions(terminal: RunSpec, store: Path) -> list[tuple[str, str, str]]:
    return [(s.spec.identity, s.action, s.reason) for s in plan_pipeline([terminal], str(store))]


def test_the_stages_come_upstream_first() -> None:
    assert [spec.identity for spec in stage_specs(chain())] == [
        "colocated-1x8@dev", "grpo-stage2@dev", "grpo-stage3@dev",
    ]


def test_finished_stages_are_reused_and_a_failed_one_resumes_the_chain(tmp_path: Path) -> None:
    terminal = chain()
    first, second, _ = stage_specs(terminal)
    finish(tmp_path, first)
    finish(tmp_path, second, "FAILED")
    assert actions(terminal, tmp_path) == [
        ("colocated-1x8@dev", "reuse", "finished: attempt a1 SUCCEEDED"),
        ("grpo-stage2@dev", "launch", "its last attempt a1 is FAILED"),
        ("grpo-stage3@dev", "launch", "never launched"),
    ]


def test_a_stage_downstream_of_a_relaunched_one_is_launched_again(tmp_path: Path) -> None:
    terminal = chain()
    first, second, third = stage_specs(terminal)
    finish(tmp_path, first, "FAILED")
    finish(tmp_path, second)
    finish(tmp_path, third)
    assert actions(terminal, tmp_path)[1:] == [
        ("grpo-stage2@dev", "launch",
         "finished, but reads the export of colocated-1x8@dev, launched again now"),
        ("grpo-stage3@dev", "launch",
         "finished, but reads the export of grpo-stage2@dev, launched again now"),
    ]


def test_a_finished_calendar_stage_is_never_relaunched(tmp_path: Path) -> None:
    terminal = chain("2026.11.29")
    first, second, _ = stage_specs(terminal)
    finish(tmp_path, first)
    assert actions(terminal, tmp_path)[0] == (
        "colocated-1x8@2026.11.29", "reuse",
        "finished: attempt a1 SUCCEEDED (a calendar stage runs once)")
    finish(tmp_path, first, "FAILED", attempt="a2")
    finish(tmp_path, second)
    with pytest.raises(LaunchRefused) as error:
        plan_pipeline([terminal], str(tmp_path))
    assert str(error.value) == (
        "grpo-stage2@2026.11.29 finished, and a calendar stage runs once, but it reads the "
        "export of colocated-1x8@2026.11.29, which is launched again now; bump the version of "
        "grpo-stage2"
    )


def test_a_stage_that_would_resume_checkpoints_of_the_previous_export_is_refused(
    tmp_path: Path,
) -> None:
    terminal = chain()
    first, second, _ = stage_specs(terminal)
    assert second.resume.mode == "latest"
    finish(tmp_path, first, "FAILED")
    finish(tmp_path, second, "LOST")
    pointer = checkpointed(tmp_path, 4)
    with pytest.raises(LaunchRefused) as error:
        plan_pipeline([terminal], str(tmp_path))
    assert str(error.value) == (
        f"grpo-stage2@dev would resume its checkpoints (resume.mode latest; {pointer}), but it "
        "reads the export of colocated-1x8@dev, which is launched again now: they were trained "
        "from the previous export. Set resume.mode none on grpo-stage2 to start over from the "
        "new export, or launch it under a new version"
    )
    # Upstream finished and reused: the stage resumes its checkpoints (the runtime compares
    # the export's content with the one they were trained from).
    finish(tmp_path, first, attempt="a2")
    assert actions(terminal, tmp_path)[1] == (
        "grpo-stage2@dev", "launch", "its last attempt a1 is LOST")
    # Starting over is not refused.
    finish(tmp_path, first, "FAILED", attempt="a3")
    data = terminal.model_dump(mode="json")
    data["model"]["run"]["resume"]["mode"] = "none"
    assert [stage.action for stage in plan_pipeline([parse_spec(data)], str(tmp_path))] == [
        "launch", "launch", "launch"]


def export(store: Path, spec: RunSpec, weights: bytes) -> str:
    """Write the run's export and terminal manifest; the export's content (the sha256 of its
    files' `sha256sum` manifest)."""
    paths = run_paths(str(store), spec.name, spec.version)
    folder = Path(paths.export_root)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.safetensors").write_bytes(weights)
    Path(paths.terminal_manifest).write_text(
        json.dumps({"status": "succeeded", "export_path": paths.export_root}))
    line = f"{hashlib.sha256(weights).hexdigest()}  model.safetensors\n"
    return "sha256:" + hashlib.sha256(line.encode()).hexdigest()


def skyrl_export(store: Path, spec: RunSpec, steps: dict[int, bytes]) -> str:
    """Write the run's export as SkyRL 0.3.0 does (weights per exported step in
    `global_step_N/policy/`) and the terminal manifest naming the last step, as the SkyRL
    adapter writes it; the content of the last step's folder."""
    paths = run_paths(str(store), spec.name, spec.version)
    for step, weights in steps.items():
        policy = Path(paths.export_root) / f"global_step_{step}" / "policy"
        policy.mkdir(parents=True, exist_ok=True)
        (policy / "model.safetensors").write_bytes(weights)
    Path(paths.terminal_manifest).write_text(json.dumps(
        {"status": "succeeded", "export_path": str(policy)}))
    line = f"{hashlib.sha256(weights).hexdigest()}  model.safetensors\n"
    return "sha256:" + hashlib.sha256(line.encode()).hexdigest()


def finish_reading(store: Path, spec: RunSpec) -> None:
    """A launch of `spec` (reading its upstream's export) that SUCCEEDED: the export is recorded
    as an input, and the attempt records what it read, as `launch` does."""
    assert isinstance(spec.model, RunExport)
    materialize_artifacts({"model": spec.model}, str(store), log=lambda text: None)
    finish(store, spec, run_exports=consumed_exports(spec, str(store)))


def test_a_finished_stage_trained_from_another_export_of_its_upstream_is_launched_again(
    tmp_path: Path,
) -> None:
    terminal = chain()
    first, second, third = stage_specs(terminal)
    before = export(tmp_path, first, b"weights of a1")
    finish(tmp_path, first)
    finish_reading(tmp_path, second)
    assert Ledger(str(tmp_path)).read(second.name, "dev")["attempts"][0]["run_exports"] == {
        "colocated-1x8@dev": {"content": before, "attempt_id": "a1"}}
    finish(tmp_path, third)
    assert [action for _, action, _ in actions(terminal, tmp_path)] == ["reuse"] * 3
    # Stage 1 launched again on its own: the same bytes are the same export.
    finish(tmp_path, first, attempt="a2")
    export(tmp_path, first, b"weights of a1")
    assert [action for _, action, _ in actions(terminal, tmp_path)] == ["reuse"] * 3
    # Other bytes: stage 2 finished with an export that is no longer there.
    finish(tmp_path, first, attempt="a3")
    now = export(tmp_path, first, b"weights of a3")
    assert actions(terminal, tmp_path) == [
        ("colocated-1x8@dev", "reuse", "finished: attempt a3 SUCCEEDED"),
        ("grpo-stage2@dev", "launch",
         (f"finished, but trained from another export of colocated-1x8@dev (content "
          f"{before[:19]}…, now {now[:19]}…)")),
        ("grpo-stage3@dev", "launch",
         "finished, but reads the export of grpo-stage2@dev, launched again now"),
    ]
    # Resuming its checkpoints would train on from the previous export: refused first.
    pointer = checkpointed(tmp_path, 8)
    with pytest.raises(LaunchRefused) as error:
        plan_pipeline([terminal], str(tmp_path))
    assert str(error.value) == (
        f"grpo-stage2@dev would resume its checkpoints (resume.mode latest; {pointer}), but "
        f"they were trained from another export of colocated-1x8@dev (content {before[:19]}…, "
        f"now {now[:19]}…), launched again since. Set resume.mode none on grpo-stage2 to start "
        f"over from the new export, or launch it under a new version"
    )


def test_a_skyrl_export_is_compared_by_its_last_steps_model_only(tmp_path: Path) -> None:
    """The content a stage read is the model the upstream's manifest names (SkyRL: the last
    `global_step_N/policy`), so a relaunch that exported the same last step is the same export,
    whatever its other steps hold."""
    terminal = chain()
    first, second, third = stage_specs(terminal)
    before = skyrl_export(tmp_path, first, {4: b"step 4 of a1", 8: b"step 8"})
    finish(tmp_path, first)
    finish_reading(tmp_path, second)
    assert Ledger(str(tmp_path)).read(second.name, "dev")["attempts"][0]["run_exports"] == {
        "colocated-1x8@dev": {"content": before, "attempt_id": "a1"}}
    finish(tmp_path, third)
    finish(tmp_path, first, attempt="a2")
    skyrl_export(tmp_path, first, {4: b"step 4 of a2", 8: b"step 8"})
    assert [action for _, action, _ in actions(terminal, tmp_path)] == ["reuse"] * 3
    finish(tmp_path, first, attempt="a3")
    now = skyrl_export(tmp_path, first, {4: b"step 4 of a2", 8: b"step 8 of a3"})
    assert actions(terminal, tmp_path)[1] == (
        "grpo-stage2@dev", "launch",
        (f"finished, but trained from another export of colocated-1x8@dev (content "
         f"{before[:19]}…, now {now[:19]}…)"))


def test_a_finished_calendar_stage_of_another_export_is_refused(tmp_path: Path) -> None:
    terminal = chain("2026.11.29")
    first, second, _ = stage_specs(terminal)
    before = export(tmp_path, first, b"weights of a1")
    finish(tmp_path, first)
    finish_reading(tmp_path, second)
    finish(tmp_path, first, attempt="a2")  # by hand: a calendar run is launched once (VER005)
    now = export(tmp_path, first, b"weights of a2")
    with pytest.raises(LaunchRefused) as error:
        plan_pipeline([terminal], str(tmp_path))
    assert str(error.value) == (
        f"grpo-stage2@2026.11.29 finished, and a calendar stage runs once, but it was trained "
        f"from another export of colocated-1x8@2026.11.29 (content {before[:19]}…, now "
        f"{now[:19]}…): launched again since; bump the version of grpo-stage2"
    )


def test_a_stage_whose_attempt_does_not_record_what_it_read_is_reused_and_says_so(
    tmp_path: Path,
) -> None:
    terminal = chain()
    first, second, _ = stage_specs(terminal)
    export(tmp_path, first, b"weights of a1")
    finish(tmp_path, first)
    finish(tmp_path, second)  # an attempt recorded before `run_exports` was
    finish(tmp_path, first, attempt="a2")
    export(tmp_path, first, b"weights of a2")
    assert actions(terminal, tmp_path)[1] == (
        "grpo-stage2@dev", "reuse",
        ("finished: attempt a1 SUCCEEDED; its attempt does not record which export of "
         "colocated-1x8@dev it read (recorded before rlaunch kept that), so it is reused "
         "unchecked"))
