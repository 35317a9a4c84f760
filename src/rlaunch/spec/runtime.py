"""The RL runtime pin: which trainer code consumes the launch YAML."""

from __future__ import annotations

from pydantic import Field

from rlaunch.spec.base import SpecModel, fingerprint_of


class GitPin(SpecModel):
    repo: str
    """Repository URL or `owner/name`."""
    commit: str
    """40-hex commit sha."""


class RuntimePin(SpecModel):
    """Exactly one of `package` (`name==X.Y.Z`) or `git` pins the runtime's code (RT001)."""

    name: str
    """Identity of the runtime target, e.g. `skyrl-0.3.0`."""
    profile: str
    """The runtime profile from the library's catalog (src/rlaunch/spec/catalog.py; `rlaunch
    rules` lists them): `skyrl` (SkyRL 0.3.0, 0.4.0) or `smoke` (rlaunch's CPU runtime). It says
    which entrypoints, strategies and fixes the runtime has."""
    package: str | None = Field(default=None, examples=["skyrl==0.3.0"])
    """The pinned package, `name==X.Y.Z`, e.g. `skyrl==0.3.0`; null when `git` pins the code.
    Set exactly one of `package` or `git`."""
    git: GitPin | None = Field(
        default=None, examples=[{"repo": "NovaSky-AI/SkyRL", "commit": "<the 40-hex commit>"}])
    """The runtime's code pinned at a git commit; null when `package` pins the code."""
    entrypoint: str
    """The Python module the job runs with the launch YAML, e.g.
    `skyrl.train.entrypoints.main_base` or `rlaunch.runtimes.smoke`. A run on SkyRL's eval-only
    `skyrl.train.entrypoints.main_generate` is an eval stage: it scores its model on its eval
    data and writes a report (docs/pipelines.md)."""
    required_fixes: list[str] = Field(
        default_factory=list, examples=[["batch-lcm-dp-validation", "max-ckpts-zero-rejected"]])
    """Ids of fixes the run needs from the runtime; preflight proves the pinned runtime contains
    each (the catalog lists them per profile)."""

    @property
    def commit(self) -> str | None:
        """The git pin's commit; None for a package pin (the catalog's lookups take both)."""
        return self.git.commit if self.git is not None else None

    @property
    def pin_label(self) -> str:
        """The pin as messages write it: `skyrl==0.3.0`, or `<repo>@<commit>`."""
        if self.git is not None:
            return f"{self.git.repo}@{self.git.commit}"
        return self.package or self.name


def runtime_fingerprint(runtime: RuntimePin) -> str:
    """What identifies the runtime's code: profile, pin and entrypoint (not its name)."""
    return fingerprint_of(runtime.model_dump(mode="json", exclude={"name", "required_fixes"}))
