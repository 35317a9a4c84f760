"""`rlaunch rules` and `rlaunch preflight`: output, JSON shape and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from preflight.helpers import example
from rlaunch.preflight.commands import preflight, rules, settings_command
from rlaunch.preflight.docs import rules_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"


def write(tmp_path: Path, name: str, data: object, suffix: str = "yaml") -> str:
    path = tmp_path / f"{name}.{suffix}"
    path.write_text(json.dumps(data) if suffix == "json" else yaml.safe_dump(data))
    return str(path)


def test_rules_table_lists_every_code_family_and_scope() -> None:
    result = CliRunner().invoke(rules, [])
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0] == "CODE      FAMILY      SCOPE  RULE"
    assert lines[2] == (
        "GEO001    geometry    spec   Every count in the role plan and the allocation is at"
        " least 1."
    )
    assert "VER002    versions    world  A calendar version launched before keeps its" \
        " fingerprint (else: bump the version)." in lines
    # The preflight rules, then the launch checks (the smoke gate, the tokenizer checks).
    assert len(lines) == 2 + 116 + 3
    assert lines[-3].startswith("LAUNCH001 launch      world  A calendar-versioned full launch")
    assert lines[-1].startswith("LAUNCH003 launch      world  Every model of the run")


def test_rules_json() -> None:
    result = CliRunner().invoke(rules, ["--format", "json"])
    listed = json.loads(result.output)["rules"]
    assert listed[0] == {
        "code": "GEO001", "family": "geometry", "scope": "spec",
        "summary": "Every count in the role plan and the allocation is at least 1.",
        "releases": None,
    }
    by_code = {entry["code"]: entry for entry in listed}
    assert by_code["SET015"]["releases"] == ["0.4.0"]


def test_committed_docs_match_the_generated_markdown() -> None:
    generated = CliRunner().invoke(rules, ["--format", "markdown"]).output
    assert generated == rules_markdown()
    assert DOCS.read_text(encoding="utf-8") == generated, (
        "docs/rules.md is stale: run `rlaunch rules --format markdown > docs/rules.md`"
    )


def test_clean_specs_exit_0_with_warnings_allowed(tmp_path: Path) -> None:
    spec = write(tmp_path, "colocated", example("colocated-1x8"))
    result = CliRunner().invoke(preflight, [spec])
    assert result.exit_code == 0
    assert result.output.startswith(
        f"{spec} (colocated-1x8@2026.11.29): ok, 0 errors, 1 warning\nwarning BATCH010"
    )


def test_an_error_finding_exits_1_and_every_spec_is_reported(tmp_path: Path) -> None:
    good = write(tmp_path, "good", example("disaggregated-8x8-tp8"), "json")
    bad = write(tmp_path, "bad", example("tp8-on-42-heads"))
    result = CliRunner().invoke(preflight, [good, bad])
    assert result.exit_code == 1
    assert f"{good} (disaggregated-8x8-tp8@2026.11.29): ok, 0 errors, 1 warning" in result.output
    assert f"{bad} (tp8-on-42-heads@2026.11.29): refused, 2 errors, 1 warning" in result.output
    assert "error GEO016 role_plan.rollout.tensor_parallel_size" in result.output
    assert result.output.endswith("\n2 specs: 1 ok, 1 refused, 0 invalid\n")


def test_an_invalid_spec_exits_2_and_the_others_are_still_reported(tmp_path: Path) -> None:
    broken = example()
    del broken["seed"]
    invalid = write(tmp_path, "invalid", broken)
    missing = str(tmp_path / "missing.yaml")
    refused = write(tmp_path, "refused", example("tp8-on-42-heads"))
    result = CliRunner().invoke(preflight, [invalid, missing, refused])
    assert result.exit_code == 2
    assert f"{invalid}: not a valid RunSpec (1 problem(s))\n  - seed: required key is missing" \
        in result.output
    assert f"{missing}: not a valid RunSpec (1 problem(s))\n  - cannot read the file" \
        in result.output
    assert "error GEO016 role_plan.rollout.tensor_parallel_size" in result.output


def test_json_output_for_many_specs(tmp_path: Path) -> None:
    good = write(tmp_path, "good", example("megatron-moe-5x8"))
    broken = example()
    broken["bogus"] = 1
    invalid = write(tmp_path, "invalid", broken)
    result = CliRunner().invoke(preflight, ["--format", "json", good, invalid])
    assert result.exit_code == 2
    specs = json.loads(result.output)["specs"]
    assert [(s["source"], s["identity"], s["valid"], s["errors"]) for s in specs] == [
        (good, "megatron-moe-5x8@2026.11.29", True, 0),
        (invalid, None, False, 0),
    ]
    assert specs[0]["findings"][0]["code"] == "BATCH010"
    assert specs[1]["problems"] == ["bogus: unknown key (remove it or check its spelling)"]


def test_scope_all_reads_the_environment(tmp_path: Path, monkeypatch) -> None:
    data = example(edits={"execution.credentials": ["RLAUNCH_TEST_TOKEN"],
                          "execution.store_prefix": str(tmp_path / "store")})
    spec = write(tmp_path, "creds", data)
    monkeypatch.chdir(tmp_path)  # not a git checkout: the tree state is unknown
    monkeypatch.delenv("RLAUNCH_TEST_TOKEN", raising=False)
    result = CliRunner().invoke(preflight, ["--scope", "all", spec])
    assert result.exit_code == 1
    assert ("error EXEC004 execution.credentials.0: credential RLAUNCH_TEST_TOKEN"
            " (execution.credentials[0]) is not set in the launching environment") in result.output
    assert "warning VER004 version: calendar version 2026.11.29: cannot tell" in result.output
    monkeypatch.setenv("RLAUNCH_TEST_TOKEN", "value")
    assert CliRunner().invoke(preflight, ["--scope", "all", spec]).exit_code == 0
    assert CliRunner().invoke(preflight, [spec]).exit_code == 0


def test_commands_are_registered_on_the_main_group() -> None:
    from rlaunch.cli import main

    assert main.commands["rules"] is rules
    assert main.commands["preflight"] is preflight


def test_scope_all_reads_the_ledger_of_the_spec_store(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "store"
    data = example(edits={"execution.store_prefix": str(store)})
    spec = write(tmp_path, "run", data)
    monkeypatch.chdir(tmp_path)
    assert CliRunner().invoke(preflight, ["--scope", "all", spec]).exit_code == 0
    record = store / "_ledger" / "colocated-1x8" / "2026.11.29.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({
        "name": "colocated-1x8", "version": "2026.11.29", "fingerprint": "sha256:" + "0" * 64,
        "runtime_fingerprint": None, "status": "SUCCEEDED",
        "attempts": [{"submission": {"job_id": "raysubmit_1"}}],
    }))
    result = CliRunner().invoke(preflight, ["--scope", "all", spec])
    assert result.exit_code == 1
    assert ("error VER002 version: colocated-1x8@2026.11.29 was launched before (status"
            f" SUCCEEDED) with fingerprint sha256:{'0' * 64}") in result.output
    assert CliRunner().invoke(preflight, [spec]).exit_code == 0  # spec scope: no ledger


def test_settings_lists_a_releases_settings_with_types_defaults_and_the_plans_names() -> None:
    runner = CliRunner()
    result = runner.invoke(settings_command, ["lora.rank"])
    assert (result.exit_code, result.output) == (0, (
        "trainer.policy.model.lora.rank  int              default 0\n"
        "trainer.ref.model.lora.rank     int              default 0\n"
        "trainer.critic.model.lora.rank  int              default 0\n"
    ))
    result = runner.invoke(settings_command, ["trainer.train_batch"])
    assert result.output == (
        "trainer.train_batch_size  (the plan's: role_plan.batch.train_batch_size)\n")
    result = runner.invoke(settings_command, ["--runtime", "rlaunch==0.1.0"])
    assert result.output.splitlines()[0] == (
        "trainer.policy.optimizer_config.weight_decay   float            default 0.01")
    assert len(result.output.splitlines()) == 4
    result = runner.invoke(settings_command, ["x", "--runtime", "skyrl==0.5.0"])
    assert result.exit_code == 1
    assert "skyrl==0.5.0 is not a release rlaunch's catalog lists settings for" in result.output
    result = runner.invoke(settings_command, ["cispo", "--release", "0.4.0"])
    assert result.output == (
        "trainer.algorithm.cispo.cispo_eps_clip_low   float            default 1.0\n"
        "trainer.algorithm.cispo.cispo_eps_clip_high  float            default 4.0\n"
        'trainer.algorithm.cispo.cispo_anchor         str              default "old"\n')
    result = runner.invoke(settings_command, ["cispo", "--release", "0.3.0"])
    assert result.output == (
        "trainer.algorithm.cispo.cispo_eps_clip_low   float            default 0.0\n"
        "trainer.algorithm.cispo.cispo_eps_clip_high  float            default 5.0\n")
    result = runner.invoke(settings_command, ["delta_weight_sync.sync", "--release", "0.4.0"])
    assert result.output == (
        "generator.inference_engine.delta_weight_sync.sync_dir  str              "
        "(required: no default)\n")
    result = runner.invoke(settings_command, ["no_such_thing"])
    assert result.output == (
        "Error: SkyRL 0.3.0 has no setting whose name contains 'no_such_thing'\n")
