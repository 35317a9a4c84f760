"""The executor interface: statuses, submission records, the entrypoint, plugin loading."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from executors.helpers import rendered
from rlaunch.executors import ExecutorError, Submission, load_executor
from rlaunch.executors.base import entrypoint_argv, shell_command
from rlaunch.executors.dry_run import DryRunExecutor
from rlaunch.executors.iris import IrisExecutor
from rlaunch.executors.local import LocalExecutor
from rlaunch.executors.ray_cluster import RayClusterExecutor
from rlaunch.render import LaunchDocument, LaunchError


def test_submission_round_trips_through_json() -> None:
    submission = Submission(
        executor="local", submission_id="rlaunch-x-dev-1", address="http://127.0.0.1:1",
        attempt_id="20261129T000000Z-abcdef", submitted_at="2026-11-29T00:00:00.000000Z",
        entrypoint=("python", "-m", "m", "/tmp/launch.yaml"),
    )
    text = submission.to_json()
    assert json.loads(text)["entrypoint"] == ["python", "-m", "m", "/tmp/launch.yaml"]
    assert Submission.from_json(text) == submission


def test_a_submission_record_without_fields_is_refused_by_name() -> None:
    expected = "not a submission record: field 'submission_id' is missing"
    with pytest.raises(ExecutorError, match=expected):
        Submission.from_dict({"executor": "local"})


def test_the_entrypoint_is_python_dash_m_runtime_yaml(tmp_path: Path) -> None:
    _, launch = rendered(tmp_path)
    argv = entrypoint_argv(launch, "/dist/run/launch.yaml")
    assert argv == (sys.executable, "-m", "rlaunch_echo_runtime", "/dist/run/launch.yaml")
    assert shell_command(("python", "-m", "m", "a b.yaml")) == "python -m m 'a b.yaml'"


def test_a_launch_without_entrypoint_is_refused(tmp_path: Path) -> None:
    _, launch = rendered(tmp_path)
    data = launch.to_dict()
    del data["runtime"]["entrypoint"]
    with pytest.raises(LaunchError) as caught:
        LaunchDocument.parse(data, "x.yaml")
    assert str(caught.value) == (
        "x.yaml: not a launch YAML (schema_version 1) this rlaunch reads: runtime.entrypoint: "
        "Field required; render it again with `rlaunch render SPEC -o FILE` (docs/launch-yaml.md "
        "lists every field)"
    )


def test_builtin_executors_load_by_name() -> None:
    assert isinstance(load_executor("local"), LocalExecutor)
    assert isinstance(load_executor("ray"), RayClusterExecutor)
    assert isinstance(load_executor("iris"), IrisExecutor)
    assert isinstance(load_executor("dry-run"), DryRunExecutor)


def test_an_unknown_executor_lists_the_registered_ones() -> None:
    with pytest.raises(ExecutorError) as caught:
        load_executor("slurm")
    assert str(caught.value) == (
        "execution.executor 'slurm': no plugin 'slurm' in group 'rlaunch.executors'; "
        "registered: dry-run, iris, local, ray"
    )
