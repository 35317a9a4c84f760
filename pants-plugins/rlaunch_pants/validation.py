"""Syntax checks of single values, shared by the fields (at BUILD parse time) and their tests.

Each check returns None when the value is fine, else the requirement it failed, phrased to follow
"must be" in the Pants message form: "The 'revision' field in target x:y must be <requirement>,
but was 'main'." Meaning (geometry, batch sizes, handoff kinds...) is not judged here: that is the
library's preflight, which reports every problem of a run at once with a stable code.
"""

from __future__ import annotations

import datetime
import difflib
from collections.abc import Mapping
from typing import Any, Optional

from rlaunch_pants.schema import PATTERNS

COMMIT_REQUIREMENT = "a 40-character hex commit sha"
SHA256_REQUIREMENT = "a 64-character hex sha256 digest of the content"
VERSION_REQUIREMENT = (
    "a calendar version YYYY.MM.DD or YYYY.MM.DD.N (a real date), or `dev` or `<label>-dev`"
)

# The library's own patterns (rlaunch.spec.syntax, via schema.json), so that a pin or version
# the BUILD file accepts is one preflight accepts too.
_HEX40 = PATTERNS["commit"]
_HEX64 = PATTERNS["sha256"]
_CALENDAR = PATTERNS["calendar"]
_DEV = PATTERNS["dev"]


def check_commit(value: str) -> Optional[str]:
    """Branches and tags (`main`, `v1`) move, so only a full lowercase sha pins a revision."""
    return None if _HEX40.fullmatch(value) else COMMIT_REQUIREMENT


def check_sha256(value: str) -> Optional[str]:
    return None if _HEX64.fullmatch(value) else SHA256_REQUIREMENT


def check_version(value: str) -> Optional[str]:
    if _DEV.fullmatch(value):
        return None
    match = _CALENDAR.fullmatch(value)
    if match is None:
        return VERSION_REQUIREMENT
    year, month, day = (int(part) for part in match.groups()[:3])
    try:
        datetime.date(year, month, day)
    except ValueError:
        return f"{VERSION_REQUIREMENT}; {year:04d}-{month:02d}-{day:02d} is not a date"
    return None


def is_int(value: Any) -> bool:
    # bool is a subclass of int, but `nodes=True` is a mistake, not the number 1.
    return isinstance(value, int) and not isinstance(value, bool)


def check_positive_int(value: Any) -> Optional[str]:
    return None if is_int(value) and value > 0 else "a positive integer"


def check_non_negative_int(value: Any) -> Optional[str]:
    return None if is_int(value) and value >= 0 else "an integer >= 0"


def check_int(value: Any) -> Optional[str]:
    return None if is_int(value) else "an integer"


def is_number(value: Any) -> bool:
    return is_int(value) or isinstance(value, float)


def check_number(value: Any) -> Optional[str]:
    return None if is_number(value) else "a number"


def check_bool(value: Any) -> Optional[str]:
    return None if isinstance(value, bool) else "True or False"


def check_str(value: Any) -> Optional[str]:
    return None if isinstance(value, str) and value else "a non-empty string"


def check_str_list(value: Any) -> Optional[str]:
    ok = isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value)
    return None if ok else "a list of strings"


def check_str_map(value: Any) -> Optional[str]:
    ok = isinstance(value, Mapping) and all(isinstance(key, str) for key in value)
    return None if ok else "a dict with string keys"


def check_choice(value: Any, choices: tuple[str, ...]) -> Optional[str]:
    if isinstance(value, str) and value in choices:
        return None
    return "one of " + ", ".join(repr(choice) for choice in choices)


def _check_any_str(value: Any) -> Optional[str]:
    return None if isinstance(value, str) else "a string"


# What a schema type accepts at BUILD parse (the library judges values: empty, bounds).
_TYPE_CHECKS = {"int": check_int, "number": check_number, "bool": check_bool,
                "str": _check_any_str, "list": check_str_list, "map": check_str_map}


def keyed_problems(keys: Mapping[str, Any], value: Any, path: str) -> list[str]:
    """What is wrong with the dict `value` against schema `keys` (schema.json's shape): a key
    it does not have (with the closest one), a key without a default left out, a value of the
    wrong type. `path` names the dict in the messages (`config`, `config.ground_truth`)."""
    if not isinstance(value, Mapping):
        return [f"{path} must be a dict, but was {value!r}"]
    problems = []
    for key in value:
        if key not in keys:
            close = difflib.get_close_matches(str(key), list(keys), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(f"{path}.{key} is not a key of it{hint} (its keys: "
                            f"{', '.join(keys)})")
    for key, item in keys.items():
        where = f"{path}.{key}"
        if key not in value:
            if "default" not in item:
                problems.append(f"{where} is missing (write it; null if it has none)"
                                if item["nullable"] else f"{where} is missing")
            continue
        given = value[key]
        if given is None:
            if not item["nullable"]:
                problems.append(f"{where} must not be None")
            continue
        if item["type"] == "dict":
            problems += keyed_problems(item["keys"], given, where)
        elif item["type"] == "choice":
            requirement = check_choice(given, tuple(item["choices"]))
            if requirement:
                problems.append(f"{where} must be {requirement}, but was {given!r}")
        elif item["type"] in _TYPE_CHECKS:
            requirement = _TYPE_CHECKS[item["type"]](given)
            if requirement:
                problems.append(f"{where} must be {requirement}, but was {given!r}")
    return problems


def field_message(alias: str, address: object, requirement: str, value: Any) -> str:
    """The Pants form of a field error."""
    return f"The {alias!r} field in target {address} must be {requirement}, but was {value!r}."
