"""Which interpreter runs a job on this machine: one whose environment has the pinned runtime.

The smoke runtime ships inside rlaunch, so its job runs on the launcher's own interpreter. Any
other runtime lives in an environment of its own (SkyRL 0.3.0 with skyrl-gym 0.4.0 needs CPython
>= 3.12, the launcher runs on 3.11): `RLAUNCH_<PROFILE>_PYTHON` (`RLAUNCH_SKYRL_PYTHON`) names
that environment's interpreter; unset, the launcher's own interpreter is used if it has the pin
installed. Either way the interpreter is asked which versions of the distributions the job
needs it has (`importlib.metadata`): the runtime's pinned release, and the fsspec backend of
every object store the launch reads or writes (gcsfs for gs://, s3fs for s3://; skyrl 0.3.0's
extras carry s3fs, in `skyrl-train`, and no gcsfs; 0.4.0's `skyrl-train` carries both). One
that lacks any is refused before anything is submitted, naming the package, the setting and the
fix. A remote Ray cluster's interpreter is asked the same by a probe job (`probe_command`,
RayClusterExecutor.check_cluster_python).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from rlaunch.executors.base import ExecutorError
from rlaunch.render.launchdoc import LaunchDocument
from rlaunch.spec.catalog import profile

_PROBE = (
    "import importlib.metadata as m, json, sys\n"
    "def v(name):\n"
    "    try:\n        return m.version(name)\n"
    "    except m.PackageNotFoundError:\n        return None\n"
    "print('RLAUNCH_PROBE ' + json.dumps({name: v(name) for name in sys.argv[1:]}))\n"
)
PROBE_MARKER = "RLAUNCH_PROBE "
STORE_BACKENDS = {"gs": "gcsfs", "gcs": "gcsfs", "s3": "s3fs"}
"""The fsspec backend of each object-store scheme (rlaunch.store.fs opens stores with fsspec)."""
_PROBE_TIMEOUT_S = 120.0
SHIPPED_WITH_RLAUNCH = "rlaunch"
"""A profile whose distribution is rlaunch itself runs wherever the launcher does."""


def python_setting(profile_name: str) -> str:
    """`RLAUNCH_SKYRL_PYTHON` for profile `skyrl`."""
    return f"RLAUNCH_{profile_name.upper().replace('-', '_')}_PYTHON"


def installed_versions(python: str, distributions: list[str], setting: str
                       ) -> dict[str, str | None]:
    """The version of each distribution installed for `python` (None: not installed)."""
    try:
        done = subprocess.run([python, "-c", _PROBE, *distributions], capture_output=True,
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
    return parse_probe(done.stdout)


def parse_probe(output: str) -> dict[str, str | None]:
    for line in output.splitlines():
        if line.startswith(PROBE_MARKER):
            return dict(json.loads(line[len(PROBE_MARKER):]))
    raise ExecutorError(f"the interpreter's package probe printed no answer: {output[-400:]!r}")


def probe_command(python: str, distributions: list[str]) -> list[str]:
    """The command that asks `python` for the versions of `distributions` (a probe job)."""
    return [python, "-c", _PROBE, *distributions]


def store_backends(launch: LaunchDocument) -> dict[str, str]:
    """`{distribution: a location the job opens with it}`: the store and every input."""
    needed: dict[str, str] = {}
    for uri in [launch.artifacts.store_prefix, *(entry.uri for entry in
                                                 launch.inputs.values())]:
        scheme = uri.split("://", 1)[0] if "://" in uri else ""
        if scheme in STORE_BACKENDS:
            needed.setdefault(STORE_BACKENDS[scheme], uri)
    return needed


def needed_distributions(launch: LaunchDocument) -> list[str]:
    """What the job's interpreter must have: the runtime's distribution (unless it ships with
    rlaunch) and the store backends."""
    known = profile(launch.runtime.profile)
    runtime = ([] if known is None or known.package == SHIPPED_WITH_RLAUNCH
               else [known.package])
    return [*runtime, *store_backends(launch)]


def refusal(launch: LaunchDocument, versions: Mapping[str, str | None], where: str,
            fix_where: str) -> str | None:
    """Why an interpreter with `versions` cannot run the job (None: it can). `where` names the
    interpreter, `fix_where` the setting or environment to change."""
    runtime = launch.runtime
    known = profile(runtime.profile)
    if known is not None and known.package in versions:
        version = versions[known.package]
        pinned = runtime.package.partition("==")[2] if runtime.package else None
        if version is None or (pinned is not None and version != pinned):
            commit = runtime.git.commit if runtime.git else "?"
            wanted = runtime.package or f"{known.package} at git {commit}"
            has = (f"has no {known.package} installed" if version is None
                   else f"has {known.package}=={version}")
            return (f"runtime {runtime.name} pins {wanted}, but {where} {has}: the job runs "
                    f"the runtime with that interpreter. {fix_where} with {wanted} installed")
    for distribution, uri in store_backends(launch).items():
        if versions.get(distribution, "") is None:
            extras = (" (skyrl 0.3.0 brings s3fs with its skyrl-train extra, and gcsfs with "
                      "none)" if distribution == "gcsfs" and runtime.package == "skyrl==0.3.0"
                      else "")
            return (f"the job reads and writes {uri} through {distribution}, fsspec's "
                    f"{uri.split('://', 1)[0]}:// backend, but {where} has no {distribution} "
                    f"installed{extras}: staging would fail in the job, after the GPUs are "
                    f"allocated. Install {distribution} there (pip install {distribution}), or "
                    f"{fix_where[0].lower()}{fix_where[1:]} that has it")
    return None


def job_python(launch: LaunchDocument, chosen: tuple[str, str] | None = None) -> str:
    """The interpreter the job runs with on this machine, checked for what the job needs.
    `chosen`: (setting, interpreter) picked by the caller (a rehearsal's environment) instead
    of the profile's setting."""
    known = profile(launch.runtime.profile)
    shipped = known is None or known.package == SHIPPED_WITH_RLAUNCH
    setting = python_setting(known.name) if known is not None else "RLAUNCH_PYTHON"
    configured = None if shipped else os.environ.get(setting)
    if chosen is not None and not shipped:
        setting, configured = chosen
    python = configured or sys.executable
    distributions = needed_distributions(launch)
    if not distributions:
        return python
    versions = installed_versions(python, distributions, setting)
    where = (f"{setting}={python}" if configured
             else f"this launcher's interpreter {python}"
             + ("" if shipped else f" ({setting} is not set)"))
    fix_where = ("Run the launcher in an environment" if shipped
                 else f"Set {setting} to the python of an environment")
    problem = refusal(launch, versions, where, fix_where)
    if problem is not None:
        raise ExecutorError(problem)
    return python


def head_python(job: str) -> str:
    """The interpreter whose Ray runs the local head for a job on `job`: the job's own when it
    has Ray (a job's `ray.init` joins only a cluster of its own Ray version; SkyRL 0.3.0 pins
    ray 2.56.0), else this launcher's."""
    if job == sys.executable:
        return job
    has = installed_versions(job, ["ray"], "the job's interpreter").get("ray")
    return job if has else sys.executable


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
