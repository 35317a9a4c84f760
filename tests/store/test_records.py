"""Build records: payload scans, the directory digest, verification messages."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rlaunch.store import RECORD_FILE, StoreError, directory_sha256, scan_payload
from rlaunch.store.records import ArtifactRecord, Provenance, parse_record, verify_local


def payload(root: Path) -> None:
    (root / "b").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "b" / "c.bin").write_bytes(b"\x00" * 10)
    (root / "B.txt").write_text("upper sorts first\n")
    (root / RECORD_FILE).write_text("{}")


def record_for(root: Path) -> ArtifactRecord:
    return ArtifactRecord(
        schema_version=1, identity="x@dev", name="x", version="dev", fingerprint="sha256:0",
        kind="dataset", type="built", deps={}, config={},
        provenance=Provenance(builder="b", builder_class="m:B", rlaunch_version="0",
                              launcher_commit=None, built_at="2026-01-01T00:00:00Z",
                              build_seconds=0.0),
        files=scan_payload(root),
    )


def test_scan_lists_every_file_but_the_record_sorted_by_bytes(tmp_path: Path) -> None:
    payload(tmp_path)
    assert [(e.path, e.size) for e in scan_payload(tmp_path)] == [
        ("B.txt", 18), ("a.txt", 6), ("b/c.bin", 10)
    ]


def test_the_directory_digest_is_the_documented_shell_pipeline(tmp_path: Path) -> None:
    payload(tmp_path)
    (tmp_path / RECORD_FILE).unlink()
    shell = subprocess.run(
        "find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum",
        shell=True, cwd=tmp_path, capture_output=True, text=True, check=True,
    )
    assert directory_sha256(tmp_path) == shell.stdout.split()[0]


def test_verification_names_each_changed_file(tmp_path: Path) -> None:
    payload(tmp_path)
    record = record_for(tmp_path)
    (tmp_path / "a.txt").write_text("ALPHA\n")
    (tmp_path / "b" / "c.bin").write_bytes(b"\x00" * 11)
    (tmp_path / "B.txt").unlink()
    with pytest.raises(StoreError) as raised:
        verify_local(tmp_path, record)
    message = str(raised.value)
    assert message.startswith(f"x@dev at {tmp_path} does not match its record (B.txt: missing; ")
    assert "a.txt: sha256 " in message and "b/c.bin: 11 bytes, the record says 10" in message
    assert message.endswith("rebuild it with `./pants run <its built_artifact target> -- --force` "
        "(or `rlaunch build FILE --force`)")


def test_a_damaged_record_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"^/x/_record.json: not a valid build record \(files: "):
        parse_record('{"schema_version": 1, "identity": "x@dev", "name": "x", "version": "dev",'
                     '"fingerprint": "f", "kind": "k", "type": "t", "deps": {}, "config": {},'
                     '"provenance": {"builder": "b", "builder_class": "c", "rlaunch_version": "0",'
                     '"launcher_commit": null, "built_at": "t", "build_seconds": 0}}',
                     "/x/_record.json")
