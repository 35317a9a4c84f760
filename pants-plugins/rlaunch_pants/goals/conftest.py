"""Fixtures of the goals' tests."""

from __future__ import annotations

import pytest

from rlaunch_pants.testutil import runtime_python


@pytest.fixture(scope="module")
def python() -> str:
    """The project runtime's interpreter, which the goals run the library on (skips without)."""
    found = runtime_python()
    if found is None:
        pytest.skip("no project runtime: set PANTS_RLAUNCH_PYTHON or run scripts/runtime")
    return found
