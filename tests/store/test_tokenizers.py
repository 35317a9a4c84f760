"""Reading a tokenizer's contents from its files, in the layouts the reader knows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlaunch.models.tokenizer import CharTokenizer
from rlaunch.store.tokenizers import (
    TokenizerFileError,
    compare,
    contents_key,
    read_payload_tokenizers,
    read_tokenizer,
    tokenizer_folder,
)


def test_the_character_tokenizer_is_read_with_its_specials(tmp_path: Path) -> None:
    CharTokenizer("ab").save(tmp_path)
    contents = read_tokenizer(tmp_path)
    assert contents.tokens == {0: "<pad>", 1: "<bos>", 2: "<eos>", 3: "a", 4: "b"}
    assert contents.special == {"bos_token": "<bos>", "eos_token": "<eos>",
                                "pad_token": "<pad>", "unk_token": None}
    assert (contents.size, contents.special_id("eos_token")) == (5, 2)


def test_a_slow_tokenizer_and_its_added_tokens_and_special_map(tmp_path: Path) -> None:
    (tmp_path / "vocab.json").write_text(json.dumps({"a": 0, "b": 1}))
    (tmp_path / "added_tokens.json").write_text(json.dumps({"<eos>": 2}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "b"}))
    # special_tokens_map.json wins over tokenizer_config.json, as in transformers.
    (tmp_path / "special_tokens_map.json").write_text(json.dumps(
        {"eos_token": {"content": "<eos>", "lstrip": False}}))
    contents = read_tokenizer(tmp_path)
    assert contents.tokens == {0: "a", 1: "b", 2: "<eos>"}
    assert contents.special["eos_token"] == "<eos>"
    assert contents.source == ("vocab.json + added_tokens.json + tokenizer_config.json + "
                               "special_tokens_map.json")


def test_an_unreadable_vocabulary_is_compared_by_its_bytes(tmp_path: Path) -> None:
    for name, payload in (("one", b"spm one"), ("same", b"spm one"), ("two", b"spm two")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tokenizer.model").write_bytes(payload)
    one, same, two = (read_tokenizer(tmp_path / name) for name in ("one", "same", "two"))
    assert compare(one, same).same
    assert compare(one, two).opaque == ["tokenizer.model"]


def test_an_extended_tokenizer_is_not_a_conflict(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    (tmp_path / "extended").mkdir()
    base = {"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}}, "added_tokens": []}
    extended = dict(base, added_tokens=[{"id": 2, "content": "<tool>", "special": True}])
    (tmp_path / "base" / "tokenizer.json").write_text(json.dumps(base))
    (tmp_path / "extended" / "tokenizer.json").write_text(json.dumps(extended))
    difference = compare(read_tokenizer(tmp_path / "extended"), read_tokenizer(tmp_path / "base"))
    assert difference.same and difference.shared_ids == 2


def test_a_file_of_another_shape_is_named(tmp_path: Path) -> None:
    (tmp_path / "tokenizer.json").write_text('{"model": "old"}')
    with pytest.raises(TokenizerFileError) as raised:
        read_tokenizer(tmp_path)
    assert str(raised.value) == (
        f"{tmp_path / 'tokenizer.json'} has no model.vocab (a mapping or a list)")


def test_a_separate_tokenizer_pin_is_read_from_its_subfolder(tmp_path: Path) -> None:
    CharTokenizer("ab").save(tmp_path)
    assert tokenizer_folder(tmp_path) == tmp_path
    CharTokenizer("xy").save(tmp_path / "tokenizer")
    assert tokenizer_folder(tmp_path) == tmp_path / "tokenizer"
    assert read_tokenizer(tokenizer_folder(tmp_path)).tokens[3] == "x"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert contents_key(empty) is None


def test_a_string_moved_beyond_the_other_vocabulary_is_a_difference(tmp_path: Path) -> None:
    for name, vocab in (("run", {"a": 0, "b": 1, "x": 2}), ("model", {"a": 0, "b": 1, "y": 2,
                                                                      "x": 3})):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tokenizer.json").write_text(json.dumps({"model": {"vocab": vocab}}))
    difference = compare(read_tokenizer(tmp_path / "run"), read_tokenizer(tmp_path / "model"))
    assert difference.conflicts == [(2, "x", "y")]
    assert difference.moved == [("x", 2, 3)]


def test_payloads_with_the_same_tokenizer_files_share_one_reading(tmp_path: Path) -> None:
    CharTokenizer("ab").save(tmp_path / "one")
    CharTokenizer("ab").save(tmp_path / "two" / "tokenizer")
    (tmp_path / "two" / "config.json").write_text("{}")
    CharTokenizer("xy").save(tmp_path / "three")
    read = read_payload_tokenizers({"tokenizer": tmp_path / "one", "model": tmp_path / "two",
                                    "critic_model": tmp_path / "three"})
    assert read["tokenizer"] is read["model"]
    assert read["critic_model"].tokens[3] == "x"
