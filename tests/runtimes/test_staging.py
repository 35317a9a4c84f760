"""Staging inputs from the store onto node-local disk, against moto's S3 server (and the GCS
emulator): cold copies every file and verifies it, warm copies nothing, a staged folder is
complete or absent, and each failure names the input and the fix."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from builders.helpers import node, parse
from objectstores import clear_fsspec_instances, free_port
from rlaunch.builders import build_artifact
from rlaunch.runtimes.staging import (
    StageInput,
    StagingError,
    cached_folder,
    local_overrides,
    rewrites,
    stage_inputs,
)
from rlaunch.store import digests
from rlaunch.store.digests import DigestCache


def quiet(message: str) -> None:
    pass


def built(store: str, tmp_path: Path, name: str = "data", content: str = "v1") -> StageInput:
    result = build_artifact(parse(node(name, tmp_path / "calls", content=content)), store,
                            log=quiet)
    return StageInput("train_data", result.record.identity, result.fingerprint, result.uri)


def test_cold_copies_and_verifies_warm_copies_nothing(object_store: str, tmp_path: Path) -> None:
    item = built(object_store, tmp_path)
    cache = tmp_path / "node-cache"
    lines: list[str] = []
    [cold] = stage_inputs([item], cache, say=lines.append)
    folder = cached_folder(cache, item)
    assert cold.path == str(folder) and cold.files_copied == 2 and cold.bytes_copied > 0
    assert sorted(p.name for p in folder.iterdir()) == ["_record.json", "done.txt", "payload.txt"]
    assert folder.parent.name == "data" and folder.name.startswith("2026.01.01-")
    assert lines[0].startswith("staging train_data: data@2026.01.01 copied 2 files, ")
    # Nothing half-written is left beside it.
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]
    lines.clear()
    [warm] = stage_inputs([item], cache, say=lines.append)
    assert (warm.path, warm.bytes_copied, warm.files_copied) == (str(folder), 0, 0)
    assert lines == [f"staging train_data: data@2026.01.01 already in {folder} (0 bytes copied)"]


def test_a_warm_stage_reads_no_file_the_staging_hashed(
    s3_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(digests, "RACY_SECONDS", 0.0)  # every entry trusted at once
    item = built(s3_store, tmp_path)
    cache = tmp_path / "node-cache"
    stage_inputs([item], cache, say=quiet)
    folder = cached_folder(cache, item)
    staged = {path: hashlib.sha256((folder / path).read_bytes()).hexdigest()
              for path in ("done.txt", "payload.txt")}
    assert DigestCache(folder).remembered() == staged
    read: list[Path] = []

    def hashing(path: Path) -> tuple[str, digests.FileIdentity | None, int]:
        read.append(path)
        return real_sha256_of(path)

    real_sha256_of = digests.sha256_of
    monkeypatch.setattr(digests, "sha256_of", hashing)
    [warm] = stage_inputs([item], cache, say=quiet)
    assert (warm.bytes_copied, read) == (0, [])


def test_one_identity_in_two_slots_is_staged_once(s3_store: str, tmp_path: Path) -> None:
    item = built(s3_store, tmp_path)
    again = StageInput("eval_data", item.identity, item.fingerprint, item.uri)
    lines: list[str] = []
    train, evaluation = stage_inputs([item, again], tmp_path / "cache", say=lines.append)
    assert train.path == evaluation.path and evaluation.bytes_copied == 0 and len(lines) == 1


def test_a_damaged_local_copy_is_fetched_again(s3_store: str, tmp_path: Path) -> None:
    item = built(s3_store, tmp_path)
    cache = tmp_path / "cache"
    stage_inputs([item], cache, say=quiet)
    (cached_folder(cache, item) / "payload.txt").write_text("changed on the node")
    [again] = stage_inputs([item], cache, say=quiet)
    assert again.files_copied == 2
    assert (cached_folder(cache, item) / "payload.txt").read_text() != "changed on the node"


def test_a_corrupted_store_file_is_refused_and_nothing_is_staged(
    s3_server, s3_store: str, tmp_path: Path
) -> None:
    item = built(s3_store, tmp_path)
    remote, root = fsspec.core.url_to_fs(item.uri)
    remote.pipe_file(f"{root}/done.txt", b"dXne\n")  # same size, other bytes
    cache = tmp_path / "cache"
    with pytest.raises(StagingError) as raised:
        stage_inputs([item], cache, say=quiet)
    message = str(raised.value)
    assert message.startswith(f"inputs.train_data (data@2026.01.01): data@2026.01.01 at the copy "
                              f"of {item.uri} in ")
    assert "done.txt: sha256 " in message and message.endswith(
        "rebuild it with `./pants run <its built_artifact target> -- --force` "
        "(or `rlaunch build FILE --force`)")
    assert list((cache / "data").iterdir()) == []


def test_a_file_missing_from_the_store_names_it(s3_store: str, tmp_path: Path) -> None:
    item = built(s3_store, tmp_path)
    remote, root = fsspec.core.url_to_fs(item.uri)
    remote.rm_file(f"{root}/payload.txt")
    with pytest.raises(StagingError) as raised:
        stage_inputs([item], tmp_path / "cache", say=quiet)
    assert str(raised.value) == (
        f"inputs.train_data (data@2026.01.01): {item.uri}/payload.txt is listed in its record "
        "but missing from the store; rebuild the artifact (`rlaunch build FILE --force`)"
    )


def test_an_unbuilt_input_and_a_changed_fingerprint_are_refused(
    s3_store: str, tmp_path: Path
) -> None:
    item = built(s3_store, tmp_path)
    unbuilt = StageInput("model", "model@2026.01.01", "0" * 64, f"{s3_store}/model/2026.01.01")
    with pytest.raises(StagingError, match=r"^inputs.model \(model@2026.01.01\): "
                       rf"{unbuilt.uri}/_record.json does not exist, so the artifact is not "
                       "built in that store"):
        stage_inputs([unbuilt], tmp_path / "cache", say=quiet)
    stale = StageInput(item.slot, item.identity, "f" * 64, item.uri)
    with pytest.raises(StagingError, match=r"the store changed since the YAML was rendered"):
        stage_inputs([stale], tmp_path / "cache", say=quiet)


def test_a_fingerprint_edited_in_the_store_is_called_an_edit(
    s3_store: str, tmp_path: Path
) -> None:
    item = built(s3_store, tmp_path)
    remote, root = fsspec.core.url_to_fs(item.uri)
    record = json.loads(remote.cat_file(f"{root}/_record.json"))
    record["fingerprint"] = "sha256:" + "e" * 64
    remote.pipe_file(f"{root}/_record.json", json.dumps(record).encode())
    with pytest.raises(StagingError) as raised:
        stage_inputs([item], tmp_path / "cache", say=quiet)
    assert str(raised.value) == (
        f"inputs.train_data (data@2026.01.01): {item.uri}/_record.json was edited by hand or "
        f"damaged: it records data@2026.01.01 with fingerprint sha256:{'e' * 64}, but its own "
        f"config and deps give {item.fingerprint}; restore it, or delete the artifact's folder "
        "and build it again"
    )


def test_an_unreachable_store_is_a_clear_error(
    s3_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A port nothing listens on: the connection is refused at once.
    with s3_server.applied():
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
        clear_fsspec_instances()
        item = StageInput("model", "m@2026.01.01", "0" * 64, "s3://bucket/store/m/2026.01.01")
        with pytest.raises(StagingError) as raised:
            stage_inputs([item], tmp_path / "cache", say=quiet)
    message = str(raised.value)
    assert message.startswith("inputs.model (m@2026.01.01): cannot read "
                              "s3://bucket/store/m/2026.01.01/_record.json: the store is "
                              "unreachable from this node (")
    assert message.endswith("check the store's address and credentials in the job's environment")


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs: a node cache without space (needs root to mount)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_node_cache_without_space_is_refused_before_copying(
    s3_store: str, tmp_path: Path, tiny_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    item = built(s3_store, tmp_path)
    monkeypatch.setenv("RLAUNCH_NODE_CACHE", str(tiny_disk))
    with pytest.raises(StagingError) as raised:
        stage_inputs([item], say=quiet)
    assert str(raised.value).startswith(
        f"inputs.train_data (data@2026.01.01): the node cache {tiny_disk / 'data'} has 1.0 MB "
        "free, staging needs 0.0 MB (+64 MiB margin); free space there or point "
        "RLAUNCH_NODE_CACHE at a larger local disk")
    assert os.listdir(tiny_disk / "data") == []


def test_store_paths_are_rewritten_to_the_staged_folders(s3_store: str, tmp_path: Path) -> None:
    item = built(s3_store, tmp_path)
    [staged] = stage_inputs([item], tmp_path / "cache", say=quiet)
    tree = {"data": {"train_data": [f"{item.uri}/prompts.parquet"]},
            "trainer": {"policy": {"model": {"path": item.uri}},
                        "ckpt_path": f"{s3_store}/run/dev/checkpoints"}}
    local = local_overrides(tree, [staged])
    assert local == {"data": {"train_data": [f"{staged.path}/prompts.parquet"]},
                     "trainer": {"policy": {"model": {"path": staged.path}},
                                 "ckpt_path": f"{s3_store}/run/dev/checkpoints"}}
    assert rewrites(tree, local) == [
        f"data.train_data: ['{item.uri}/prompts.parquet'] -> ['{staged.path}/prompts.parquet']",
        f"trainer.policy.model.path: {item.uri} -> {staged.path}",
    ]
