"""The digest cache: unchanged files are not read again; changed ones are always caught."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from builders.helpers import node, parse
from rlaunch.builders import build_artifact
from rlaunch.store import ArtifactStore, StoreError, digests, scan_payload
from rlaunch.store.digests import DigestCache, FileIdentity, cache_file
from rlaunch.store.records import ArtifactRecord, FileEntry, verify_local

# Shortened from 2 s so tests wait 0.1 s for an entry to become trusted (coarse kernel
# timestamps tick every few ms, so 50 ms still separates a write from a later one).
RACY = 0.05


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(digests, "RACY_SECONDS", RACY)


def quiet(message: str) -> None:
    pass


def settle() -> None:
    time.sleep(2 * RACY)


def payload(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "weights.bin").write_bytes(bytes(range(256)) * 64)
    (root / "sub").mkdir()
    (root / "sub" / "config.json").write_text('{"layers": 2}\n')
    settle()
    return root


def record_of(root: Path) -> ArtifactRecord:
    files = scan_payload(root)
    return ArtifactRecord.model_validate({
        "schema_version": 1, "identity": "m@2026.01.01", "name": "m", "version": "2026.01.01",
        "fingerprint": "sha256:" + "0" * 64, "kind": "model", "type": "built", "deps": {},
        "config": {}, "files": [entry.model_dump() for entry in files],
        "provenance": {"builder": "b", "builder_class": "m:B", "rlaunch_version": "0",
                       "launcher_commit": None, "built_at": "2026-01-01T00:00:00Z",
                       "build_seconds": 0.0},
    })


def verified_payload(root: Path) -> tuple[Path, ArtifactRecord]:
    """A payload, its record, and trusted cache entries for all its files."""
    payload(root)
    record = record_of(root)
    settle()
    verify_local(root, record)
    return root, record


def hashed_on_read(root: Path) -> list[str]:
    cache = DigestCache(root)
    for relative in ("sub/config.json", "weights.bin"):
        cache.sha256(relative)
    cache.save()
    return cache.hashed


def flip_one_byte_keeping_size_and_mtime(path: Path) -> os.stat_result:
    before = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(100)
        value = handle.read(1)[0]
        handle.seek(100)
        handle.write(bytes([value ^ 0xFF]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    return before


def test_a_file_is_hashed_once_and_then_only_stat_ed(tmp_path: Path) -> None:
    root = payload(tmp_path / "m")
    assert hashed_on_read(root) == ["sub/config.json", "weights.bin"]
    assert hashed_on_read(root) == []
    assert DigestCache(root).remembered() == {
        entry.path: entry.sha256 for entry in scan_payload(root)
    }


def test_an_entry_younger_than_the_racy_window_is_hashed_again(tmp_path: Path) -> None:
    root = tmp_path / "m"
    root.mkdir()
    (root / "weights.bin").write_bytes(b"x" * 1000)
    first = DigestCache(root, racy_seconds=60)
    first.sha256("weights.bin")
    first.save()
    again = DigestCache(root, racy_seconds=60)
    again.sha256("weights.bin")
    assert again.hashed == ["weights.bin"]


def test_flipping_a_byte_without_changing_size_or_mtime_is_caught_by_the_ctime(
    tmp_path: Path,
) -> None:
    root, record = verified_payload(tmp_path / "m")
    assert hashed_on_read(root) == []
    before = flip_one_byte_keeping_size_and_mtime(root / "weights.bin")
    after = (root / "weights.bin").stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size, before.st_mtime_ns, before.st_ino
    )
    assert after.st_ctime_ns != before.st_ctime_ns
    expected = next(e.sha256 for e in record.files if e.path == "weights.bin")
    with pytest.raises(StoreError) as raised:
        verify_local(root, record)
    actual = DigestCache(root).sha256("weights.bin")
    assert str(raised.value) == (
        f"m@2026.01.01 at {root} does not match its record (weights.bin: sha256 "
        f"{actual[:16]}..., the record says {expected[:16]}...); the payload changed after it "
        f"was built: rebuild it with `./pants run <its built_artifact target> -- --force` "
        f"(or `rlaunch build FILE --force`)"
    )


def test_a_truncated_file_and_a_replaced_file_are_caught(tmp_path: Path) -> None:
    root, record = verified_payload(tmp_path / "m")
    config = root / "sub" / "config.json"
    stat = config.stat()
    replacement = tmp_path / "replacement.json"
    replacement.write_text('{"layers": 9}\n')  # same size, other bytes
    os.utime(replacement, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(replacement, config)
    with open(root / "weights.bin", "r+b") as handle:
        handle.truncate(10)
    with pytest.raises(StoreError) as raised:
        verify_local(root, record)
    assert "(sub/config.json: sha256 " in str(raised.value)
    assert "weights.bin: 10 bytes, the record says 16384" in str(raised.value)


def tamper(root: Path, change: dict[str, int]) -> None:
    """Edit every entry of the cache file of `root` and keep its MAC line as it was."""
    path = cache_file(root.resolve(), digests.cache_home())
    mac, _, body = path.read_text().partition("\n")
    document = json.loads(body)
    for item in document["entries"].values():
        for index, value in change.items():
            item[index] = value
    path.write_text(f"{mac}\n{json.dumps(document)}")


def test_a_forged_entry_without_the_key_cannot_make_a_changed_file_look_intact(
    tmp_path: Path,
) -> None:
    root, record = verified_payload(tmp_path / "m")
    flip_one_byte_keeping_size_and_mtime(root / "weights.bin")
    # The entries now name the changed file's identity, read well after its last change, and
    # keep the old digest, as a bit flip or a hand edit might: the file's MAC no longer checks
    # out, so the files are read.
    changed = list(FileIdentity.of((root / "weights.bin").stat()))
    tamper(root, {**dict(enumerate(changed)), 5: changed[4] + 10**9})
    with pytest.raises(StoreError, match=r"\(weights.bin: sha256 [0-9a-f]{16}\.\.\., the record"):
        verify_local(root, record)


def test_an_unreadable_cache_file_counts_as_empty(tmp_path: Path) -> None:
    root = payload(tmp_path / "m")
    record = record_of(root)
    cache_file(root.resolve(), digests.cache_home()).write_text('{"schema": 1, "entr')
    verify_local(root, record)
    assert hashed_on_read(root) == []  # the verify rewrote it


def test_entries_of_another_directory_are_not_used(tmp_path: Path) -> None:
    root = payload(tmp_path / "m")
    record_of(root)
    settle()
    assert hashed_on_read(root) == []
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, copy_function=shutil.copy2)
    shutil.copyfile(cache_file(root.resolve()), cache_file(copy.resolve()))
    assert hashed_on_read(copy) == ["sub/config.json", "weights.bin"]


def test_full_hashes_every_file_and_catches_what_the_cache_was_told(tmp_path: Path) -> None:
    store = ArtifactStore(str(tmp_path / "store"))
    result = build_artifact(parse(node("data", tmp_path / "calls")), store, log=quiet)
    root = result.local_path
    settle()
    store.verify(result.record)
    # A change no identity shows (a clock set back can do it): forge a trusted entry that
    # says the changed file still has its recorded digest.
    done = root / "done.txt"
    done.write_text("dOne\n")
    settle()
    cache = DigestCache(root)
    cache.remember(
        "done.txt", FileIdentity.of(done.stat()), result.record.files[0].sha256, time.time_ns()
    )
    cache.save()
    store.verify(result.record)  # trusted: this is what the cache trusts
    with pytest.raises(StoreError, match=r"\(done.txt: sha256 [0-9a-f]{16}\.\.\., the record"):
        build_artifact(parse(node("data", tmp_path / "calls")), store, verify=True, log=quiet)


def test_a_published_build_keeps_the_digests_of_its_staging_folder(tmp_path: Path) -> None:
    store = ArtifactStore(str(tmp_path / "store"))
    result = build_artifact(parse(node("data", tmp_path / "calls")), store, log=quiet)
    root = result.local_path
    assert DigestCache(root).remembered() == {
        entry.path: entry.sha256 for entry in result.record.files
    }
    staging_caches = [
        path for path in digests.cache_home().glob("*.json")
        if json.loads(path.read_text().partition("\n")[2])["root"] != str(root)
    ]
    assert staging_caches == []


def test_the_cache_is_bypassed_when_its_folder_cannot_be_written(tmp_path: Path) -> None:
    root = payload(tmp_path / "m")
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would be")
    cache = DigestCache(root, state_dir=blocked / "digests")
    assert cache.sha256("weights.bin") == scan_payload(root)[1].sha256
    cache.save()
    assert DigestCache(root, state_dir=blocked / "digests").remembered() == {}


def test_scan_payload_lists_files_with_digests_of_their_bytes(tmp_path: Path) -> None:
    root = payload(tmp_path / "m")
    weights = bytes(range(256)) * 64
    assert scan_payload(root) == [
        FileEntry(path="sub/config.json", size=14,
                  sha256=hashlib.sha256(b'{"layers": 2}\n').hexdigest()),
        FileEntry(path="weights.bin", size=16384, sha256=hashlib.sha256(weights).hexdigest()),
    ]
    assert scan_payload(root) == scan_payload(root)  # the second time from the cache
