"""What `rlaunch launch --rehearse` changes before anything runs (rlaunch.launch): a GPU run
rehearses on a local head that simulates its GPUs, and an uncommitted launcher tree does not
refuse a rehearsal. SkyRL's own loop in a rehearsal runs in tests/e2e/test_rehearsal.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from contract.skyrl_env import contract_python
from rlaunch.executors.runtime_python import REHEARSAL_PYTHON_ENV
from rlaunch.launch import LaunchRefused, LaunchRequest, launch
from rlaunch.rehearsal import REHEARSAL_RELEASE
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example


def dirty_checkout(path: Path) -> Path:
    """A git checkout with one commit and an untracked file."""
    path.mkdir()
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (path / "README").write_text("launcher\n")
    subprocess.run([*git, "add", "README"], check=True)
    subprocess.run([*git, "commit", "-qm", "launcher"], check=True)
    (path / "untracked.py").write_text("")
    return path


def test_a_gpu_run_rehearses_on_simulated_gpus_from_a_dirty_tree(tmp_path: Path) -> None:
    spec = parse_spec(worked_example("colocated-1x8"))
    assert (spec.execution.executor, spec.execution.allocation.accelerator) == ("ray", "H100")
    repo = dirty_checkout(tmp_path / "launcher")
    env = {**os.environ, REHEARSAL_PYTHON_ENV: contract_python()}
    request = dict(spec=spec, store=str(tmp_path / "store"), repo=repo,
                   out=tmp_path / "launch.yaml", env=env, dry_run=True)
    # The real launch is refused for the dirty tree; the rehearsal is not.
    with pytest.raises(LaunchRefused) as refused:
        launch(LaunchRequest(**request), say=lambda line: None)
    assert "error VER004 version: calendar version 2026.11.29 launched from a launcher tree " \
           "with uncommitted changes" in str(refused.value)
    said: list[str] = []
    result = launch(LaunchRequest(**request, rehearse=True), say=said.append)
    assert result.dry_run
    assert said[0] == (
        "rlaunch: rehearsing colocated-1x8@2026.11.29 from a launcher tree with uncommitted "
        "changes: allowed (VER004 guards real launches of a calendar version)")
    assert ("  executor: local (a Ray head on 127.0.0.1 with 8 simulated GPUs and 96 CPUs, "
            "reused when one is running for this allocation)") in said
    assert not any(line.startswith(("error", "warning VER004", "warning EXEC002"))
                   for text in said for line in text.splitlines()), said


def pinned_to(release: str) -> dict:
    """The changes that pin the worked example's runtime to SkyRL `release`."""
    return {"runtime": {**worked_example("colocated-1x8")["runtime"],
                        "name": f"skyrl-{release}", "package": f"skyrl=={release}"}}


@pytest.mark.parametrize(("example", "changes", "refusal"), [
    ("colocated-1x8", pinned_to("0.4.0"), (
        "--rehearse runs SkyRL 0.3.0's training loop (the rehearsal environment, 3rdparty/"
        "skyrl-rehearsal.txt), but colocated-1x8@2026.11.29 pins SkyRL 0.4.0: the rehearsal "
        "would run another release's code than the run. Rehearse a variant pinned to "
        "skyrl==0.3.0 for its data, config and store handoffs, and smoke the run itself on "
        "GPUs")),
    ("colocated-1x8", pinned_to("0.9.0"), (
        "--rehearse runs SkyRL 0.3.0's training loop (the rehearsal environment, 3rdparty/"
        "skyrl-rehearsal.txt), but colocated-1x8@2026.11.29 pins skyrl==0.9.0, which the "
        "runtime catalog does not know: the rehearsal would run another release's code than "
        "the run. Rehearse a variant pinned to skyrl==0.3.0 for its data, config and store "
        "handoffs, and smoke the run itself on GPUs")),
    ("megatron-moe-5x8", {}, (
        "--rehearse runs SkyRL's FSDP workers' code on CPU, but megatron-moe-5x8@2026.11.29 trains "
        "with role_plan.strategy 'megatron', whose workers need Megatron-Core on GPUs: a "
        "rehearsal would not run its checkpoint and export code. Rehearse an fsdp variant of "
        "the run for its data, config and store handoffs, and smoke the megatron run on GPUs")),
    ("colocated-1x8", {"settings": {"trainer.policy.model.lora.rank": 16}}, (
        "--rehearse syncs full weights to its CPU engines, but colocated-1x8@2026.11.29 trains "
        "LoRA adapters (settings trainer.policy.model.lora.rank = 16), which SkyRL syncs to "
        "vLLM only: not rehearsed. Rehearse the run without LoRA for its data, config and "
        "store handoffs")),
])
def test_what_the_cpu_workers_cannot_run_is_refused_before_anything(
    example: str, changes: dict, refusal: str, tmp_path: Path
) -> None:
    spec = parse_spec({**worked_example(example), **changes})
    with pytest.raises(LaunchRefused) as refused:
        launch(LaunchRequest(spec=spec, rehearse=True, store=str(tmp_path / "store"),
                             env={}), say=lambda line: None)
    assert str(refused.value) == refusal
    assert not (tmp_path / "store").exists()


def test_the_rehearsal_release_is_the_one_the_rehearsal_environment_installs() -> None:
    listed = (Path(__file__).resolve().parents[1] / "3rdparty" / "skyrl-rehearsal.txt"
              ).read_text().splitlines()
    assert f"skyrl=={REHEARSAL_RELEASE}" in listed
