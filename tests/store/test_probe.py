"""The store probe (rlaunch/store/probe.py) against real servers: moto's S3 server and the GCS
emulator answering, missing a bucket, refusing a key, stopped, and a host that never answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from objectstores import ObjectStoreServer, running, silent_endpoint, start_s3
from rlaunch.spec.examples import worked_example
from rlaunch.store.probe import StoreProbe, probe_store

# Short, so the tests that wait it out stay short; the default (10 s) is the same code path.
BOUND = 3.0
SCHEDULING = 10.0
"""Seconds past the bound a probe may report on a loaded machine: the wait ends at the bound,
then the calling thread waits for the interpreter lock, which the probe's thread holds while
its client retries (5.4 s in all was seen at a load average of 10 on 2 cores)."""
# For a store that answers: the bound only cuts a store that does not, so give a loaded
# machine all the time it needs to get an answer.
PATIENT = 60.0
REPO = Path(__file__).resolve().parents[2]


def probe(server: ObjectStoreServer, prefix: str, seconds: float = BOUND) -> StoreProbe:
    with server.applied():
        return probe_store(prefix, seconds=seconds)


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_an_answering_store_is_reachable_empty_or_not(scheme, request) -> None:
    server = request.getfixturevalue("s3_server" if scheme == "s3" else "gcs_server")
    prefix = server.prefix()
    empty = probe(server, prefix, PATIENT)
    assert (empty.state, empty.answer) == ("reachable", "")
    with server.applied():
        server.filesystem().pipe(prefix.split("://")[1] + "/_ledger/x/dev.json", b"{}")
    assert probe(server, prefix, PATIENT).state == "reachable"


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_a_missing_bucket_is_named(scheme, request) -> None:
    server = request.getfixturevalue("s3_server" if scheme == "s3" else "gcs_server")
    found = probe(server, f"{scheme}://no-such-bucket-here/store", PATIENT)
    assert found.state == "no-bucket"
    assert found.problem().startswith(
        f"store {scheme}://no-such-bucket-here/store has no such bucket: bucket "
        "'no-such-bucket-here': FileNotFoundError: ")
    assert found.fix() == ("Create the bucket, or fix its name in execution.store_prefix (or "
                           "--store, RLAUNCH_STORE).")


def test_a_refused_key_is_access_denied(tmp_path: Path) -> None:
    server = start_s3(tmp_path, refuse_every_key=True)
    try:
        found = probe(server, "s3://some-bucket/store", PATIENT)
    finally:
        server.stop()
    assert found.state == "denied"
    assert found.problem().startswith(
        "store s3://some-bucket/store refused this machine's credentials: PermissionError: The "
        "AWS Access Key Id you provided does not exist in our records.")


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_a_stopped_server_is_unreachable_within_the_bound(scheme, tmp_path: Path) -> None:
    with running(scheme, tmp_path) as server:
        prefix = server.prefix()
    # Nothing listens on its port now: the clients retry (botocore, gcsfs' backoff) for longer
    # than the bound, which cuts them short.
    found = probe(server, prefix)
    # The answer says the wait was cut at the bound (the clients had not given up yet).
    assert (found.state, found.answer) == ("unreachable", f"no answer within {BOUND:g} s")
    assert BOUND <= found.seconds < BOUND + SCHEDULING
    assert f"store {prefix} did not answer: " in found.problem()


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_a_host_that_never_answers_is_cut_at_the_bound(scheme, request) -> None:
    server = request.getfixturevalue("s3_server" if scheme == "s3" else "gcs_server")
    prefix = server.prefix()
    with silent_endpoint() as endpoint:
        found = probe(server.pointed_at(endpoint), prefix)
    assert (found.state, found.answer) == ("unreachable", f"no answer within {BOUND:g} s")
    assert BOUND <= found.seconds < BOUND + SCHEDULING
    assert found.problem() == (
        f"store {prefix} did not answer: no answer within 3 s (probed once by listing it and "
        f"reading its bucket's metadata: {found.seconds:.1f} s, of at most 3 s)")


def test_a_local_store_is_not_probed(tmp_path: Path) -> None:
    found = probe_store(str(tmp_path / "store"))
    assert (found.state, found.seconds) == ("reachable", 0.0)


def test_preflight_scope_all_reports_a_silent_store_once_within_the_bound(
    s3_server: ObjectStoreServer, tmp_path: Path
) -> None:
    # Before the probe: two minutes of silence, then PRE000 "rule VER005 crashed ... This is a
    # bug in rlaunch", once per world rule that reads the ledger.
    spec = worked_example("colocated-1x8")
    spec["execution"]["store_prefix"] = "s3://rlaunch-silent/store"
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    with silent_endpoint() as endpoint:
        env = {**s3_server.pointed_at(endpoint).env(), "PYTHONPATH": str(REPO / "src"),
               "RLAUNCH_STORE_PROBE_SECONDS": str(BOUND)}
        done = subprocess.run(
            [sys.executable, "-m", "rlaunch", "preflight", "--scope", "all", str(path)],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
    assert done.returncode == 1, done.stderr
    assert "PRE000" not in done.stdout
    assert done.stdout.count("EXEC009") == 1
    assert ("error EXEC009 <spec>: store s3://rlaunch-silent/store did not answer: no answer "
            "within 3 s "
            "(probed once by listing it and reading its bucket's metadata: ") in done.stdout
    assert ", of at most 3 s); not checked without it: VER002, VER003, VER005" \
        in done.stdout
    assert ("fix: Check the network path to the store (VPN, proxy, endpoint variables such as "
            "AWS_ENDPOINT_URL or STORAGE_EMULATOR_HOST)") in done.stdout


def test_a_launch_on_a_silent_store_is_refused_within_the_bound(
    s3_server: ObjectStoreServer, tmp_path: Path
) -> None:
    spec = worked_example("colocated-1x8")
    spec["version"] = "dev"
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    with silent_endpoint() as endpoint:
        env = {**s3_server.pointed_at(endpoint).env(), "PYTHONPATH": str(REPO / "src"),
               "RLAUNCH_STORE_PROBE_SECONDS": str(BOUND)}
        done = subprocess.run(
            [sys.executable, "-m", "rlaunch", "launch", "--dry-run", "--store",
             "s3://rlaunch-silent/store", "--out", str(tmp_path / "launch.yaml"), str(path)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("colocated-1x8@dev: refused before anything ran\nerror EXEC009 store "
            "s3://rlaunch-silent/store did not answer: no answer within 3 s") in done.stderr
    assert not (tmp_path / "launch.yaml").exists()
