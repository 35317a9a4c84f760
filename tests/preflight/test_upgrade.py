"""`rlaunch upgrade-check` (rlaunch/preflight/upgrade.py): what the runtime pin alone changes,
on the GSM8K GRPO run as `./pants package` writes its spec (tests/render/golden)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from rlaunch.preflight.commands import upgrade_check_command
from rlaunch.preflight.upgrade import upgrade_check
from rlaunch.spec import parse_spec

GSM8K = (Path(__file__).parents[1] / "render" / "golden" / "experiments" / "qwen2.5-1.5b-gsm8k"
         / "grpo" / "spec.json")
CISPO = "trainer.algorithm.cispo"


def gsm8k(**settings: object) -> dict:
    data = json.loads(GSM8K.read_text())
    data["settings"].update(settings)
    return data


def run(data: dict, tmp_path: Path, pin: str = "skyrl==0.4.0") -> tuple[int, str]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(upgrade_check_command, [str(path), "--to", pin])
    return result.exit_code, result.output


def test_a_grpo_run_setting_no_cispo_field_changes_nothing(tmp_path: Path) -> None:
    spec = parse_spec(gsm8k())
    status, output = run(gsm8k(), tmp_path)
    assert status == 0
    assert output == (
        "gsm8k-grpo-qwen2.5-1.5b@2026.11.29: skyrl==0.3.0 -> skyrl==0.4.0\n"
        "settings whose effective value changes: none\n"
        "rules that start firing: none\n"
        "rules that stop firing: none\n"
        "new settings at their defaults: 43 (`rlaunch settings --runtime skyrl==0.4.0` lists"
        " them)\n"
        "version: 2026.11.29 is a calendar version; if it was launched on skyrl==0.3.0,"
        " launching it on skyrl==0.4.0 is refused (VER006): use a fresh version (2026.11.29.1),"
        " or, if its checkpoints load in skyrl==0.4.0, state resume.compatible_runtimes:"
        f" [\"{spec.runtime_fingerprint}\"]\n")


def test_a_cispo_run_is_told_both_moved_defaults(tmp_path: Path) -> None:
    status, output = run(gsm8k(**{"trainer.algorithm.policy_loss_type": "cispo"}), tmp_path)
    assert status == 1
    assert output.splitlines()[1:4] == [
        "settings whose effective value changes (2):",
        f"  {CISPO}.cispo_eps_clip_low   0.0 -> 1.0: SkyRL 0.4.0's default moved; the run does"
        " not set it (set it to 0.0 to keep SkyRL 0.3.0's)",
        f"  {CISPO}.cispo_eps_clip_high  5.0 -> 4.0: SkyRL 0.4.0's default moved; the run does"
        " not set it (set it to 5.0 to keep SkyRL 0.3.0's)",
    ]
    # A value the run sets is its own under both releases.
    pinned = upgrade_check(parse_spec(gsm8k(**{
        "trainer.algorithm.policy_loss_type": "cispo", f"{CISPO}.cispo_eps_clip_low": 0.0,
        f"{CISPO}.cispo_eps_clip_high": 5.0})), "skyrl==0.4.0")
    assert pinned.changes == []


def test_a_setting_the_target_release_lacks_and_a_pin_without_a_catalog(tmp_path: Path) -> None:
    """Moving a run that sets a 0.4.0-only name back to 0.3.0: the moved spec is refused,
    naming the release that has the name; a pin the catalog does not know exits 2."""
    data = gsm8k()
    data["runtime"]["package"] = "skyrl==0.4.0"
    data["settings"]["generator.inference_engine.offload_kv_for_weight_sync"] = False
    status, output = run(data, tmp_path, "skyrl==0.3.0")
    assert status == 1
    assert (
        "the upgraded spec is refused (1):\n"
        "  settings.generator.inference_engine.offload_kv_for_weight_sync: SkyRL 0.3.0 has no"
        " config field 'generator.inference_engine.offload_kv_for_weight_sync'; SkyRL 0.4.0 has"
        " it: pin that release in the run's runtime (a runtime change: a fresh version,"
        " docs/launching.md), or drop the setting (got false)\n") in output
    status, output = run(data, tmp_path, "skyrl==0.9.0")
    assert status == 2
    assert output.startswith("Error: skyrl==0.9.0 is not a release rlaunch's catalog lists")
