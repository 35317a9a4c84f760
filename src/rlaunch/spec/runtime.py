"""The RL runtime pin: which trainer code consumes the launch YAML."""

from __future__ import annotations

from rlaunch.spec.base import SpecModel, fingerprint_of


class GitPin(SpecModel):
    repo: str
    """Repository URL or `owner/name`."""
    commit: str
    """40-hex commit sha."""


class RuntimePin(SpecModel):
    """Exactly one of `package` (`name==X.Y.Z`) or `git` pins the runtime's code."""

    name: str
    """Identity of the runtime target, e.g. `skyrl-0.3.0`."""
    profile: str
    """Runtime profile from the catalog (`rlaunch rules` lists them): `skyrl` or `smoke`.
    The profile says which entrypoints, strategies and fixes the runtime has."""
    package: str | None
    """`name==X.Y.Z`; null when `git` pins the code."""
    git: GitPin | None
    """Repository and commit; null when `package` pins the code."""
    entrypoint: str
    """Python module the job runs with the launch YAML, e.g. `skyrl.train.entrypoints.main_base`."""
    required_fixes: list[str]
    """Fix ids the run needs; preflight proves the pinned runtime contains each."""


def runtime_fingerprint(runtime: RuntimePin) -> str:
    """What identifies the runtime's code: profile, pin and entrypoint (not its name)."""
    return fingerprint_of(runtime.model_dump(mode="json", exclude={"name", "required_fixes"}))
