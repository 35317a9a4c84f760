"""Fingerprints: the sha256 of a value's canonical JSON. A module of its own (no pydantic, no
spec) so that the store's record readers, which SkyRL's environment imports, can check one."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the input of every fingerprint."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def fingerprint_of(value: Any) -> str:
    """`sha256:<hex>` of the canonical JSON of a plain (JSON-compatible) value."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()
