"""Shared pydantic base: strict, frozen, unknown keys rejected."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from rlaunch.fingerprints import canonical_json, fingerprint_of

__all__ = ["MAX_INT", "Bounds", "SpecModel", "Syntax", "canonical_json", "fingerprint_of"]

# The largest integer any field takes: JSON's exact integer range. Beyond it a number has been
# mistyped (or is an attack), and readers in other languages would round it.
MAX_INT = 2**53


@dataclass(frozen=True)
class Bounds:
    """The range of a number that a preflight rule checks, with its code, among every other
    finding (so pydantic does not enforce it: `Field(ge=...)` would stop parsing first). Written
    beside the field, as `Annotated[int, Bounds(ge=1)]`, so that the Pants plugin range-checks
    the BUILD value too (schema.json carries it)."""

    ge: int | float | None = None
    gt: int | float | None = None
    le: int | float | None = None
    lt: int | float | None = None


@dataclass(frozen=True)
class Syntax:
    """The syntax of a string that a preflight rule checks, with its code (a pinned commit, a
    sha256, a version; rlaunch.spec.syntax holds the patterns). Written beside the field, as
    `Annotated[str, Syntax("commit")]`, so that the Pants plugin checks the BUILD value too
    (schema.json carries its name and the patterns)."""

    name: str


class SpecModel(BaseModel):
    """Base for every spec section.

    Unknown keys are errors (a typo must never be silently ignored) and instances are
    immutable, so a spec cannot change under a rule that is reading it. Types are strict, as in
    BUILD files: `true` is not 1 and `"2"` is not 2 (an integer is accepted where a float is
    expected). Floats are finite: `.inf` and `.nan` are refused. Integers lie within
    +-2**53. Strings hold no NUL character.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, allow_inf_nan=False,
        use_attribute_docstrings=True,
    )

    @field_validator("*", mode="after")
    @classmethod
    def _integers_in_range(cls, value: Any) -> Any:
        if type(value) is int and not -MAX_INT <= value <= MAX_INT:
            raise ValueError("integers must lie within +-2**53")
        if type(value) is str and "\x00" in value:
            # Names, versions and prefixes become paths and URLs: no file system takes a NUL.
            raise ValueError("strings must not hold a NUL character (\\x00): no path, URL or"
                             " tool downstream accepts one")
        return value
