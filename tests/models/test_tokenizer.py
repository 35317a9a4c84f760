"""CharTokenizer: fixed ids, round trips, a file that detects a changed vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlaunch.models.tokenizer import CharTokenizer, TokenizerError


def test_ids_are_fixed_and_round_trip() -> None:
    tokenizer = CharTokenizer()
    assert (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id) == (0, 1, 2)
    assert tokenizer.vocab_size == 50
    ids = tokenizer.encode("3 7 5 to 22:", bos=True, eos=True)
    assert ids[0] == 1 and ids[-1] == 2
    assert tokenizer.decode(ids) == "3 7 5 to 22:"
    assert tokenizer.decode(tokenizer.encode("1+2", eos=True) + tokenizer.encode("9")) == "1+2"
    assert tokenizer.decode(tokenizer.encode("1+2", eos=True) + [3], stop_at_eos=False) == "1+2 "


def test_unknown_characters_are_named() -> None:
    with pytest.raises(TokenizerError, match=r"text 'A!' has characters outside the vocabulary: "
                                             r"\['!', 'A'\]"):
        CharTokenizer().encode("A!")


def test_save_load_round_trip(tmp_path: Path) -> None:
    tokenizer = CharTokenizer("0123+-")
    path = tokenizer.save(tmp_path)
    assert path == tmp_path / "tokenizer.json"
    assert CharTokenizer.load(tmp_path) == tokenizer
    assert CharTokenizer.load(tmp_path) != CharTokenizer()


def test_load_refuses_foreign_files(tmp_path: Path) -> None:
    with pytest.raises(TokenizerError, match=f"no tokenizer.json in {tmp_path}"):
        CharTokenizer.load(tmp_path)
    (tmp_path / "tokenizer.json").write_text(json.dumps({"type": "bpe", "vocab": []}))
    with pytest.raises(TokenizerError, match="type is 'bpe', expected 'rlaunch-char'"):
        CharTokenizer.load(tmp_path)
