"""The export policy reaches SkyRL as SkyRL reads it, for each catalogued release (0.3.0, 0.4.0):
every run the launch renders ends with an export of its last step, decided by
`RayPPOTrainer.train`'s own conditions (skyrl/train/trainer.py: the loop's `hf_model_save` and
the "Safety net" after the loop) evaluated on the config SkyRL's own
`SkyRLTrainConfig.from_cli_overrides` builds from the rendered arguments
(tests/contract/export_schedule.py, in the contract env).

The cases: each experiment's own checkpoint settings, as its BUILD file writes them (so a GPU
experiment whose settings would leave SkyRL exporting nothing fails here), a periodic interval,
several epochs, and the -1 SkyRL used to get (which exports nothing: the test can fail).
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from contract.skyrl_env import RELEASES, REPO_ROOT, contract_python
from rlaunch.render import launch_document, skyrl_cli_args
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example

SCHEDULE = Path(__file__).with_name("export_schedule.py")
STEPS_PER_EPOCH = 5


def experiments_checkpoints() -> dict[str, dict[str, Any]]:
    """Every `checkpoint=dict(...)` an experiment's BUILD file writes, by BUILD path (and line,
    after the first, for a BUILD file that writes several)."""
    found: dict[str, dict[str, Any]] = {}
    for build in sorted((REPO_ROOT / "experiments").rglob("BUILD")):
        nodes = [node for node in ast.walk(ast.parse(build.read_text(encoding="utf-8")))
                 if isinstance(node, ast.keyword) and node.arg == "checkpoint"]
        for index, node in enumerate(sorted(nodes, key=lambda node: node.value.lineno)):
            name = str(build.relative_to(REPO_ROOT))
            found[name if index == 0 else f"{name}:{node.value.lineno}"] = {
                kw.arg: ast.literal_eval(kw.value) for kw in node.value.keywords}
    return found


def cli_args(checkpoint: dict[str, Any], **algorithm: Any) -> list[str]:
    data = worked_example("colocated-1x8")
    data["checkpoint"] = checkpoint
    data["algorithm"].update(algorithm)
    doc = launch_document(parse_spec(data, "export"), store_prefix="/srv/store",
                          launcher_commit=None)
    doc["skyrl"]["trainer"]["logger"] = "console"
    return skyrl_cli_args(doc["skyrl"])


def schedules(cases: dict[str, list[str]], tmp_path: Path, release: str = "0.3.0"
              ) -> dict[str, Any]:
    cases_path = tmp_path / "cases.json"
    result_path = tmp_path / "result.json"
    cases_path.write_text(json.dumps({
        case_id: {"cli_args": args, "steps_per_epoch": STEPS_PER_EPOCH}
        for case_id, args in cases.items()}))
    done = subprocess.run([contract_python(release), str(SCHEDULE), str(cases_path),
                           str(result_path)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(result_path.read_text())


@pytest.mark.parametrize("release", RELEASES)
def test_every_rendered_export_policy_ends_with_an_export_in_skyrls_trainer(
        release: str, tmp_path: Path) -> None:
    experiments = experiments_checkpoints()
    assert {"experiments/qwen2.5-1.5b-gsm8k/BUILD", "experiments/qwen3-30b-a3b-megatron/BUILD",
            "experiments/qwen2.5-1.5b-instruct-ref-2x8/BUILD",
            "experiments/qwen2.5-14b-separate-ref/BUILD"} <= set(experiments)
    cases = {build: cli_args(checkpoint) for build, checkpoint in experiments.items()}
    final_only = {"ckpt_interval": 10, "max_ckpts_to_keep": 2, "hf_save_interval": -1,
                  "export_final": True}
    cases["every 2 steps"] = cli_args({**final_only, "hf_save_interval": 2})
    cases["final only, 2 epochs"] = cli_args(final_only, epochs=2)
    cases["final only, stopped at step 3"] = cli_args(final_only, max_training_steps=3)
    # What the launch YAML used to say: SkyRL reads -1 as no export at all.
    cases["-1 as written before"] = [
        "trainer.hf_save_interval=-1" if arg.startswith("trainer.hf_save_interval=") else arg
        for arg in cases["every 2 steps"]]

    report = schedules(cases, tmp_path, release)
    assert report["skyrl_version"] == release
    assert report["conditions"] == {
        "is_epoch_end": "self.global_step % len(self.train_dataloader) == 0",
        "hf_model_save": "self.cfg.trainer.hf_save_interval > 0 and (is_epoch_end or"
                         " self.global_step % self.cfg.trainer.hf_save_interval == 0)",
        "safety_net": "self.cfg.trainer.hf_save_interval > 0 and (not hf_model_save)",
    }
    results = report["results"]
    for build, checkpoint in experiments.items():
        # Every experiment's run ends with an export; the GPU experiments' policy (-1 with
        # export_final) exports the last step only: the epoch's end (is_epoch_end), step 5.
        assert results[build]["last_step_exported"], build
        if checkpoint["hf_save_interval"] == -1:
            assert results[build] == {
                "hf_save_interval": 1_000_000_000, "total_steps": 5, "exported_steps": [5],
                "final_save": False, "last_step_exported": True}, build
    assert results["every 2 steps"]["exported_steps"] == [2, 4, 5]
    assert results["final only, 2 epochs"]["exported_steps"] == [5, 10]
    # stopped before the epoch's end: the safety net exports the last step
    assert results["final only, stopped at step 3"] == {
        "hf_save_interval": 1_000_000_000, "total_steps": 3, "exported_steps": [3],
        "final_save": True, "last_step_exported": True}
    assert results["-1 as written before"] == {
        "hf_save_interval": -1, "total_steps": 5, "exported_steps": [], "final_save": False,
        "last_step_exported": False}
