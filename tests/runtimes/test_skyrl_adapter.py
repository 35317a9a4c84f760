"""The skyrl runtime adapter: stages the inputs from the store (moto's S3 server), rewrites the
overrides to the staged folders, runs the handoff check, supervises the entrypoint (signals
forwarded, exit status kept) and writes the terminal manifest from what it left in the store.

The entrypoint and the handoff module are test programs here (echo_argv, supervised_child),
which write nothing SkyRL writes; SkyRL's own loop, what it writes, the terminal manifest the
adapter writes from it, SkyRL's resume of its own checkpoints and the adapter's refusal of
checkpoints trained from another export run for real in tests/e2e/test_rehearsal.py, its
handoff check in tests/contract and tests/e2e."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from builders.helpers import node, parse
from objectstores import ObjectStoreServer
from rlaunch.builders import build_artifact
from rlaunch.executors import ExecutorOptions
from rlaunch.executors.base import entrypoint_argv
from rlaunch.executors.iris import job_command
from rlaunch.executors.ray_cluster import RayClusterExecutor
from rlaunch.launch import LaunchRefused, LaunchRequest
from rlaunch.launch import launch as launch_run
from rlaunch.render import LaunchDocument, render_launch
from rlaunch.render.skyrl import skyrl_cli_args
from rlaunch.runtimes.staging import local_overrides
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def quiet(message: str) -> None:
    pass


def launch_in_store(store: str, tmp_path: Path, example: str = "colocated-1x8",
                    **spec_changes: Any) -> dict[str, Any]:
    """A worked example's launch YAML on `store`, each input built there (a small test
    artifact under the input's identity) and the YAML naming its fingerprint. Another run's
    export is not built: the launcher records it when that run has finished."""
    spec = worked_example(example)
    spec.update(spec_changes)
    launch = yaml.safe_load(render_launch(parse_spec(spec), store_prefix=store,
                                          launcher_commit=None))
    for entry in launch["inputs"].values():
        if entry["type"] == "run_export":
            continue
        name, version = entry["identity"].split("@")
        result = build_artifact(parse(node(name, tmp_path / "calls", version=version)), store,
                                log=quiet)
        assert result.uri == entry["uri"]
        entry["fingerprint"] = result.fingerprint
    launch["runtime"]["entrypoint"] = "echo_argv"
    return launch


def write(launch: dict[str, Any], tmp_path: Path) -> Path:
    path = tmp_path / "launch.yaml"
    path.write_text(yaml.safe_dump(launch, sort_keys=False))
    return path


def adapter(args: list[str], server: ObjectStoreServer, tmp_path: Path,
            **env: str) -> subprocess.Popen[str]:
    environment = {
        **os.environ, **server.env(),
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(HERE)]),
        "RLAUNCH_NODE_CACHE": str(tmp_path / "node-cache"),
        "RLAUNCH_SKYRL_HANDOFF_MODULE": "echo_argv",
        **env,
    }
    environment.pop("RAY_ADDRESS", None)
    return subprocess.Popen([sys.executable, "-m", "rlaunch.runtimes.skyrl", *args],
                            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def run(args: list[str], server: ObjectStoreServer, tmp_path: Path,
        **env: str) -> tuple[int, str, str]:
    process = adapter(args, server, tmp_path, **env)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


def test_stages_rewrites_checks_then_runs_the_entrypoint_on_the_staged_paths(
    s3_server: ObjectStoreServer, s3_store: str, tmp_path: Path
) -> None:
    launch = launch_in_store(s3_store, tmp_path)
    status, out, err = run([str(write(launch, tmp_path))], s3_server, tmp_path)
    document = LaunchDocument.parse(launch)
    cache = tmp_path / "node-cache"
    model_input = launch["inputs"]["model"]
    digest = model_input["fingerprint"].removeprefix("sha256:")[:16]
    model = cache / "qwen2.5-1.5b-instruct" / f"2026.11.01-{digest}"
    assert (f"rlaunch: staged path trainer.policy.model.path: {model_input['uri']} -> {model}"
            in out)
    staged_args = [json.loads(line) for line in out.splitlines() if line.startswith("[")]
    # The handoff check and SkyRL get the same overrides: the YAML's, with local paths.
    [checked, started] = staged_args
    assert checked == started
    expected = skyrl_cli_args(local_overrides(document.skyrl_tree(), []))
    assert len(started) == len(expected)
    assert f"trainer.policy.model.path={json.dumps(str(model))}" in started
    assert not any("s3://" in arg for arg in started if "model.path" in arg or "_data" in arg)
    assert f'trainer.ckpt_path="{s3_store}/colocated-1x8/2026.11.29/checkpoints"' in started
    # echo_argv writes no outputs: SkyRL "succeeded" without a result is an error.
    assert status == 1
    assert "SkyRL exited 0 but wrote no checkpoint pointer" in err
    # A second launch: the cache is warm, nothing is copied.
    status, out, _ = run([str(write(launch, tmp_path))], s3_server, tmp_path)
    assert "(0 bytes copied)" in out and " copied 2 files" not in out


def test_check_handoffs_stops_before_the_entrypoint(
    s3_server: ObjectStoreServer, s3_store: str, tmp_path: Path
) -> None:
    launch = launch_in_store(s3_store, tmp_path)
    status, out, err = run([str(write(launch, tmp_path)), "--check-handoffs"], s3_server,
                           tmp_path)
    assert (status, err) == (0, "")
    assert out.splitlines()[-1] == (
        "rlaunch: handoff check passed; --check-handoffs: SkyRL not started")
    assert sum(line.startswith("[") for line in out.splitlines()) == 1


def test_a_refused_handoff_check_never_starts_skyrl(
    s3_server: ObjectStoreServer, s3_store: str, tmp_path: Path
) -> None:
    launch = launch_in_store(s3_store, tmp_path)
    launch["runtime"]["entrypoint"] = "supervised_child"
    status, out, err = run([str(write(launch, tmp_path))], s3_server, tmp_path,
                           RLAUNCH_SKYRL_HANDOFF_MODULE="supervised_child", CHILD_MODE="fail")
    assert status == 2
    assert err == ("error: the handoff check refused this launch (exit 3); SkyRL was not "
                   "started: fix what it names above\n")
    assert "starting SkyRL" not in out


def test_signals_reach_skyrl_and_its_status_is_kept(
    s3_server: ObjectStoreServer, s3_store: str, tmp_path: Path
) -> None:
    launch = launch_in_store(s3_store, tmp_path)
    launch["runtime"]["entrypoint"] = "supervised_child"
    ready = tmp_path / "ready"
    process = adapter([str(write(launch, tmp_path))], s3_server, tmp_path,
                      CHILD_MODE="wait", CHILD_READY=str(ready))
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ready.exists()
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM
    assert f"child: got signal {int(signal.SIGTERM)}" in out
    assert f"rlaunch: SkyRL exited with status {128 + signal.SIGTERM}" in out


def test_a_store_the_job_cannot_reach_is_refused_before_anything_runs(
    s3_server: ObjectStoreServer, s3_store: str, tmp_path: Path
) -> None:
    launch = launch_in_store(s3_store, tmp_path)
    status, out, err = run([str(write(launch, tmp_path))], s3_server, tmp_path,
                           AWS_ENDPOINT_URL="http://127.0.0.1:9", AWS_MAX_ATTEMPTS="1")
    assert status == 2
    assert err.startswith("error: staging: inputs.model (qwen2.5-1.5b-instruct@2026.11.01): "
                          "cannot read ")
    assert "the store is unreachable from this node" in err


def test_bad_input_is_a_clear_error(s3_server: ObjectStoreServer, tmp_path: Path) -> None:
    usage = "usage: python -m rlaunch.runtimes.skyrl LAUNCH_YAML [--check-handoffs | --rehearse]"
    assert usage in run([], s3_server, tmp_path)[2]
    status, _, err = run([str(tmp_path / "nope.yaml")], s3_server, tmp_path)
    assert status == 2 and err.startswith("error: ")


def test_executors_start_skyrl_through_the_adapter_and_smoke_directly():
    launch = yaml.safe_load(render_launch(parse_spec(worked_example("colocated-1x8")),
                                          store_prefix="/store", launcher_commit=None))
    assert entrypoint_argv(LaunchDocument.parse(launch), "l.yaml", python="py") == (
        "py", "-m", "rlaunch.runtimes.skyrl", "l.yaml")
    launch["runtime"].update(profile="smoke", entrypoint="rlaunch.runtimes.smoke")
    assert entrypoint_argv(LaunchDocument.parse(launch), "l.yaml", python="py") == (
        "py", "-m", "rlaunch.runtimes.smoke", "l.yaml")


def test_check_handoffs_reaches_the_adapter_on_every_executor(tmp_path: Path) -> None:
    launch = LaunchDocument.parse(yaml.safe_load(render_launch(
        parse_spec(worked_example("colocated-1x8")), store_prefix="/store",
        launcher_commit=None)))
    assert entrypoint_argv(launch, "l.yaml", python="py", extra=("--check-handoffs",)) == (
        "py", "-m", "rlaunch.runtimes.skyrl", "l.yaml", "--check-handoffs")
    options = ExecutorOptions(say=quiet, runtime_args=("--check-handoffs",))
    remote = edited(launch, address="http://ray-head.internal:8265")
    lines = RayClusterExecutor(options).describe(tmp_path / "launch.yaml", remote)
    # A remote cluster runs the adapter with its own `python` (a loopback head follows the
    # runtime pin on this machine: tests/executors/test_runtime_python.py).
    assert "entrypoint: python -m rlaunch.runtimes.skyrl launch.yaml --check-handoffs" in lines
    command = job_command(edited_cluster(launch), options.runtime_args)
    assert command[-1] == "--check-handoffs"


def edited(launch: LaunchDocument, **execution: str) -> LaunchDocument:
    data = launch.to_dict()
    data["execution"].update(execution)
    return LaunchDocument.parse(data)


def edited_cluster(launch: LaunchDocument) -> LaunchDocument:
    return edited(launch, cluster="c1")


def test_check_handoffs_is_refused_for_a_run_that_is_not_skyrl() -> None:
    spec = worked_example("colocated-1x8")
    spec["runtime"] = {**spec["runtime"], "profile": "smoke", "name": "smoke"}
    with pytest.raises(LaunchRefused) as refused:
        launch_run(LaunchRequest(spec=parse_spec(spec), check_handoffs=True), say=quiet)
    assert str(refused.value) == (
        "--check-handoffs runs SkyRL's handoff check, but colocated-1x8@2026.11.29 uses the "
        "'smoke' runtime profile (runtime smoke); launch it without --check-handoffs")
