"""The skyrl runtime adapter hands SkyRL exactly the YAML's `skyrl` subtree as overrides."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from rlaunch.executors.base import entrypoint_argv
from rlaunch.render import LaunchDocument, render_launch
from rlaunch.render.skyrl import skyrl_cli_args
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example

REPO = Path(__file__).resolve().parents[2]


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{Path(__file__).parent}"}
    return subprocess.run([sys.executable, "-m", "rlaunch.runtimes.skyrl", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_execs_the_pinned_entrypoint_with_the_subtree_as_overrides(tmp_path):
    text = render_launch(parse_spec(worked_example("megatron-moe-5x8")),
                         store_prefix="gs://bucket/store", launcher_commit=None)
    launch = yaml.safe_load(text)
    launch["runtime"]["entrypoint"] = "echo_argv"
    path = tmp_path / "launch.yaml"
    path.write_text(yaml.safe_dump(launch, sort_keys=False))
    done = _run([str(path)])
    assert done.returncode == 0, done.stderr
    overrides = json.loads(done.stdout)
    assert overrides == skyrl_cli_args(LaunchDocument.parse(launch).skyrl_tree())
    assert "trainer.placement.policy_num_nodes=4" in overrides
    assert "generator.inference_engine.data_parallel_size=8" in overrides
    assert "rlaunch: starting SkyRL: -m echo_argv" in done.stderr


def test_bad_input_is_a_clear_error(tmp_path):
    assert "usage: python -m rlaunch.runtimes.skyrl LAUNCH_YAML" in _run([]).stderr
    missing = _run([str(tmp_path / "nope.yaml")])
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: ")


def test_executors_start_skyrl_through_the_adapter_and_smoke_directly():
    launch = yaml.safe_load(render_launch(parse_spec(worked_example("colocated-1x8")),
                                          store_prefix="/store", launcher_commit=None))
    assert entrypoint_argv(LaunchDocument.parse(launch), "l.yaml", python="py") == (
        "py", "-m", "rlaunch.runtimes.skyrl", "l.yaml")
    launch["runtime"].update(profile="smoke", entrypoint="rlaunch.runtimes.smoke")
    assert entrypoint_argv(LaunchDocument.parse(launch), "l.yaml", python="py") == (
        "py", "-m", "rlaunch.runtimes.smoke", "l.yaml")
