"""adopt: an existing file or directory registered by sha256 and copied into the store."""

from __future__ import annotations

import hashlib
from pathlib import Path

import fsspec
import pytest

from modelrepo import TINY_QWEN, model_files, parameter_count
from rlaunch.builders import BuildError, build_artifact
from rlaunch.spec.artifacts import AdoptedArtifact
from rlaunch.store import directory_sha256


def quiet(message: str) -> None:
    pass


def adopted(
    uri: str, sha256: str, kind: str = "dataset", facts: dict | None = None
) -> AdoptedArtifact:
    return AdoptedArtifact.model_validate({
        "type": "adopted", "name": "thing", "version": "2026.01.01", "kind": kind, "uri": uri,
        "sha256": sha256, "facts": facts, "rows": None,
    })


def test_a_file_is_copied_under_its_name_after_its_sha256_matches(tmp_path: Path) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_bytes(b'{"a": 1}\n')
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    result = build_artifact(adopted(f"file://{source}", f"sha256:{digest}"),
                            str(tmp_path / "store"), log=quiet)
    assert (result.local_path / "rows.jsonl").read_bytes() == b'{"a": 1}\n'
    assert [entry.path for entry in result.record.files] == ["rows.jsonl"]
    assert result.record.config["uri"] == f"file://{source}"


def test_a_directory_is_identified_by_its_manifest(tmp_path: Path) -> None:
    source = tmp_path / "model"
    (source / "sub").mkdir(parents=True)
    for name, content in model_files(TINY_QWEN).items():
        (source / name).write_bytes(content)
    (source / "sub" / "weights.bin").write_bytes(b"\x01" * 100)
    manifest = "".join(
        f"{hashlib.sha256((source / name).read_bytes()).hexdigest()}  {name}\n"
        for name in ["config.json", "model.safetensors", "sub/weights.bin"]
    )
    digest = hashlib.sha256(manifest.encode()).hexdigest()
    assert directory_sha256(source) == digest
    facts = {"num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 2048,
             "num_experts": None, "num_hidden_layers": 2, "hidden_size": 64,
             "intermediate_size": 160, "vocab_size": 96, "head_dim": None,
             "torch_dtype": "bfloat16", "num_parameters": parameter_count(TINY_QWEN)}
    result = build_artifact(adopted(str(source), digest, kind="model", facts=facts),
                            str(tmp_path / "store"), log=quiet)
    assert (result.local_path / "sub" / "weights.bin").read_bytes() == b"\x01" * 100


def test_a_changed_object_is_refused_with_both_digests(tmp_path: Path) -> None:
    source = tmp_path / "rows.jsonl"
    source.write_bytes(b"changed\n")
    actual = hashlib.sha256(b"changed\n").hexdigest()
    declared = "0" * 64
    with pytest.raises(BuildError) as raised:
        build_artifact(adopted(str(source), declared), str(tmp_path / "store"), log=quiet)
    assert str(raised.value) == (
        f"thing@2026.01.01: {source} has sha256:{actual} (the sha256 of the file), but the spec "
        f"declares sha256:{declared}; the object changed, or the declared digest is wrong"
    )
    assert not (tmp_path / "store" / "thing" / "2026.01.01").exists()


def test_an_object_store_uri_is_adopted_through_fsspec(tmp_path: Path) -> None:
    memory = fsspec.filesystem("memory")
    memory.pipe_file("/bucket/adopt-test/data.bin", b"remote bytes")
    digest = hashlib.sha256(b"remote bytes").hexdigest()
    try:
        result = build_artifact(adopted("memory://bucket/adopt-test/data.bin", digest),
                                str(tmp_path / "store"), log=quiet)
    finally:
        memory.rm("/bucket/adopt-test", recursive=True)
    assert (result.local_path / "data.bin").read_bytes() == b"remote bytes"


def test_a_missing_uri_and_a_malformed_digest_are_named(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=r"uri /nonexistent/x does not exist \(nothing to adopt\)"):
        build_artifact(adopted("/nonexistent/x", "0" * 64), str(tmp_path / "s"), log=quiet)
    with pytest.raises(BuildError, match=r"sha256 'abc' is not a sha256 digest"):
        build_artifact(adopted("/nonexistent/x", "abc"), str(tmp_path / "s"), log=quiet)
