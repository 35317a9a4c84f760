"""`rlaunch sweep` through the one submission path: smokes first, one line per point as it starts
and ends, a refused point refused exactly as `rlaunch launch` refuses it while the others run, and
points at once only where the executor allows (the dry-run executor here, three at a time;
`local` runs one at a time). Real training points: tests/e2e/test_sweep.py."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from executors.support import echo_profiles, echo_spec, shared_store
from rlaunch.launch import EXIT_REFUSED
from rlaunch.ledger.ledger import Ledger
from rlaunch.ledger.smoke import record_smoke_success, role_geometry
from rlaunch.paths import run_paths
from rlaunch.preflight.launch_checks.smoke_gate import smoke_gate_findings
from rlaunch.spec import catalog, parse_spec
from rlaunch.sweep.runner import (
    PointOutcome,
    SweepPoint,
    launch_order,
    parallelism,
    run_sweep,
    share_smokes,
)


@pytest.fixture(autouse=True)
def _echo_profile(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog, "PROFILES", echo_profiles())


def point(store: Path, name: str, *, executor: str = "dry-run", smoke_of: str | None = None,
          seed: int = 7) -> SweepPoint:
    return SweepPoint(f"{name}.yaml", parse_spec(echo_spec(
        store, name=name, executor=executor, smoke_of=smoke_of, seed=seed)))


def test_smokes_go_first_and_local_runs_one_at_a_time(tmp_path: Path) -> None:
    points = [point(tmp_path, "p1"), point(tmp_path, "s", smoke_of="p1@dev"),
              point(tmp_path, "p2")]
    assert [p.spec.name for p in launch_order(points)] == ["s", "p1", "p2"]
    assert parallelism(points, 4) == 4
    assert parallelism([*points, point(tmp_path, "p3", executor="local")], 4) == 1


def test_every_point_gets_a_line_and_a_refusal_is_the_launch_refusal(tmp_path: Path) -> None:
    store = shared_store(tmp_path.parent)
    points = [point(store, f"sweep-p{i}", seed=i) for i in range(1, 4)]
    points.insert(0, point(store, "sweep-smoke", smoke_of="sweep-p1@dev"))
    # A point `rlaunch launch` refuses: a calendar version with no recorded smoke (LAUNCH001).
    refused = parse_spec(echo_spec(store, name="sweep-calendar", executor="dry-run",
                                   version="2026.11.30"))
    points.append(SweepPoint("sweep-calendar.yaml", refused))
    lines: list[str] = []
    lock = threading.Lock()

    def line(text: str) -> None:
        with lock:
            lines.append(text)

    outcomes = run_sweep(points, out_dir=tmp_path / "dist", store=None, repo=tmp_path,
                         max_parallel=3, line=line, say=lambda text: None)
    assert [o.identity for o in outcomes] == [
        "sweep-smoke@dev", "sweep-p1@dev", "sweep-p2@dev", "sweep-p3@dev",
        "sweep-calendar@2026.11.30"]
    assert [o.status for o in outcomes] == ["dry-run"] * 4 + ["refused"]
    assert outcomes[-1].exit_code == EXIT_REFUSED
    # The smoke ends before any point starts.
    assert lines[0] == "[1/5] sweep-smoke@dev: launching"
    assert lines[1] == ("[1/5] sweep-smoke@dev: dry run, nothing submitted "
                        f"({tmp_path / 'dist' / 'sweep-smoke' / 'launch.yaml'})")
    for index, name in enumerate(["sweep-p1", "sweep-p2", "sweep-p3"], start=2):
        assert f"[{index}/5] {name}@dev: launching" in lines
        assert (f"[{index}/5] {name}@dev: dry run, nothing submitted "
                f"({tmp_path / 'dist' / name / 'launch.yaml'})") in lines
    [refusal] = [text for text in lines if text.startswith("[5/5] sweep-calendar@2026.11.30: ref")]
    assert refusal.startswith("[5/5] sweep-calendar@2026.11.30: refused\n    ")
    assert "LAUNCH001" in refusal
    for name in ("sweep-p1", "sweep-p2", "sweep-p3"):
        assert (tmp_path / "dist" / name / "launch.yaml").is_file()


def test_one_smoke_per_geometry_stands_for_every_calendar_point_of_that_geometry(
        tmp_path: Path) -> None:
    version = "2026.11.30"
    smoke = point(tmp_path, "cal-smoke", smoke_of=f"cal-p1@{version}")
    first, second = (SweepPoint(f"cal-p{i}.yaml", parse_spec(echo_spec(
        tmp_path, name=f"cal-p{i}", executor="dry-run", version=version, seed=i)))
        for i in (1, 2))
    other = echo_spec(tmp_path, name="cal-p3", executor="dry-run", version=version)
    other["role_plan"]["rollout"]["weight_sync_backend"] = "nccl"
    elsewhere = SweepPoint("cal-p3.yaml", parse_spec(other))
    assert role_geometry(elsewhere.spec) != role_geometry(first.spec)
    # The smoke succeeded and wrote its terminal manifest: recorded for its smoke_of, cal-p1.
    terminal = Path(run_paths(str(tmp_path), "cal-smoke", "dev").terminal_manifest)
    terminal.parent.mkdir(parents=True)
    terminal.write_text("{}")
    ledger = Ledger(str(tmp_path))
    spec = smoke.spec
    record = {"name": spec.name, "version": spec.version, "smoke_of": f"cal-p1@{version}",
              "geometry": role_geometry(spec), "runtime_fingerprint": spec.runtime_fingerprint,
              "fingerprint": spec.fingerprint}
    assert record_smoke_success(ledger, record, "a1") is not None
    assert smoke_gate_findings(first.spec, ledger) == []
    [before] = smoke_gate_findings(second.spec, ledger)
    assert before.code == "LAUNCH001"
    said: list[str] = []
    share_smokes([(smoke, PointOutcome("cal-smoke@dev", "SUCCEEDED", 0))],
                 [first, second, elsewhere], store=None, say=said.append)
    assert said == [f"rlaunch: recorded cal-smoke@dev as a successful smoke of "
                    f"cal-p2@{version} too (same role geometry and runtime fingerprint as "
                    f"cal-p1@{version})"]
    assert smoke_gate_findings(second.spec, ledger) == []
    [shared] = ledger.read("cal-p2", version)["smoke_results"]
    assert (shared["smoke"], shared["attempt_id"], shared["shared_from"]) == (
        "cal-smoke@dev", "a1", f"cal-p1@{version}")
    # A point of another geometry is still refused: the smoke does not stand for it.
    [refused] = smoke_gate_findings(elsewhere.spec, ledger)
    assert refused.code == "LAUNCH001"
    assert refused.message.endswith(
        f"no smoke is recorded for it in {ledger.record_path('cal-p3', version)}")
    # Sharing again (a re-run sweep) records nothing twice; a failed smoke shares nothing.
    share_smokes([(smoke, PointOutcome("cal-smoke@dev", "SUCCEEDED", 0))],
                 [second], store=None, say=said.append)
    assert len(ledger.read("cal-p2", version)["smoke_results"]) == 1
    fourth = SweepPoint("cal-p4.yaml", parse_spec(echo_spec(
        tmp_path, name="cal-p4", executor="dry-run", version=version, seed=4)))
    share_smokes([(smoke, PointOutcome("cal-smoke@dev", "FAILED", 3))], [fourth],
                 store=None, say=said.append)
    assert ledger.read("cal-p4", version) is None
