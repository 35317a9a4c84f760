"""Declared model facts against a config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlaunch.builders import BuildError
from rlaunch.builders.facts import facts_problems, verify_model_facts
from rlaunch.spec.artifacts import HFModel, ModelFacts

FACTS = ModelFacts(num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=128,
                   num_experts=None)


def test_plain_attention_configs_may_omit_kv_heads() -> None:
    assert facts_problems(FACTS, {"num_attention_heads": 8, "max_position_embeddings": 128},
                          "config.json") == []


def test_experts_are_checked_under_any_of_their_names() -> None:
    config = {"num_attention_heads": 8, "max_position_embeddings": 128, "num_local_experts": 8}
    assert facts_problems(FACTS, config, "config.json") == [
        "facts.num_experts: declared null, but config.json has 8 routed experts"
    ]


def test_multimodal_configs_are_read_from_text_config() -> None:
    config = {"text_config": {"num_attention_heads": 8, "num_key_value_heads": 8,
                              "max_position_embeddings": 128}}
    assert facts_problems(FACTS, config, "config.json") == []


def test_a_missing_field_is_named() -> None:
    assert facts_problems(FACTS, {"num_attention_heads": 8}, "config.json") == [
        (
            "facts.max_position_embeddings: declared 128, but config.json has no "
            "max_position_embeddings"
        )
    ]


def test_verify_reads_config_json_and_lists_every_mismatch(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(
        {"num_attention_heads": 6, "num_key_value_heads": 2, "max_position_embeddings": 128}))
    artifact = HFModel.model_validate({
        "type": "hf_model", "name": "m", "version": "dev", "repo_id": "o/m", "revision": "a" * 40,
        "tokenizer_repo_id": "o/m", "tokenizer_revision": "a" * 40, "facts": FACTS.model_dump(),
    })
    with pytest.raises(BuildError) as raised:
        verify_model_facts(artifact, tmp_path, "o/m")
    assert str(raised.value) == (
        "m@dev: the declared facts do not match the model:\n"
        "  - facts.num_attention_heads: declared 8, but config.json of o/m has "
        "num_attention_heads = 6\n"
        "  - facts.num_key_value_heads: declared 8, but config.json of o/m has "
        "num_key_value_heads = 2\n"
        "  Fix the facts in the spec (or the pin, if it points at the wrong model)."
    )
