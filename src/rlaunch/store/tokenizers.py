"""What a tokenizer in the store means: its vocabulary (id -> string) and its special tokens.

Read from the files of a materialized artifact, without the `tokenizers` or `transformers`
libraries (the runtime has neither): Hugging Face's `tokenizer.json` (the fast tokenizer: its
model's vocabulary and its `added_tokens`), else a slow tokenizer's `vocab.json` with
`added_tokens.json`, or rlaunch's character tokenizer (`tokenizer.json` of type
`rlaunch-char`); the named special tokens from `tokenizer_config.json`, overridden by
`special_tokens_map.json` as transformers does. A chat template is not part of the contents:
two tokenizers that differ only there give the same ids for the same strings.

A model payload whose tokenizer pin is another repo keeps that tokenizer in `tokenizer/`
(the hf_snapshot builder); otherwise the tokenizer files are at the payload's root. Contents
are remembered in the process by the sha256 of the files they come from (the store record's),
so a pipeline of stages reading the same tokenizer parses it once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from rlaunch.store.records import RECORD_FILE, parse_record, sha256_file

TOKENIZER_SUBFOLDER = "tokenizer"
SPECIAL_NAMES = ("bos_token", "eos_token", "pad_token", "unk_token")
"""The named special tokens compared (added tokens are compared with the vocabulary)."""
CONTENT_FILES = ("tokenizer.json", "vocab.json", "added_tokens.json", "tokenizer_config.json",
                 "special_tokens_map.json")
"""The files the contents are read from (a chat template file is not among them)."""
OPAQUE_SUFFIXES = (".model", ".tiktoken")
"""Vocabularies this module cannot read (sentencepiece, tiktoken): compared by their bytes."""
RLAUNCH_CHAR = "rlaunch-char"


class TokenizerFileError(ValueError):
    """A tokenizer file that is not what its name says."""


@dataclass(frozen=True)
class TokenizerContents:
    """A tokenizer's vocabulary and named special tokens, as its files state them."""

    tokens: dict[int, str]
    """Every id -> its string: the model's vocabulary and the added tokens."""
    special: dict[str, str | None]
    """`bos_token`, `eos_token`, `pad_token`, `unk_token` -> its string (None: not set)."""
    opaque: dict[str, str]
    """Files of a vocabulary this module cannot read (`*.model`, `*.tiktoken`) -> sha256."""
    source: str
    """The files read, e.g. `tokenizer.json + tokenizer_config.json`."""

    @property
    def size(self) -> int:
        """Ids the tokenizer can produce: its largest id + 1 (0 for an opaque vocabulary)."""
        return max(self.tokens, default=-1) + 1

    @cached_property
    def ids_by_text(self) -> dict[str, int]:
        """Each string -> its (smallest) id."""
        return {token: token_id for token_id, token in sorted(self.tokens.items(), reverse=True)}

    def special_id(self, name: str) -> int | None:
        """The id of the named special token's string, None if unset or not in the vocabulary."""
        text = self.special.get(name)
        return None if text is None else self.ids_by_text.get(text)


@dataclass(frozen=True)
class TokenizerDifference:
    """What differs between two tokenizers' contents (empty: the same ids mean the same)."""

    shared_ids: int
    """Ids both vocabularies have."""
    conflicts: list[tuple[int, str, str]]
    """`(id, string in the first, string in the second)` for each shared id that differs."""
    moved: list[tuple[str, int, int]]
    """`(string, its id in the first, in the second)` for each string both have at ids of which
    one is beyond the other's vocabulary (a shift the shared ids do not show)."""
    specials: list[tuple[str, str | None, int | None, str | None, int | None]]
    """`(name, first's string, its id, second's string, its id)` for each differing one."""
    opaque: list[str]
    """Unreadable vocabulary files whose bytes differ (or that only one side has)."""

    @property
    def same(self) -> bool:
        return not (self.conflicts or self.moved or self.specials or self.opaque)


def tokenizer_folder(payload: Path) -> Path:
    """Where a payload keeps its tokenizer: `tokenizer/` when it has one, else its root."""
    inner = payload / TOKENIZER_SUBFOLDER
    return inner if inner.is_dir() and any(inner.iterdir()) else payload


def _content_files(folder: Path) -> list[Path]:
    named = [folder / name for name in CONTENT_FILES if (folder / name).is_file()]
    opaque = sorted(path for path in folder.iterdir()
                    if path.is_file() and path.suffix in OPAQUE_SUFFIXES)
    return named + opaque


def _recorded_sha256(payload: Path, folder: Path) -> dict[str, str]:
    """`relative path -> sha256` from the payload's store record (empty without one)."""
    record_file = payload / RECORD_FILE
    if not record_file.is_file():
        return {}
    record = parse_record(record_file.read_text(encoding="utf-8"), str(record_file))
    prefix = folder.relative_to(payload).as_posix()
    prefix = "" if prefix == "." else prefix + "/"
    return {entry.path[len(prefix):]: entry.sha256 for entry in record.files
            if entry.path.startswith(prefix)}


def contents_key(payload: Path) -> str | None:
    """The sha256 of the tokenizer files of a payload (names and digests, from its store
    record when it has one), or None when it has no tokenizer files."""
    folder = tokenizer_folder(payload)
    files = _content_files(folder)
    if not files:
        return None
    recorded = _recorded_sha256(payload, folder)
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.name}\0{recorded.get(path.name) or sha256_file(path)}\n".encode())
    return digest.hexdigest()


def read_payload_tokenizers(
    payloads: dict[str, Path]
) -> dict[str, TokenizerContents | None]:
    """The contents of each payload's tokenizer (None: it has no tokenizer files). Payloads
    whose tokenizer files have the same digests share one reading, and each set of digests is
    parsed once per process."""
    keys = {name: contents_key(payload) for name, payload in payloads.items()}
    first = {key: name for name, key in reversed(keys.items())}
    return {name: None if key is None else
            _read_once(key, tokenizer_folder(payloads[first[key]]))
            for name, key in keys.items()}


@lru_cache(maxsize=32)
def _read_once(key: str, folder: Path) -> TokenizerContents:
    """`read_tokenizer`, remembered by the digest of the files (`key`) and their folder."""
    return read_tokenizer(folder)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise TokenizerFileError(f"{path} cannot be read as JSON: {err}") from None


def _token_text(value: Any) -> str | None:
    """A special token as tokenizer configs write it: a string, or an AddedToken dict."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _fast_vocabulary(data: dict[str, Any], path: Path) -> dict[int, str]:
    model = data.get("model")
    vocab = model.get("vocab") if isinstance(model, dict) else None
    if isinstance(vocab, dict):  # BPE, WordPiece, WordLevel: token -> id
        tokens = {int(token_id): token for token, token_id in vocab.items()}
    elif isinstance(vocab, list):  # Unigram: [token, score] in id order
        tokens = {index: entry[0] for index, entry in enumerate(vocab)}
    else:
        raise TokenizerFileError(f"{path} has no model.vocab (a mapping or a list)")
    for added in data.get("added_tokens") or []:
        tokens[int(added["id"])] = added["content"]
    return tokens


def read_tokenizer(folder: Path) -> TokenizerContents:
    """The contents of the tokenizer files in `folder` (see the module docstring); raises
    TokenizerFileError for a file that does not have the shape its name promises."""
    try:
        return _read(folder)
    except (AttributeError, KeyError, TypeError, ValueError) as err:
        if isinstance(err, TokenizerFileError):
            raise
        raise TokenizerFileError(f"the tokenizer files in {folder} do not have the shape "
                                 f"their names promise ({type(err).__name__}: {err})") from None


def _read(folder: Path) -> TokenizerContents:
    read: list[str] = []
    tokens: dict[int, str] = {}
    special: dict[str, str | None] = dict.fromkeys(SPECIAL_NAMES)
    fast = folder / "tokenizer.json"
    if fast.is_file():
        data = _json(fast)
        read.append(fast.name)
        if isinstance(data, dict) and data.get("type") == RLAUNCH_CHAR:
            tokens = dict(enumerate(data.get("vocab") or []))
            named = data.get("specials") or {}
            special |= {f"{name}_token": named.get(name) for name in ("bos", "eos", "pad")}
        elif isinstance(data, dict):
            tokens = _fast_vocabulary(data, fast)
        else:
            raise TokenizerFileError(f"{fast} is not a JSON object")
    elif (folder / "vocab.json").is_file():
        read.append("vocab.json")
        tokens = {int(token_id): token for token, token_id in _json(folder / "vocab.json").items()}
        if (folder / "added_tokens.json").is_file():
            read.append("added_tokens.json")
            added = _json(folder / "added_tokens.json")
            tokens |= {int(token_id): token for token, token_id in added.items()}
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        path = folder / name
        if not path.is_file():
            continue
        config = _json(path)
        read.append(name)
        for token_id, added in (config.get("added_tokens_decoder") or {}).items():
            tokens[int(token_id)] = _token_text(added) or tokens.get(int(token_id), "")
        special |= {key: _token_text(config[key]) for key in SPECIAL_NAMES if key in config}
    opaque = {path.name: sha256_file(path) for path in sorted(folder.iterdir())
              if path.is_file() and path.suffix in OPAQUE_SUFFIXES}
    read += list(opaque)
    return TokenizerContents(tokens, special, {} if tokens else opaque,
                             " + ".join(read) or "no tokenizer files")


def compare(first: TokenizerContents, second: TokenizerContents) -> TokenizerDifference:
    """What differs between two tokenizers: shared ids with other strings, strings moved to an
    id the other does not have, named special tokens (string and id), unreadable vocabulary
    files with other bytes. An id only one of them has is not a difference by itself (an
    extended tokenizer adds ids after the others)."""
    shared = sorted(set(first.tokens) & set(second.tokens))
    conflicts = [(token_id, first.tokens[token_id], second.tokens[token_id])
                 for token_id in shared if first.tokens[token_id] != second.tokens[token_id]]
    if first == second:
        return TokenizerDifference(len(first.tokens), [], [], [], [])
    theirs_by_text = second.ids_by_text
    moved = sorted(
        (token, token_id, theirs_by_text[token])
        for token_id, token in first.tokens.items()
        if token in theirs_by_text and theirs_by_text[token] != token_id
        and (token_id not in second.tokens or theirs_by_text[token] not in first.tokens)
    )
    specials = []
    for name in SPECIAL_NAMES:
        mine = (first.special.get(name), first.special_id(name))
        theirs = (second.special.get(name), second.special_id(name))
        if mine != theirs:
            specials.append((name, *mine, *theirs))
    opaque = sorted(name for name in set(first.opaque) | set(second.opaque)
                    if first.opaque.get(name) != second.opaque.get(name))
    return TokenizerDifference(len(shared), conflicts, moved, specials, opaque)
