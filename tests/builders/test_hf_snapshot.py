"""hf_snapshot against a local Hub (tests/hubserver.py): the real huggingface_hub client talks
HTTP to 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubserver import hub_environment, serve_hub
from modelrepo import TINY_QWEN, model_files, parameter_count
from rlaunch.builders import BuildError, build_artifact
from rlaunch.spec.artifacts import HFDataset, HFModel

MODEL_COMMIT = "1" * 40
TOKENIZER_COMMIT = "2" * 40
DATASET_COMMIT = "3" * 40
PLAIN_DATASET_COMMIT = "4" * 40
# A dataset card's YAML header as the Hub writes it for a repo with two configurations.
CARD = b"""---
license: mit
configs:
- config_name: main
  data_files:
  - split: train
    path: main/train.parquet
- config_name: socratic
  data_files:
  - split: train
    path: socratic/train.parquet
---
# data
"""
CONFIG = {**TINY_QWEN, "num_attention_heads": 16, "num_key_value_heads": 4,
          "max_position_embeddings": 4096}
WEIGHTS = model_files(CONFIG)["model.safetensors"]
FACTS = {"num_attention_heads": 16, "num_key_value_heads": 4, "max_position_embeddings": 4096,
         "num_experts": None, "num_hidden_layers": 2, "hidden_size": 64,
         "intermediate_size": 160, "vocab_size": 96, "head_dim": None,
         "torch_dtype": "bfloat16", "num_parameters": parameter_count(CONFIG)}
REPOS: dict[tuple[str, str, str], dict[str, bytes]] = {
    ("models", "org/tiny", MODEL_COMMIT): {
        "config.json": json.dumps(CONFIG).encode(),
        "model.safetensors": WEIGHTS,
        "tokenizer.json": b'{"model": "old"}',
        "extra/notes.txt": b"nested file\n",
    },
    ("models", "org/tok", TOKENIZER_COMMIT): {
        "tokenizer.json": b'{"model": "new"}',
        "tokenizer_config.json": b"{}",
        "model.safetensors": b"not wanted" * 100,
    },
    ("datasets", "org/data", DATASET_COMMIT): {
        "main/train.parquet": b"PAR1 train rows",
        "socratic/train.parquet": b"PAR1 socratic rows",
        "README.md": CARD,
    },
    ("datasets", "org/plain", PLAIN_DATASET_COMMIT): {
        "train.jsonl": b"{}\n",
        "README.md": b"# no YAML header, so no configs listed\n",
    },
}


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str, str | None]]]:
    with serve_hub(REPOS) as (url, requests_seen):
        for key, value in hub_environment(url).items():
            monkeypatch.setenv(key, value)
        yield requests_seen


def quiet(message: str) -> None:
    pass


def model(**changes: object) -> HFModel:
    fields = {
        "type": "hf_model", "name": "tiny", "version": "2026.01.01", "repo_id": "org/tiny",
        "revision": MODEL_COMMIT, "tokenizer_repo_id": "org/tiny",
        "tokenizer_revision": MODEL_COMMIT,
        "facts": FACTS,
    }
    fields.update(changes)
    return HFModel.model_validate(fields)


def test_a_pinned_model_is_downloaded_verified_and_then_reused(hub, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    result = build_artifact(model(), store, log=quiet)
    root = tmp_path / "store" / "tiny" / "2026.01.01"
    assert result.local_path == root
    assert [entry.path for entry in result.record.files] == [
        "config.json", "extra/notes.txt", "model.safetensors", "tokenizer.json"
    ]
    assert (root / "model.safetensors").read_bytes() == WEIGHTS
    assert not (root / ".cache").exists()
    assert result.record.provenance.builder == "hf_snapshot"
    assert ("GET", f"/api/models/org/tiny/tree/{MODEL_COMMIT}", "Bearer hf_test_token") in hub
    assert ("GET", f"/org/tiny/resolve/{MODEL_COMMIT}/config.json",
            "Bearer hf_test_token") in hub
    requests_after_first = len(hub)
    again = build_artifact(model(), store, log=quiet)
    assert again.built == [] and len(hub) == requests_after_first


def test_an_unknown_revision_is_a_clear_error(hub, tmp_path: Path) -> None:
    missing = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(BuildError) as raised:
        build_artifact(model(revision=missing), str(tmp_path / "store"), log=quiet)
    assert str(raised.value).startswith(
        f"tiny@2026.01.01: revision {missing} does not exist in model repo org/tiny at "
        f"http://127.0.0.1:"
    )
    assert str(raised.value).endswith("; pin a commit sha from the repo's history")
    assert not (tmp_path / "store" / "tiny" / "2026.01.01").exists()


def test_a_facts_mismatch_names_the_field_and_both_values(hub, tmp_path: Path) -> None:
    wrong = model(facts={**FACTS, "num_attention_heads": 12, "max_position_embeddings": 32768})
    with pytest.raises(BuildError) as raised:
        build_artifact(wrong, str(tmp_path / "store"), log=quiet)
    message = str(raised.value)
    assert message.startswith("tiny@2026.01.01: the declared facts do not match the model:")
    source = f"config.json of org/tiny@{MODEL_COMMIT}"
    assert (f"  - facts.num_attention_heads: declared 12, but {source} has "
            f"num_attention_heads = 16") in message
    assert (f"  - facts.max_position_embeddings: declared 32768, but {source} has "
            f"max_position_embeddings = 4096") in message
    assert "num_key_value_heads" not in message
    assert not (tmp_path / "store" / "tiny" / "2026.01.01").exists()


def test_a_tokenizer_pinned_elsewhere_is_fetched_into_tokenizer(hub, tmp_path: Path) -> None:
    artifact = model(tokenizer_repo_id="org/tok", tokenizer_revision=TOKENIZER_COMMIT)
    result = build_artifact(artifact, str(tmp_path / "store"), log=quiet)
    assert (result.local_path / "tokenizer" / "tokenizer.json").read_bytes() == b'{"model": "new"}'
    assert (result.local_path / "tokenizer" / "tokenizer_config.json").exists()
    assert not (result.local_path / "tokenizer" / "model.safetensors").exists()
    assert (result.local_path / "tokenizer.json").read_bytes() == b'{"model": "old"}'


def dataset(**changes: object) -> HFDataset:
    fields = {
        "type": "hf_dataset", "name": "data", "version": "2026.01.01", "repo_id": "org/data",
        "revision": DATASET_COMMIT, "config": "main", "split": "train", "rows": None,
    }
    fields.update(changes)
    return HFDataset.model_validate(fields)


def test_a_dataset_is_downloaded_from_the_dataset_routes(hub, tmp_path: Path) -> None:
    result = build_artifact(dataset(), str(tmp_path / "store"), log=quiet)
    assert (result.local_path / "main" / "train.parquet").read_bytes() == b"PAR1 train rows"
    # The config picks a subset to load, not what is downloaded: the whole repo is there.
    assert (result.local_path / "socratic" / "train.parquet").exists()
    assert ("HEAD", f"/datasets/org/data/resolve/{DATASET_COMMIT}/README.md",
            "Bearer hf_test_token") in hub
    assert result.record.config == {
        "type": "hf_dataset", "repo_id": "org/data", "revision": DATASET_COMMIT,
        "config": "main", "split": "train", "rows": None,
    }


def test_a_config_the_card_does_not_list_is_refused(hub, tmp_path: Path) -> None:
    with pytest.raises(BuildError) as raised:
        build_artifact(dataset(config="default"), str(tmp_path / "store"), log=quiet)
    assert str(raised.value) == (
        f"data@2026.01.01: config 'default' is not a configuration of org/data@{DATASET_COMMIT}; "
        f"its README.md lists 'main', 'socratic': set `config` to one of them"
    )
    assert not (tmp_path / "store" / "data" / "2026.01.01").exists()


def test_a_null_config_or_a_card_without_configs_is_not_checked(hub, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    assert build_artifact(dataset(config=None), store, log=quiet).record.config["config"] is None
    plain = dataset(name="plain", repo_id="org/plain", revision=PLAIN_DATASET_COMMIT,
                    config="anything")
    result = build_artifact(plain, store, log=quiet)
    assert (result.local_path / "train.jsonl").read_bytes() == b"{}\n"


def test_a_branch_name_is_refused_before_any_request(hub, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="revision 'main' of org/tiny is not a 40-hex commit"):
        build_artifact(model(revision="main"), str(tmp_path / "store"), log=quiet)
    assert hub == []



def test_a_missing_repo_says_to_check_the_token(hub, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=r"^tiny@2026\.01\.01: model repo org/none at "
                                         r"http://127\.0\.0\.1:\d+ was not found, or it is "
                                         r"private and HF_TOKEN is not set"):
        build_artifact(model(repo_id="org/none"), str(tmp_path / "store"), log=quiet)

