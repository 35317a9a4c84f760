"""The smoke gate (LAUNCH001) and the recording of a smoke's success for its full run."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from executors.support import echo_spec
from rlaunch.launch import SMOKE_GATE_CODES
from rlaunch.ledger import Ledger, add_smoke_result, set_status, start_attempt
from rlaunch.ledger.smoke import record_smoke_success, role_geometry
from rlaunch.preflight.commands import rules
from rlaunch.preflight.docs import rules_markdown
from rlaunch.preflight.engine.registry import launch_checks
from rlaunch.preflight.launch_checks.smoke_gate import SMOKE_GATE_CODE, smoke_gate_findings
from rlaunch.spec import parse_spec
from rlaunch.status import AttemptStatus

FULL = "echo-full@2026.11.29"


def full_spec(store: Path, **options):
    return parse_spec(echo_spec(store, name="echo-full", version="2026.11.29", **options))


def smoke_spec(store: Path):
    return parse_spec(echo_spec(store, name="echo-smoke", version="dev", smoke_of=FULL))


def run_smoke(ledger: Ledger, store: Path, *, manifest: bool) -> dict | None:
    smoke = smoke_spec(store)
    ledger.update(smoke.name, smoke.version, lambda r: start_attempt(
        r, attempt_id="s1", fingerprint=smoke.fingerprint,
        runtime_fingerprint=smoke.runtime_fingerprint, geometry=role_geometry(smoke),
        launcher_commit=None, yaml_digest="sha256:y", yaml_path="/y", smoke_of=FULL,
        skip_smoke_gate=None))
    record = ledger.update(smoke.name, smoke.version,
                           lambda r: set_status(r, "s1", AttemptStatus.SUCCEEDED))
    if manifest:
        path = store / "echo-smoke" / "dev" / "terminal.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    return record_smoke_success(ledger, record, "s1")


def test_a_calendar_full_run_without_a_smoke_is_gated(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    spec = full_spec(tmp_path)
    [finding] = smoke_gate_findings(spec, ledger)
    assert finding.code == SMOKE_GATE_CODE == "LAUNCH001"
    assert finding.is_error
    assert finding.message == (
        "calendar version echo-full@2026.11.29 is a full launch and needs a recorded successful "
        f"smoke of the same role geometry and runtime fingerprint ({spec.runtime_fingerprint}): "
        f"no smoke is recorded for it in {tmp_path}/_ledger/echo-full/2026.11.29.json"
    )
    assert finding.fix.endswith("or pass --skip-smoke-gate REASON (recorded in the ledger).")


def test_dev_versions_and_smoke_runs_are_not_gated(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    assert smoke_gate_findings(parse_spec(echo_spec(tmp_path)), ledger) == []
    assert smoke_gate_findings(smoke_spec(tmp_path), ledger) == []


def test_a_recorded_smoke_opens_the_gate(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    result = run_smoke(ledger, tmp_path, manifest=True)
    assert result["smoke"] == "echo-smoke@dev"
    assert result["terminal_manifest"] == f"{tmp_path}/echo-smoke/dev/terminal.json"
    assert ledger.smoke_result("echo-full", "2026.11.29") == result
    assert smoke_gate_findings(full_spec(tmp_path), ledger) == []
    # Observing the same success again (rlaunch status) records it once.
    record = ledger.read("echo-smoke", "dev")
    record_smoke_success(ledger, record, "s1")
    assert len(ledger.read("echo-full", "2026.11.29")["smoke_results"]) == 1


def test_a_smoke_without_terminal_manifest_is_not_recorded(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    assert run_smoke(ledger, tmp_path, manifest=False) is None
    assert ledger.read("echo-full", "2026.11.29") is None


def test_a_smoke_of_another_geometry_or_runtime_does_not_count(tmp_path: Path) -> None:
    ledger = Ledger(str(tmp_path))
    run_smoke(ledger, tmp_path, manifest=True)
    spec = full_spec(tmp_path)
    wider = spec.role_plan.model_copy(update={
        "rollout": spec.role_plan.rollout.model_copy(update={"weight_sync_backend": "nccl"})})
    [finding] = smoke_gate_findings(spec.model_copy(update={"role_plan": wider}), ledger)
    assert finding.message.endswith(
        "smoke echo-smoke@dev attempt s1: its role geometry differs: "
        "role_plan.rollout.weight_sync_backend gloo (here nccl)"
    )
    other = {"smoke": "old@dev", "attempt_id": "s0", "status": "SUCCEEDED",
             "geometry": role_geometry(spec), "runtime_fingerprint": "sha256:old"}
    ledger.update("echo-full", "2026.11.29", lambda r: r.update(smoke_results=[other]))
    [finding] = smoke_gate_findings(spec, ledger)
    assert finding.message.endswith(
        f"smoke old@dev attempt s0: it ran runtime sha256:old, this run's runtime is "
        f"{spec.runtime_fingerprint}"
    )
    failed = {**other, "status": "FAILED"}
    ledger.update("echo-full", "2026.11.29", lambda r: add_smoke_result(r, failed))
    [finding] = smoke_gate_findings(spec, ledger)
    assert "smoke old@dev attempt s0: it ended FAILED" in finding.message


def test_the_smoke_gate_is_listed_with_the_rules_and_documented_from_its_real_finding() -> None:
    [check] = [check for check in launch_checks() if check.code == SMOKE_GATE_CODE]
    assert (check.code, check.family, check.scope) == (SMOKE_GATE_CODE, "launch", "world")
    assert check.func is smoke_gate_findings
    assert SMOKE_GATE_CODES == {check.code}
    listed = json.loads(CliRunner().invoke(rules, ["--format", "json"]).output)["rules"]
    assert listed[-3] == {"code": "LAUNCH001", "family": "launch", "scope": "world",
                          "summary": check.summary, "releases": None}
    # The docs show the finding the gate itself returns for the example.
    [finding] = check.example()
    markdown = rules_markdown()
    implemented = "rlaunch.preflight.launch_checks.smoke_gate.smoke_gate_findings"
    assert f"implemented in `{implemented}`" in markdown
    assert f"error LAUNCH001 version, smoke_of: {finding.message}\n    fix: {finding.fix}" in (
        markdown
    )
    assert "no smoke is recorded for it in /srv/rlaunch-store/_ledger/colocated-1x8/" in (
        finding.message
    )
