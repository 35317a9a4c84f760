"""A preflight finding: one violated rule, with the fields involved, the equation and the fix."""

from __future__ import annotations

from typing import Literal, NamedTuple

Severity = Literal["error", "warning"]


class Finding(NamedTuple):
    """A named tuple, not a frozen dataclass: a random plan of a search yields about eight, and
    a frozen dataclass sets each of its five fields through `object.__setattr__` (three times
    the cost of the tuple). Immutable and hashable either way."""

    code: str
    """Stable rule code, e.g. `GEO003` (`rlaunch rules` lists them all)."""
    severity: Severity
    """`error` refuses the launch; `warning` is reported and allowed."""
    paths: tuple[str, ...]
    """Field paths in the spec, e.g. `role_plan.rollout.tensor_parallel_size`."""
    message: str
    """What is wrong: every field involved with its value, and the whole equation."""
    fix: str
    """One sentence: how to fix the recipe."""

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_dict(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity,
            "paths": list(self.paths),
            "message": self.message,
            "fix": self.fix,
        }


_new = tuple.__new__
"""A Finding from its five fields in order, in one C call: the named tuple's own `__new__` is
a Python function (it checks nothing more), and a random plan of a search makes about four
findings that no memo keeps."""


def error(code: str, paths: tuple[str, ...], message: str, fix: str) -> Finding:
    return _new(Finding, (code, "error", paths, message, fix))


def warning(code: str, paths: tuple[str, ...], message: str, fix: str) -> Finding:
    return _new(Finding, (code, "warning", paths, message, fix))
