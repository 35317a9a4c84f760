"""The runtime catalog: what each runtime profile offers, release by release.

A RunSpec pins its runtime (`runtime.profile`, plus `runtime.package` `name==X.Y.Z` or a git
commit). Preflight looks the pin up here to prove, before any GPU is paid for, that the
entrypoint exists in that release, that the release supports the plan's strategy and rollout
backend, and that it contains every fix the run declares in `runtime.required_fixes`.

Fix ids are rlaunch's own stable names for behaviours a run may depend on; each is listed in
`FIXES` with what it means and where it was verified. Add a release (and the fixes it contains)
here when a new runtime version is adopted; a pin the catalog does not know is refused, because
nothing about it can be proven.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

FIXES: Mapping[str, str] = MappingProxyType(
    {
        "batch-lcm-dp-validation": (
            "config validation rejects a train batch smaller than lcm(policy DP, reference DP) "
            "(skyrl_train utils.validate_batch_sizes)"
        ),
        "inference-ep-validation": (
            "config validation requires inference DP x TP == EP when EP > 1 "
            "(skyrl_train utils.validate_generator_cfg)"
        ),
        "max-ckpts-zero-rejected": (
            "max_ckpts_to_keep = 0 is rejected instead of deleting every checkpoint "
            "(skyrl_train utils.validate_cfg)"
        ),
        "final-checkpoint-on-train-end": (
            "a final checkpoint is written when training ends, whatever the step "
            "(skyrl_train trainer.train, when ckpt_interval > 0)"
        ),
    }
)


@dataclass(frozen=True)
class RuntimeRelease:
    """One released version (or known git commit) of a runtime."""

    version: str
    entrypoints: tuple[str, ...]
    """Python modules that run a job from the launch YAML."""
    fixes: frozenset[str]
    """Fix ids (keys of `FIXES`) this release contains."""


@dataclass(frozen=True)
class RuntimeProfile:
    name: str
    summary: str
    package: str
    """Distribution name in a `runtime.package` pin (`skyrl` in `skyrl==0.3.0`)."""
    releases: Mapping[str, RuntimeRelease]
    """By version string (`0.3.0`)."""
    commits: Mapping[str, RuntimeRelease]
    """Known git commits (40-hex) by commit sha; empty when only releases are catalogued."""
    strategies: frozenset[str]
    rollout_backends: frozenset[str]
    weight_sync_backends: frozenset[str]
    simulated: bool
    """True for a runtime that simulates GPUs (strategies and backends are emulated on CPU)."""
    adapter: str | None
    """Module the executor starts with the launch YAML when the runtime's own entrypoint does
    not read it (SkyRL takes `key=value` overrides); None: the entrypoint reads the YAML."""

    def entrypoints(self) -> tuple[str, ...]:
        """Every entrypoint of any catalogued release (for a pin the catalog cannot resolve)."""
        seen: dict[str, None] = {}
        for release in (*self.releases.values(), *self.commits.values()):
            seen.update(dict.fromkeys(release.entrypoints))
        return tuple(seen)


_SKYRL_0_3_0 = RuntimeRelease(
    version="0.3.0",
    entrypoints=("skyrl.train.entrypoints.main_base",),
    fixes=frozenset(FIXES),
)

_SMOKE_0_1_0 = RuntimeRelease(
    version="0.1.0",
    entrypoints=("rlaunch.runtimes.smoke",),
    fixes=frozenset(),
)

PROFILES: Mapping[str, RuntimeProfile] = MappingProxyType(
    {
        "skyrl": RuntimeProfile(
            name="skyrl",
            summary="SkyRL (skyrl-train) on GPUs",
            package="skyrl",
            releases=MappingProxyType({"0.3.0": _SKYRL_0_3_0}),
            commits=MappingProxyType({}),
            strategies=frozenset({"fsdp", "megatron"}),
            rollout_backends=frozenset({"vllm", "sglang"}),
            weight_sync_backends=frozenset({"nccl", "gloo"}),
            simulated=False,
            adapter="rlaunch.runtimes.skyrl",
        ),
        "smoke": RuntimeProfile(
            name="smoke",
            summary="rlaunch's CPU runtime: the same geometry on simulated GPUs (Ray + torch)",
            package="rlaunch",
            releases=MappingProxyType({"0.1.0": _SMOKE_0_1_0}),
            commits=MappingProxyType({}),
            strategies=frozenset({"fsdp", "megatron"}),
            rollout_backends=frozenset({"vllm"}),
            weight_sync_backends=frozenset({"nccl", "gloo"}),
            simulated=True,
            adapter=None,
        ),
    }
)


def profile(name: str) -> RuntimeProfile | None:
    return PROFILES.get(name)


def resolve(
    profile_name: str, *, package: str | None, commit: str | None
) -> RuntimeRelease | None:
    """The catalogued release a pin names, or None when the catalog does not know it."""
    found = PROFILES.get(profile_name)
    if found is None:
        return None
    if package is not None:
        _, separator, version = package.partition("==")
        return found.releases.get(version) if separator else None
    if commit is not None:
        return found.commits.get(commit)
    return None
