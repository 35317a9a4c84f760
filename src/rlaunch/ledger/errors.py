"""Errors of the launch ledger."""

from __future__ import annotations


class LedgerError(RuntimeError):
    """The ledger cannot be read or written, or it refuses a launch; the message says why and
    how to proceed."""
