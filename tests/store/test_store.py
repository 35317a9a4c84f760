"""The artifact store: layout, records written last, leftovers, object-store prefixes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fsspec
import pytest

from builders.helpers import calls_of, node, parse
from rlaunch.builders import build_artifact
from rlaunch.store import RECORD_FILE, ArtifactStore, StoreError


def quiet(message: str) -> None:
    pass


def test_the_default_prefix_is_rlaunch_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLAUNCH_STORE", str(tmp_path / "configured"))
    assert ArtifactStore().prefix == str(tmp_path / "configured")
    assert ArtifactStore(str(tmp_path / "explicit")).prefix == str(tmp_path / "explicit")


def test_an_artifact_lives_at_prefix_name_version_with_its_record(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    result = build_artifact(parse(node("data", calls)), str(tmp_path / "store"), log=quiet)
    root = tmp_path / "store" / "data" / "2026.01.01"
    assert result.uri == str(root)
    assert sorted(p.name for p in root.iterdir()) == [RECORD_FILE, "done.txt", "payload.txt"]
    record = json.loads((root / RECORD_FILE).read_text())
    assert record["identity"] == "data@2026.01.01"
    assert record["fingerprint"] == result.fingerprint
    assert [f["path"] for f in record["files"]] == ["done.txt", "payload.txt"]
    assert ArtifactStore(str(tmp_path / "store")).read_record("data", "2026.01.01") == result.record


def test_a_payload_without_a_record_is_not_built(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    root = tmp_path / "store" / "data" / "2026.01.01"
    root.mkdir(parents=True)
    (root / "payload.txt").write_text("half-published")
    store = ArtifactStore(str(tmp_path / "store"))
    assert store.read_record("data", "2026.01.01") is None
    lines: list[str] = []
    build_artifact(parse(node("data", calls)), store, log=lines.append)
    assert calls_of(calls) == ["data@2026.01.01"]
    assert f"data@2026.01.01: removed {root} (left by an interrupted build)" in lines
    assert store.read_record("data", "2026.01.01") is not None


def test_a_changed_payload_is_reported_on_reuse(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    artifact = parse(node("data", calls))
    build_artifact(artifact, str(tmp_path / "store"), log=quiet)
    (tmp_path / "store" / "data" / "2026.01.01" / "done.txt").write_text("tampered")
    with pytest.raises(StoreError, match=r"done.txt: 8 bytes, the record says 5"):
        build_artifact(artifact, str(tmp_path / "store"), log=quiet)
    build_artifact(artifact, str(tmp_path / "store"), force=True, log=quiet)
    assert len(calls_of(calls)) == 2


def test_a_dev_rebuild_replaces_the_payload_and_leaves_nothing_behind(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    build_artifact(parse(node("data", calls, version="dev", content="one")),
                   str(tmp_path / "store"), log=quiet)
    result = build_artifact(parse(node("data", calls, version="dev", content="two")),
                            str(tmp_path / "store"), log=quiet)
    assert json.loads((result.local_path / "payload.txt").read_text())["content"] == "two"
    assert sorted(p.name for p in (tmp_path / "store" / "data").iterdir()) == [".dev.lock", "dev"]


def test_leftovers_of_other_versions_are_kept(tmp_path: Path) -> None:
    store = ArtifactStore(str(tmp_path))
    mine = store.new_staging("data", "2026.01.01")
    other = store.new_staging("data", "2026.01.01.1")
    assert mine.name.startswith(".staging-2026.01.01-")
    assert store.clean_leftovers("data", "2026.01.01") == [str(mine)]
    assert other.exists() and not mine.exists()


def test_names_that_are_not_path_segments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"artifact name '\.\./x' cannot be a store path segment"):
        ArtifactStore(str(tmp_path)).uri("../x", "dev")


def test_an_object_store_prefix_publishes_the_record_last_and_copies_locally(
    object_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against a real server (moto's S3, the GCS emulator) through s3fs / gcsfs."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    remote, root = fsspec.core.url_to_fs(object_store)
    calls = tmp_path / "calls"
    artifact = parse(node("top", calls, deps={"in": node("leaf", calls)}))
    first = build_artifact(artifact, object_store, log=quiet)
    assert first.uri == f"{object_store}/top/2026.01.01"
    assert remote.cat_file(f"{root}/top/2026.01.01/_record.json").decode() == (
        first.record.to_json()
    )
    assert first.local_path.is_relative_to(tmp_path / "cache" / "rlaunch" / "remote")
    assert json.loads((first.local_path / "payload.txt").read_text())["in"]
    second = build_artifact(artifact, object_store, log=quiet)
    assert second.built == [] and len(calls_of(calls)) == 2
    # A fresh machine: nothing cached, so the payload is downloaded and verified.
    shutil.rmtree(tmp_path / "cache")
    store = ArtifactStore(object_store)
    record = store.read_record("top", "2026.01.01")
    assert record == first.record
    downloaded = store.local_path(record)
    assert downloaded.is_relative_to(tmp_path / "cache" / "rlaunch" / "remote")
    assert (downloaded / "payload.txt").read_bytes() == remote.cat_file(
        f"{root}/top/2026.01.01/payload.txt"
    )
    remote.pipe_file(f"{root}/leaf/2026.01.01/done.txt", b"truncated!")
    with pytest.raises(StoreError, match=r"done.txt: 10 bytes, the record says 5"):
        build_artifact(artifact, object_store, log=quiet)
