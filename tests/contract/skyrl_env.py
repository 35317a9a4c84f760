"""The SkyRL contract envs' interpreters (scripts/skyrl-contract-env RELEASE), for the tests that
run a SkyRL release's own code in it: one env per release, CPython 3.11 with the real CPU torch
and the ray the release pins (SkyRL 0.3.0's is the rehearsal env)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from rlaunch.spec.catalog import PROFILES

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_SCRIPT = REPO_ROOT / "scripts" / "skyrl-contract-env"
RELEASES: tuple[str, ...] = tuple(PROFILES["skyrl"].releases)
"""Every catalogued SkyRL release: each has a contract env of its own."""


def contract_python(release: str = "0.3.0") -> str:
    """The release's contract env interpreter, built on first use (a few minutes, about 1.9 GB;
    0.3.0's is the rehearsal env, `rehearsal_python`)."""
    done = subprocess.run(
        [str(ENV_SCRIPT), release], capture_output=True, text=True, timeout=1800, check=False
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/skyrl-contract-env {release} failed ({done.returncode}):\n"
                    f"{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def pin_release(data: dict[str, Any], release: str) -> dict[str, Any]:
    """A RunSpec (as data) on the worked examples' SkyRL runtime, pinned to `release` instead."""
    data["runtime"] = {**data["runtime"], "name": f"skyrl-{release}",
                       "package": f"skyrl=={release}"}
    return data


REHEARSAL_ENV_SCRIPT = REPO_ROOT / "scripts" / "skyrl-rehearsal-env"


def rehearsal_python() -> str:
    """The SkyRL rehearsal env's interpreter (CPython 3.11 with SkyRL 0.3.0 and this machine's
    CPU torch), built on first use (about 4 minutes, 1.9 GB)."""
    done = subprocess.run([str(REHEARSAL_ENV_SCRIPT)], capture_output=True, text=True,
                          timeout=1800, check=False)
    if done.returncode != 0:
        pytest.fail(f"scripts/skyrl-rehearsal-env failed ({done.returncode}):\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]
