"""Checks the launch makes besides preflight, where what they read is at hand: the smoke gate
(LAUNCH001, the ledger under the launch lock) and the tokenizer checks (LAUNCH002, LAUNCH003,
the materialized inputs). Importing this package registers them (`registry.launch_check`)."""

from rlaunch.preflight.launch_checks import smoke_gate, tokenizer_gate  # noqa: F401
