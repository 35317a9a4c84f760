"""The SkyRL contract env's interpreter (scripts/skyrl-contract-env), for the tests that run
SkyRL 0.3.0's own code in it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_SCRIPT = REPO_ROOT / "scripts" / "skyrl-contract-env"


def contract_python() -> str:
    """The contract env's interpreter, built on first use (about a minute, 600 MB); skips when the
    machine has no CPython 3.12."""
    done = subprocess.run(
        [str(ENV_SCRIPT)], capture_output=True, text=True, timeout=900, check=False
    )
    if done.returncode == 3:
        pytest.skip(
            "SkyRL contract not checked: no CPython 3.12 on this machine (skyrl-gym 0.4.0, "
            "which SkyRL 0.3.0's config imports, requires it). scripts/skyrl-contract-env said:\n"
            + done.stderr
        )
    if done.returncode != 0:
        pytest.fail(f"scripts/skyrl-contract-env failed ({done.returncode}):\n{done.stderr}")
    return done.stdout.strip()
