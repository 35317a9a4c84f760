"""What every executor gives a job: its environment (shared by `local` and `ray`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from rlaunch.paths import ATTEMPT_ENV
from rlaunch.runtimes.skyrl import HANDOFF_MODULE_ENV
from rlaunch.runtimes.staging import NODE_CACHE_ENV

JOB_SETTINGS = (NODE_CACHE_ENV, HANDOFF_MODULE_ENV)
"""rlaunch's own job settings: set in the launcher's environment, they reach a job on this
machine's head (whose jobs inherit only a few variables, rlaunch.executors.local_head)."""


def rlaunch_source_root() -> Path:
    """The directory holding the `rlaunch` package (`<repo>/src` in a checkout)."""
    return Path(__file__).resolve().parents[2]


def shipped_package() -> str:
    """The `rlaunch` package folder, shipped with a `ray` job (runtime env `py_modules`); an
    `iris` job gets rlaunch from the workspace bundle (this checkout)."""
    return str(rlaunch_source_root() / "rlaunch")


def job_pythonpath() -> str:
    """rlaunch's own sources first, then whatever the launcher itself could import."""
    parts = [str(rlaunch_source_root())]
    inherited = os.environ.get("PYTHONPATH", "")
    parts += [part for part in inherited.split(os.pathsep) if part and part not in parts]
    return os.pathsep.join(parts)


def job_settings() -> dict[str, str]:
    """The JOB_SETTINGS the launcher's environment sets."""
    return {name: os.environ[name] for name in JOB_SETTINGS if os.environ.get(name)}


def job_env_vars(env: Mapping[str, str], attempt_id: str) -> dict[str, str]:
    return {**env, **job_settings(), "PYTHONPATH": job_pythonpath(), ATTEMPT_ENV: attempt_id}
