"""The one timestamp format of rlaunch's records (ledger, submissions, artifact records, the head
state): UTC with microseconds, `2026-11-29T22:54:00.123456Z`, sortable as text; and `Laps`, the
wall time of a command's phases (a launch's last line, the smoke runtime's `timings_s`)."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Laps:
    """Wall seconds by phase (`lap(name)` adds the time since the previous lap to `name`), in
    the order the phases first ended: where a run's time went (`timings_s` in the manifest)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.started_at = time.time()
        """When the laps began (time.time())."""
        self._last = time.monotonic()

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now

    def line(self) -> str:
        return ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.seconds.items())
