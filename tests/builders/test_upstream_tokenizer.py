"""LAUNCH002 on a run's export in SkyRL's layout (the model in `global_step_N/policy/`): the
launch compares the stage's tokenizer with the export's own tokenizer files, at the root of what
the stage reads; an export without tokenizer files is compared with the tokenizer the upstream
run trained with, as the store holds it (or built again). In a real store with the countdown
builders' files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.tokenizer_stages import (
    STAGE1,
    SWAPPED,
    finish_with_skyrl_export,
    parsed,
    second_stage,
    stage,
    swapped_finding,
)
from rlaunch.builders import materialize_artifacts
from rlaunch.builders.upstream_tokenizer import tokenizer_payload, upstream_tokenizer_payloads
from rlaunch.launch import LaunchRefused, Plan, materialize_inputs
from rlaunch.spec import fingerprint
from rlaunch.store import ArtifactStore


def plan(store: Path, tokenizer: str, characters: str | None = None) -> Plan:
    return Plan(parsed(second_stage(tokenizer, characters)), str(store), None, (), None)


def test_an_export_without_tokenizer_files_is_compared_with_its_runs_tokenizer_in_the_store(
    tmp_path: Path,
) -> None:
    upstream = parsed(stage(STAGE1))
    finish_with_skyrl_export(tmp_path, upstream, tokenizer_files=False)
    # The upstream's launch materialized its tokenizer: the stage's launch reads that one.
    materialize_artifacts({"tokenizer": upstream.tokenizer}, str(tmp_path), log=lambda _: None)
    said: list[str] = []
    materialize_inputs(plan(tmp_path, "chain-tokenizer-copy"), said.append)
    assert not [line for line in said if "LAUNCH00" in line]
    # Read as the store holds it: not built again.
    assert not [line for line in said if line.startswith("building chain-tokenizer@dev ")]
    folder = tmp_path / "chain-tokenizer" / "dev"
    payloads = upstream_tokenizer_payloads(plan(tmp_path, "chain-tokenizer-copy").spec,
                                           str(tmp_path),
                                           {"model": tmp_path / STAGE1 / "dev" / "export"},
                                           lambda _: None)
    assert payloads == {"model": folder}


def test_a_mismatch_with_the_upstreams_tokenizer_refuses_the_launch_naming_it(
    tmp_path: Path,
) -> None:
    upstream = parsed(stage(STAGE1))
    finish_with_skyrl_export(tmp_path, upstream, tokenizer_files=False)
    bad = plan(tmp_path, "chain-tokenizer-swapped", SWAPPED)
    said: list[str] = []
    with pytest.raises(LaunchRefused) as refused:
        materialize_inputs(bad, said.append)
    # Not in the store yet (nothing launched the upstream here): built as its launch built it.
    assert "building chain-tokenizer@dev with char_tokenizer..." in said
    assert str(refused.value).splitlines() == [
        "the materialized inputs (tok-stage2@dev): refused, 1 error, 0 warnings",
        *swapped_finding(),
    ]


def test_an_upstream_tokenizer_of_the_runs_own_identity_is_never_built_over_it(
    tmp_path: Path,
) -> None:
    """Stage 2 pins `chain-tokenizer@dev` with another config: the store holds one fingerprint
    of a dev identity, the stage's own; building stage 1's would replace the stage's input."""
    spec = parsed(second_stage("chain-tokenizer", SWAPPED))
    materialize_artifacts({"tokenizer": spec.tokenizer}, str(tmp_path), log=lambda _: None)
    store = ArtifactStore(str(tmp_path))
    upstream_tokenizer = spec.model.run.tokenizer
    assert tokenizer_payload(store, upstream_tokenizer, lambda _: None, spec) is None
    record = store.read_record("chain-tokenizer", "dev")
    assert record is not None and record.fingerprint == fingerprint(spec.tokenizer)


def test_a_skyrl_export_is_compared_by_the_tokenizer_files_it_holds(tmp_path: Path) -> None:
    """SkyRL saves the tokenizer with the weights in `global_step_N/policy/`; the stage reads
    that folder, so its tokenizer files are at the root of the input, and nothing else is built
    or read to compare them."""
    upstream = parsed(stage(STAGE1))
    policy = finish_with_skyrl_export(tmp_path, upstream)
    said: list[str] = []
    materialize_inputs(plan(tmp_path, "chain-tokenizer-copy"), said.append)
    assert not [line for line in said if "LAUNCH00" in line]
    with pytest.raises(LaunchRefused) as refused:
        materialize_inputs(plan(tmp_path, "chain-tokenizer-swapped", SWAPPED), said.append)
    assert not [line for line in said if line.startswith("building chain-tokenizer@dev ")]
    assert str(refused.value).splitlines()[1:] == swapped_finding()
    payloads = upstream_tokenizer_payloads(plan(tmp_path, "chain-tokenizer-copy").spec,
                                           str(tmp_path), {"model": policy}, lambda _: None)
    assert payloads == {}
