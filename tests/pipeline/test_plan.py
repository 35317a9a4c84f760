"""The plan of a pipeline: the upstream runs first, each launched or reused, and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlaunch.launch import LaunchRefused
from rlaunch.ledger import Ledger, set_status, set_submission, start_attempt
from rlaunch.pipeline import plan_pipeline, stage_specs
from rlaunch.spec import RunSpec, parse_spec
from rlaunch.spec.examples import worked_example


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


def finish(store: Path, spec: RunSpec, status: str = "SUCCEEDED", attempt: str = "a1") -> None:
    def update(record: dict) -> None:
        start_attempt(record, attempt_id=attempt, fingerprint=spec.fingerprint,
                      runtime_fingerprint="sha256:r", geometry={}, launcher_commit=None,
                      yaml_digest="sha256:y", yaml_path="/y", smoke_of=None,
                      skip_smoke_gate=None)
        set_submission(record, attempt, {"submission_id": "job"})
        set_status(record, attempt, status)

    Ledger(str(store)).update(spec.name, spec.version, update)


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
    pointer = tmp_path / "grpo-stage2/dev/checkpoints/latest_ckpt_global_step.txt"
    pointer.parent.mkdir(parents=True)
    pointer.write_text("4\n")
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
