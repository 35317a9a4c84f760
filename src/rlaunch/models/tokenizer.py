"""A character tokenizer with a fixed vocabulary, saved as `tokenizer.json`.

The vocabulary is fixed (not learned from data) so that a model and a dataset built
separately always agree on token ids; the file records it anyway, so a changed
vocabulary is detected on load instead of silently shifting every id.
"""

from __future__ import annotations

import json
from pathlib import Path

PAD = "<pad>"
BOS = "<bos>"
EOS = "<eos>"
SPECIALS = (PAD, BOS, EOS)
# Everything the countdown task writes, plus lowercase letters for prompt words.
CHARACTERS = " 0123456789+-*/()=:,?" + "abcdefghijklmnopqrstuvwxyz"

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_TYPE = "rlaunch-char"


class TokenizerError(ValueError):
    """Text outside the vocabulary, or a tokenizer.json this class cannot read."""


class CharTokenizer:
    """One token per character; ids 0..2 are `<pad>`, `<bos>`, `<eos>`."""

    def __init__(self, characters: str = CHARACTERS) -> None:
        if len(set(characters)) != len(characters):
            raise TokenizerError(f"tokenizer characters must be unique, got {characters!r}")
        self.characters = characters
        self.vocab: list[str] = [*SPECIALS, *characters]
        self._ids = {token: index for index, token in enumerate(self.vocab)}

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @property
    def pad_id(self) -> int:
        return self._ids[PAD]

    @property
    def bos_id(self) -> int:
        return self._ids[BOS]

    @property
    def eos_id(self) -> int:
        return self._ids[EOS]

    def encode(self, text: str, *, bos: bool = False, eos: bool = False) -> list[int]:
        unknown = sorted({char for char in text if char not in self._ids})
        if unknown:
            raise TokenizerError(
                f"text {text!r} has characters outside the vocabulary: {unknown}; "
                f"the vocabulary is {self.characters!r}"
            )
        ids = [self._ids[char] for char in text]
        return ([self.bos_id] if bos else []) + ids + ([self.eos_id] if eos else [])

    def decode(self, ids: list[int], *, stop_at_eos: bool = True) -> str:
        """Text of `ids`, special tokens dropped; stops at the first `<eos>` by default."""
        chars: list[str] = []
        for token_id in ids:
            if token_id == self.eos_id and stop_at_eos:
                break
            if 0 <= token_id < len(self.vocab) and token_id >= len(SPECIALS):
                chars.append(self.vocab[token_id])
        return "".join(chars)

    def to_dict(self) -> dict:
        return {
            "type": TOKENIZER_TYPE,
            "vocab": self.vocab,
            "specials": {"pad": PAD, "bos": BOS, "eos": EOS},
        }

    def save(self, directory: str | Path) -> Path:
        path = Path(directory) / TOKENIZER_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return path

    @classmethod
    def load(cls, directory: str | Path) -> CharTokenizer:
        path = Path(directory) / TOKENIZER_FILE
        if not path.is_file():
            raise TokenizerError(f"no {TOKENIZER_FILE} in {directory}")
        data = json.loads(path.read_text())
        if data.get("type") != TOKENIZER_TYPE:
            raise TokenizerError(
                f"{path}: type is {data.get('type')!r}, expected {TOKENIZER_TYPE!r}"
            )
        vocab = data.get("vocab", [])
        if tuple(vocab[: len(SPECIALS)]) != SPECIALS:
            raise TokenizerError(f"{path}: vocab must start with {list(SPECIALS)}, got {vocab[:3]}")
        return cls("".join(vocab[len(SPECIALS) :]))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CharTokenizer) and other.vocab == self.vocab

    def __hash__(self) -> int:
        return hash(tuple(self.vocab))
