"""Which interpreter runs a job on this machine: one whose environment has the pinned runtime.

The smoke runtime ships inside rlaunch, so its job runs on the launcher's own interpreter. Any
other runtime lives in an environment of its own (SkyRL 0.3.0 with skyrl-gym 0.4.0 needs CPython
>= 3.12, the launcher runs on 3.11): `RLAUNCH_<PROFILE>_PYTHON` (`RLAUNCH_SKYRL_PYTHON`) names
that environment's interpreter; unset, the launcher's own interpreter is used if it has the pin
installed. Either way the interpreter is asked which version of the runtime's distribution it
has (`importlib.metadata`), and one that lacks the pinned release is refused before anything is
submitted, naming the setting and the fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from rlaunch.executors.base import ExecutorError
from rlaunch.render.launchdoc import LaunchDocument
from rlaunch.spec.catalog import profile

_PROBE = (
    "import importlib.metadata as m, sys\n"
    "try:\n    print(m.version(sys.argv[1]))\n"
    "except m.PackageNotFoundError:\n    print('')\n"
)
_PROBE_TIMEOUT_S = 120.0
SHIPPED_WITH_RLAUNCH = "rlaunch"
"""A profile whose distribution is rlaunch itself runs wherever the launcher does."""


def python_setting(profile_name: str) -> str:
    """`RLAUNCH_SKYRL_PYTHON` for profile `skyrl`."""
    return f"RLAUNCH_{profile_name.upper().replace('-', '_')}_PYTHON"


def installed_version(python: str, distribution: str, setting: str) -> str | None:
    """The version of `distribution` installed for `python`, None when it has none."""
    try:
        done = subprocess.run([python, "-c", _PROBE, distribution], capture_output=True,
                              text=True, timeout=_PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ExecutorError(
            f"{setting}={python}: cannot run it ({err}); set {setting} to the python of the "
            "environment that has the runtime installed"
        ) from None
    if done.returncode != 0:
        raise ExecutorError(
            f"{setting}={python}: asking it for its installed packages failed (exit "
            f"{done.returncode}): {done.stderr.strip()[-400:]}"
        )
    return done.stdout.strip() or None


def job_python(launch: LaunchDocument, chosen: tuple[str, str] | None = None) -> str:
    """The interpreter the job runs with on this machine, checked against `runtime.package`.
    `chosen`: (setting, interpreter) picked by the caller (a rehearsal's environment) instead
    of the profile's setting."""
    runtime = launch.runtime
    known = profile(runtime.profile)
    if known is None or known.package == SHIPPED_WITH_RLAUNCH:
        return sys.executable
    setting, configured = chosen or (python_setting(known.name),
                                     os.environ.get(python_setting(known.name)))
    python = configured or sys.executable
    version = installed_version(python, known.package, setting)
    pinned = runtime.package.partition("==")[2] if runtime.package else None
    if version is not None and (pinned is None or version == pinned):
        return python
    commit = runtime.git.commit if runtime.git else "?"
    wanted = runtime.package or f"{known.package} at git {commit}"
    where = (f"{setting}={python}" if configured
             else f"this launcher's interpreter {python} ({setting} is not set)")
    has = (f"has no {known.package} installed" if version is None
           else f"has {known.package}=={version}")
    raise ExecutorError(
        f"runtime {runtime.name} pins {wanted}, but {where} {has}: the job runs the runtime with "
        f"that interpreter. Set {setting} to the python of an environment with {wanted} "
        f"installed"
    )


def head_python(job: str) -> str:
    """The interpreter whose Ray runs the local head for a job on `job`: the job's own when it
    has Ray (a job's `ray.init` joins only a cluster of its own Ray version; SkyRL 0.3.0 pins
    ray 2.56.0), else this launcher's."""
    if job == sys.executable:
        return job
    return job if installed_version(job, "ray", "the job's interpreter") else sys.executable


REHEARSAL_PYTHON_ENV = "RLAUNCH_REHEARSAL_PYTHON"
REHEARSAL_ENV_SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "skyrl-rehearsal-env"
"""In a checkout: builds the rehearsal environment once and prints its interpreter."""
_ENV_SCRIPT_TIMEOUT_S = 1800.0


def rehearsal_python(env: Mapping[str, str], say: Callable[[str], None]) -> str:
    """The interpreter of the SkyRL rehearsal environment (docs/rehearsal.md):
    `$RLAUNCH_REHEARSAL_PYTHON`, else what this checkout's scripts/skyrl-rehearsal-env prints
    (it builds the environment on first use)."""
    configured = env.get(REHEARSAL_PYTHON_ENV)
    if configured:
        return configured
    if not REHEARSAL_ENV_SCRIPT.is_file():
        raise ExecutorError(
            f"a rehearsal runs SkyRL in its rehearsal environment, and {REHEARSAL_PYTHON_ENV} "
            f"is not set and {REHEARSAL_ENV_SCRIPT} is not there (rlaunch runs outside its "
            f"checkout): set {REHEARSAL_PYTHON_ENV} to the python of an environment built from "
            "3rdparty/skyrl-rehearsal.txt (scripts/skyrl-rehearsal-env prints it)"
        )
    say(f"rlaunch: the rehearsal environment: {REHEARSAL_ENV_SCRIPT} (built once, a few "
        "minutes)")
    try:
        done = subprocess.run([str(REHEARSAL_ENV_SCRIPT)], capture_output=True, text=True,
                              timeout=_ENV_SCRIPT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ExecutorError(f"{REHEARSAL_ENV_SCRIPT} did not run: {err}") from None
    if done.returncode != 0 or not done.stdout.strip():
        raise ExecutorError(
            f"{REHEARSAL_ENV_SCRIPT} failed (exit {done.returncode}): "
            f"{done.stderr.strip()[-1200:]}; or set {REHEARSAL_PYTHON_ENV} to the python of a "
            "SkyRL rehearsal environment"
        )
    return done.stdout.strip().splitlines()[-1]
