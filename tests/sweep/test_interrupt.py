"""Ctrl-C stops a sweep whose points run at once: the ray executor on a Ray head of this machine
(a stand-in cluster), two points whose echo jobs wait, `rlaunch sweep` in a process of its own.
Both jobs end STOPPED at Ray and in the ledger, and the sweep exits 130."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import yaml

from executors.support import HeadWatch, clean_git_repo, echo_cli, echo_spec, job_env, shared_store
from rlaunch.executors import Submission, jobs_api
from rlaunch.executors.local_head import read_record
from rlaunch.ledger import Ledger, last_attempt
from rlaunch.status import AttemptStatus

POINTS = ("echo-wait-sweep-a", "echo-wait-sweep-b")


@pytest.fixture
def cluster(echo_head: HeadWatch) -> str:
    """The Jobs API address of the session's echo head (tests/conftest.py), to the ray executor
    a cluster like any other: a head started for this test alone would cost 10-20 CPU s more."""
    record = read_record(echo_head.state_dir)
    assert record is not None
    return record.dashboard_url


def _submissions(ledger: Ledger) -> dict[str, Submission]:
    found = {}
    for name in POINTS:
        attempt = last_attempt(ledger.read(name, "dev"))
        if attempt and attempt.get("submission"):
            found[name] = Submission.from_dict(attempt["submission"])
    return found


def test_ctrl_c_stops_the_jobs_of_points_running_at_once_and_records_them(
    cluster: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    store = shared_store(tmp_path_factory.getbasetemp())
    ledger = Ledger(str(store))
    specs = []
    for name in POINTS:
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(echo_spec(store, name=name, executor="ray",
                                                 address=cluster)))
        specs.append(str(path))
    sweep = echo_cli("sweep", *specs, "--out-dir", str(tmp_path / "dist"),
                     "--repo", str(clean_git_repo(tmp_path / "repo")), "--max-parallel", "2",
                     cwd=tmp_path, env=job_env())
    try:
        deadline = time.monotonic() + 180
        jobs = _submissions(ledger)
        while len(jobs) < len(POINTS) and sweep.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            jobs = _submissions(ledger)
        assert len(jobs) == len(POINTS), sweep.communicate(timeout=30)
        sweep.send_signal(signal.SIGINT)
        out, err = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            sweep.kill()
            sweep.communicate()
    assert sweep.returncode == 130, err
    assert ("sweep: interrupted; stopping the jobs of 2 point(s) still running: "
            "echo-wait-sweep-a@dev, echo-wait-sweep-b@dev") in err
    for index, name in enumerate(POINTS, start=1):
        job = jobs[name]
        assert f"sweep: stopping {name}@dev ({job.submission_id})" in err
        assert f"[{index}/2] {name}@dev: interrupted (its job stopped by the sweep)" in out
        assert ledger.read(name, "dev")["status"] == "STOPPED"
        assert jobs_api.status(cluster, job.submission_id) == AttemptStatus.STOPPED
    assert "sweep: 0 of 2 runs succeeded" in out
