"""Shared pydantic base: strict, frozen, unknown keys rejected."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict


class SpecModel(BaseModel):
    """Base for every spec section.

    Unknown keys are errors (a typo must never be silently ignored) and instances are
    immutable, so a spec cannot change under a rule that is reading it.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=False, use_attribute_docstrings=True
    )


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the input of every fingerprint."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def fingerprint_of(value: Any) -> str:
    """`sha256:<hex>` of the canonical JSON of a plain (JSON-compatible) value."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode()).hexdigest()
