"""The one timestamp format of rlaunch's records (ledger, submissions, artifact records, the head
state): UTC with microseconds, `2026-11-29T22:54:00.123456Z`, sortable as text."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
