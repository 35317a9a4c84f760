"""Field syntax shared by several rule families: pins, versions, names, environment variables."""

from __future__ import annotations

import datetime
import re
from functools import lru_cache

COMMIT = re.compile(r"[0-9a-f]{40}")
HEX = re.compile(r"[0-9a-fA-F]+")
SHA256 = re.compile(r"[0-9a-f]{64}")
CALENDAR = re.compile(r"(\d{4})\.(\d{2})\.(\d{2})(?:\.([1-9]\d*))?")
DEV = re.compile(r"(?:[a-z0-9][a-z0-9._-]*-)?dev")
SAFE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
URI_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*://\S+")


@lru_cache(maxsize=1024)
def is_dev(version: str) -> bool:
    return DEV.fullmatch(version) is not None


@lru_cache(maxsize=1024)
def is_calendar(version: str) -> bool:
    """`YYYY.MM.DD` or `YYYY.MM.DD.N` naming a real date."""
    match = CALENDAR.fullmatch(version)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.group(1, 2, 3))
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


def next_calendar(version: str) -> str:
    """The version to bump to: `2026.11.29` -> `2026.11.29.1`, `....1` -> `....2`."""
    match = CALENDAR.fullmatch(version)
    if match is None:
        return version
    base = ".".join(match.group(1, 2, 3))
    serial = int(match.group(4) or 0)
    return f"{base}.{serial + 1}"
