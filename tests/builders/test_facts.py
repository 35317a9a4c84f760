"""Declared model facts against a config.json and the safetensors files beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from modelrepo import TINY_QWEN, model_files, parameter_count
from rlaunch.builders import BuildError
from rlaunch.builders.facts import count_parameters, facts_problems, verify_model_facts
from rlaunch.spec.artifacts import HFModel, ModelFacts

CONFIG = {"num_attention_heads": 8, "num_key_value_heads": 8, "max_position_embeddings": 128,
          "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 256,
          "vocab_size": 100, "torch_dtype": "bfloat16"}
FACTS = ModelFacts(num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=128,
                   num_experts=None, num_hidden_layers=2, hidden_size=64,
                   intermediate_size=256, vocab_size=100, head_dim=None,
                   torch_dtype="bfloat16", num_parameters=1000)


def without(key: str) -> dict:
    return {name: value for name, value in CONFIG.items() if name != key}


def test_plain_attention_configs_may_omit_kv_heads() -> None:
    assert facts_problems(FACTS, without("num_key_value_heads"), "config.json") == []


def test_experts_are_checked_under_any_of_their_names() -> None:
    config = {**CONFIG, "num_local_experts": 8}
    assert facts_problems(FACTS, config, "config.json") == [
        "facts.num_experts: declared null, but config.json has 8 routed experts"
    ]


def test_multimodal_configs_are_read_from_text_config() -> None:
    assert facts_problems(FACTS, {"text_config": CONFIG}, "config.json") == []


def test_the_dtype_is_read_under_either_name_and_head_dim_only_where_the_config_has_it() -> None:
    config = {**without("torch_dtype"), "dtype": "float32", "head_dim": 8}
    assert facts_problems(FACTS, config, "config.json") == [
        'facts.torch_dtype: declared "bfloat16", but config.json has torch_dtype = "float32"',
        "facts.head_dim: declared null, but config.json has head_dim = 8",
    ]


def test_a_missing_field_is_named() -> None:
    assert facts_problems(FACTS, without("max_position_embeddings"), "config.json") == [
        "facts.max_position_embeddings: declared 128, but config.json has no "
        "max_position_embeddings"
    ]


def test_parameters_are_counted_from_every_safetensors_header(tmp_path: Path) -> None:
    for name, content in model_files(TINY_QWEN, shards=3).items():
        (tmp_path / name).write_bytes(content)
    assert count_parameters(tmp_path) == parameter_count(TINY_QWEN)
    assert count_parameters(tmp_path / "config.json") is None


def test_verify_reads_config_json_and_lists_every_mismatch(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(
        {**CONFIG, "num_attention_heads": 6, "num_key_value_heads": 2}))
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
        "  - facts.num_parameters: declared 1000, but o/m has no *.safetensors file to count\n"
        f"  Fix: `rlaunch pin o/m --revision {'a' * 40} --name m --version dev` prints the facts "
        "of this pin (or fix the pin, if it points at the wrong model)."
    )
