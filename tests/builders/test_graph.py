"""The build graph: reuse, rebuild of exactly the dependents, version rules, crashes, races."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from builders import helpers
from builders.helpers import calls_of, node, parse
from rlaunch.builders import BuildError, build_artifact, materialize
from rlaunch.spec import parse_spec
from rlaunch.spec.artifacts import fingerprint
from rlaunch.spec.examples import worked_example
from rlaunch.store import RECORD_FILE, ArtifactStore


def quiet(message: str) -> None:
    pass


def diamond(calls: Path, *, a_content: str = "a1", a_version: str = "2026.01.01",
            top_version: str = "2026.01.01") -> dict:
    """d <- (c <- a), b: changing a must rebuild a, c and d and leave b alone."""
    a = node("a", calls, content=a_content, version=a_version)
    b = node("b", calls, content="b1")
    c = node("c", calls, content="c1", deps={"a": a}, version=top_version)
    return node("d", calls, content="d1", deps={"c": c, "b": b}, version=top_version)


def test_second_build_with_nothing_changed_does_no_work(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    artifact = parse(diamond(calls))
    started = time.perf_counter()
    first = build_artifact(artifact, str(tmp_path / "store"), log=quiet)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    second = build_artifact(artifact, str(tmp_path / "store"), log=quiet)
    warm = time.perf_counter() - started
    print(f"cold build {cold:.3f}s, warm build {warm:.3f}s (4 nodes)")
    assert Counter(calls_of(calls)) == {"a@2026.01.01": 1, "b@2026.01.01": 1,
                                        "c@2026.01.01": 1, "d@2026.01.01": 1}
    assert first.built == ["b@2026.01.01", "a@2026.01.01", "c@2026.01.01", "d@2026.01.01"]
    assert second.built == []
    assert second.reused == first.built
    assert second.fingerprint == first.fingerprint
    assert second.uri == str(tmp_path / "store" / "d" / "2026.01.01")


def test_changing_one_pin_rebuilds_exactly_its_dependents(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    store = str(tmp_path / "store")
    build_artifact(parse(diamond(calls)), store, log=quiet)
    # a's content changes: a, and everything above it, need new (bumped) versions.
    changed = diamond(calls, a_content="a2", a_version="2026.01.02", top_version="2026.01.02")
    result = build_artifact(parse(changed), store, log=quiet)
    assert Counter(calls_of(calls)) == {
        "a@2026.01.01": 1, "b@2026.01.01": 1, "c@2026.01.01": 1, "d@2026.01.01": 1,
        "a@2026.01.02": 1, "c@2026.01.02": 1, "d@2026.01.02": 1,
    }
    assert result.reused == ["b@2026.01.01"]
    payload = json.loads((result.local_path / "payload.txt").read_text())
    assert json.loads(json.loads(payload["c"])["a"])["content"] == "a2"


def test_same_calendar_version_with_other_content_is_refused(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    store = str(tmp_path / "store")
    before = build_artifact(parse(node("a", calls, content="one")), store, log=quiet)
    changed = parse(node("a", calls, content="two"))
    with pytest.raises(BuildError) as raised:
        build_artifact(changed, store, log=quiet)
    message = str(raised.value)
    assert f"a@2026.01.01 is already built with fingerprint {before.fingerprint}" in message
    assert f"but this spec gives it {fingerprint(changed)}" in message
    assert "bump the version (e.g. 2026.01.01.1)" in message
    assert calls_of(calls) == ["a@2026.01.01"]
    # --force rebuilds, but never lets a calendar version change content.
    with pytest.raises(BuildError, match="bump the version"):
        build_artifact(changed, store, force=True, log=quiet)


def _edit_record(store: Path, name: str, **fields: object) -> None:
    path = store / name / "2026.01.01" / RECORD_FILE
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


def _with_content(root: Path, content: str) -> dict:
    config = json.loads((root / RECORD_FILE).read_text())["config"]
    return {**config, "config": {**config["config"], "content": content}}


def test_a_fingerprint_edited_by_hand_is_called_an_edit_not_a_new_content(
    tmp_path: Path,
) -> None:
    calls = tmp_path / "calls"
    store = tmp_path / "store"
    a = node("a", calls, content="one")
    top = node("top", calls, deps={"a": a})
    built = build_artifact(parse(top), str(store), log=quiet)
    true_a = fingerprint(parse(a))
    forged = "sha256:" + "e" * 64
    root = store / "a" / "2026.01.01"

    _edit_record(store, "a", fingerprint=forged)
    with pytest.raises(BuildError) as raised:
        build_artifact(parse(top), str(store), log=quiet)
    assert str(raised.value) == (
        f"{root}/{RECORD_FILE} was edited by hand or damaged: it records a@2026.01.01 with "
        f"fingerprint {forged}, but its own config and deps give {true_a}, the fingerprint "
        f"of this spec too: restore it, or delete {root} and build again"
    )
    assert "bump the version" not in str(raised.value)

    # Its config edited (the recorded fingerprint kept) while the spec also changed.
    _edit_record(store, "a", fingerprint=true_a, config=_with_content(root, "edited"))
    changed = parse(node("a", calls, content="two"))
    with pytest.raises(BuildError) as raised:
        build_artifact(changed, str(store), log=quiet)
    assert f"{root}/{RECORD_FILE} was edited by hand or damaged" in str(raised.value)
    assert str(raised.value).endswith(
        f"and this spec gives {fingerprint(changed)}: delete {root} and build again"
    )

    # A dependency's fingerprint edited inside its dependent's record (deps are fingerprinted).
    _edit_record(store, "a", fingerprint=true_a, config=_with_content(root, "one"))
    top_record = json.loads((store / "top" / "2026.01.01" / RECORD_FILE).read_text())
    top_record["deps"]["a"]["fingerprint"] = forged
    _edit_record(store, "top", deps=top_record["deps"])
    with pytest.raises(BuildError, match=r"top/2026\.01\.01/_record\.json was edited by hand"):
        build_artifact(parse(top), str(store), log=quiet)

    # Restored by hand: reused again, nothing rebuilt.
    top_record["deps"]["a"]["fingerprint"] = true_a
    _edit_record(store, "top", deps=top_record["deps"])
    assert build_artifact(parse(top), str(store), log=quiet).reused == built.built
    assert calls_of(calls) == ["a@2026.01.01", "top@2026.01.01"]


def test_calendar_version_never_depends_on_a_dev_one(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    dev = node("data", calls, version="smoke-dev")
    top = parse(node("model", calls, version="2026.01.01", deps={"data": dev}))
    with pytest.raises(BuildError) as raised:
        build_artifact(top, str(tmp_path / "store"), log=quiet)
    assert (
        "model.deps.data: model@2026.01.01 has a calendar version but depends on "
        "data@smoke-dev, a dev version that changes on every build; give data a calendar "
        "version, or make model a dev version too"
    ) in str(raised.value)
    assert calls_of(calls) == []


def test_dev_nodes_rebuild_every_time_but_once_per_invocation(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    store = str(tmp_path / "store")
    shared = node("shared", calls, version="dev")
    left = node("left", calls, version="dev", deps={"x": shared})
    right = node("right", calls, version="dev", deps={"x": shared})
    top = parse(node("top", calls, version="dev", deps={"l": left, "r": right}))
    build_artifact(top, store, log=quiet)
    assert Counter(calls_of(calls)) == {"shared@dev": 1, "left@dev": 1, "right@dev": 1,
                                        "top@dev": 1}
    build_artifact(top, store, log=quiet)
    assert Counter(calls_of(calls)) == {"shared@dev": 2, "left@dev": 2, "right@dev": 2,
                                        "top@dev": 2}


def test_force_rebuilds_up_to_date_nodes(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    artifact = parse(diamond(calls))
    build_artifact(artifact, str(tmp_path / "store"), log=quiet)
    result = build_artifact(artifact, str(tmp_path / "store"), force=True, log=quiet)
    assert len(calls_of(calls)) == 8
    assert result.reused == []


def test_failed_build_leaves_no_record_and_no_staging(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    broken = parse(node("a", calls, builder=helpers.builder_ref(helpers.FailingBuilder)))
    with pytest.raises(BuildError) as raised:
        build_artifact(broken, str(tmp_path / "store"), log=quiet)
    assert str(raised.value) == (
        f"building a@2026.01.01 with {helpers.builder_ref(helpers.FailingBuilder)} failed: "
        "RuntimeError: the builder broke halfway"
    )
    assert sorted(p.name for p in (tmp_path / "store" / "a").iterdir()) == [".2026.01.01.lock"]


def test_a_builder_that_writes_nothing_is_refused(tmp_path: Path) -> None:
    empty = parse(node("a", tmp_path / "calls",
                       builder=helpers.builder_ref(helpers.EmptyBuilder)))
    with pytest.raises(BuildError, match=r"wrote no files for a@2026\.01\.01"):
        build_artifact(empty, str(tmp_path / "store"), log=quiet)


def test_progress_lines_name_each_node(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    artifact = parse(node("top", calls, deps={"in": node("leaf", calls)}))
    lines: list[str] = []
    build_artifact(artifact, str(tmp_path / "store"), log=lines.append)
    build_artifact(artifact, str(tmp_path / "store"), log=lines.append)
    builder = helpers.builder_ref(helpers.CountingBuilder)
    assert lines[0] == f"building leaf@2026.01.01 with {builder}..."
    assert lines[2] == f"building top@2026.01.01 with {builder}... (deps: in=leaf@2026.01.01)"
    assert lines[1].startswith("built leaf@2026.01.01 in ")
    leaf_fp = fingerprint(parse(node("leaf", calls))).split(":")[1][:8]
    assert lines[5].startswith(f"leaf@2026.01.01 up to date (sha256:{leaf_fp}), 2 file(s)")


def _run_build(
    artifact: dict, store: Path, tmp_path: Path, log: Path, *flags: str
) -> subprocess.Popen:
    spec = tmp_path / f"spec-{time.monotonic_ns()}.json"
    spec.write_text(json.dumps(artifact))
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2] / "src"),
                                          str(helpers.import_root())])}
    return subprocess.Popen(
        [sys.executable, "-m", helpers.__name__, str(spec), str(store), *flags],
        stdout=open(log, "w"), stderr=subprocess.STDOUT, env=env,
    )


def _wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_build_killed_mid_way_leaves_no_record_and_the_next_build_succeeds(
    tmp_path: Path,
) -> None:
    calls, hold, started = tmp_path / "calls", tmp_path / "hold", tmp_path / "started"
    store = tmp_path / "store"
    hold.touch()
    artifact = node("a", calls, hold=str(hold), started=str(started))
    process = _run_build(artifact, store, tmp_path, tmp_path / "killed.log")
    _wait_for(started.exists, "the build to start")
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    leftovers = sorted(p.name for p in (store / "a").iterdir() if p.name.startswith(".staging"))
    assert len(leftovers) == 1 and leftovers[0].startswith(".staging-2026.01.01-")
    assert ArtifactStore(str(store)).read_record("a", "2026.01.01") is None
    assert not (store / "a" / "2026.01.01" / RECORD_FILE).exists()

    hold.unlink()
    lines: list[str] = []
    result = build_artifact(parse(artifact), str(store), log=lines.append)
    assert result.built == ["a@2026.01.01"]
    assert f"a@2026.01.01: removed {store / 'a' / leftovers[0]} (left by an interrupted build)" \
        in lines
    assert calls_of(calls) == ["a@2026.01.01", "a@2026.01.01"]
    assert sorted(p.name for p in (store / "a").iterdir()) == [".2026.01.01.lock", "2026.01.01"]
    assert (result.local_path / "done.txt").read_text() == "done\n"


def test_a_staging_folder_left_beside_an_up_to_date_artifact_goes_when_it_is_reused(
    tmp_path: Path,
) -> None:
    calls, hold, started = tmp_path / "calls", tmp_path / "hold", tmp_path / "started"
    store = tmp_path / "store"
    artifact = node("a", calls, hold=str(hold), started=str(started))
    build_artifact(parse(artifact), str(store), log=quiet)
    # A --force rebuild killed mid-way: the built artifact keeps its record, the staging stays.
    started.unlink()
    hold.touch()
    process = _run_build(artifact, store, tmp_path, tmp_path / "killed.log", "--force")
    _wait_for(started.exists, "the forced rebuild to start")
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    leftovers = [p.name for p in (store / "a").iterdir() if p.name.startswith(".staging")]
    assert len(leftovers) == 1

    lines: list[str] = []
    result = build_artifact(parse(artifact), str(store), log=lines.append)
    assert result.reused == ["a@2026.01.01"]
    assert lines[0] == (
        f"a@2026.01.01: removed {store / 'a' / leftovers[0]} (left by an interrupted build)"
    )
    assert sorted(p.name for p in (store / "a").iterdir()) == [".2026.01.01.lock", "2026.01.01"]
    assert calls_of(calls) == ["a@2026.01.01", "a@2026.01.01"]


def test_two_processes_building_one_identity_build_it_once(tmp_path: Path) -> None:
    calls, hold, started = tmp_path / "calls", tmp_path / "hold", tmp_path / "started"
    store = tmp_path / "store"
    hold.touch()
    artifact = node("a", calls, hold=str(hold), started=str(started))
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = _run_build(artifact, store, tmp_path, first_log)
    _wait_for(started.exists, "the first build to start")
    second = _run_build(artifact, store, tmp_path, second_log)
    _wait_for(lambda: "waiting for another process" in second_log.read_text(),
              "the second build to wait for the lock")
    hold.unlink()
    assert first.wait(timeout=60) == 0
    assert second.wait(timeout=60) == 0
    assert calls_of(calls) == ["a@2026.01.01"]
    second_output = second_log.read_text()
    assert "a@2026.01.01: waiting for another process that is building it" in second_output
    assert "a@2026.01.01 up to date (" in second_output
    assert "building a@2026.01.01" not in second_output


def test_materialize_builds_every_slot_of_a_run_once(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    spec = worked_example("colocated-1x8")
    model = node("policy", calls, kind="model", content="weights")
    spec["model"] = spec["tokenizer"] = model
    spec["train_data"] = node("train", calls)
    spec["eval_data"] = node("eval", calls)
    spec["execution"]["store_prefix"] = str(tmp_path / "store")
    paths = materialize(parse_spec(spec), log=quiet)
    assert paths == {
        "model": tmp_path / "store" / "policy" / "2026.01.01",
        "tokenizer": tmp_path / "store" / "policy" / "2026.01.01",
        "train_data": tmp_path / "store" / "train" / "2026.01.01",
        "eval_data": tmp_path / "store" / "eval" / "2026.01.01",
    }
    assert Counter(calls_of(calls)) == {"policy@2026.01.01": 1, "train@2026.01.01": 1,
                                        "eval@2026.01.01": 1}
    materialize(parse_spec(spec), log=quiet)
    assert len(calls_of(calls)) == 3


def test_materialize_refuses_one_identity_with_two_contents(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    spec = worked_example("colocated-1x8")
    spec["model"] = node("policy", calls, kind="model", content="one")
    spec["tokenizer"] = node("policy", calls, kind="model", content="two")
    spec["train_data"] = node("train", calls)
    spec["eval_data"] = None
    with pytest.raises(BuildError, match=r"tokenizer: policy@2026\.01\.01 appears twice with "
                                         r"different content \(model is sha256:"):
        materialize(parse_spec(spec), str(tmp_path / "store"), log=quiet)
    assert calls_of(calls) == []
