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

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from types import MappingProxyType

from rlaunch.spec import skyrl_fields_0_3_0, skyrl_fields_0_4_0
from rlaunch.spec.settings import SettingsCatalog

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
    settings: SettingsCatalog = field(default_factory=lambda: SettingsCatalog("this release"))
    """The extra settings (a run's `settings`) the release reads, by SkyRL's dotted names."""
    eval_entrypoints: frozenset[str] = frozenset()
    """The entrypoints among `entrypoints` that only evaluate: they score the model on the eval
    data and train nothing (a run launched on one is an eval stage, docs/pipelines.md)."""


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
    environments: frozenset[str] | None
    """The tasks (SkyRL `env_class`) the runtime has; None when the catalog does not list them
    (SkyRL's registry is read by the handoff check, on the inputs, before the first GPU)."""
    estimators: frozenset[str] | None
    """The advantage estimators the runtime runs; None: every one the RunSpec allows."""
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


def _beside(releases: Mapping[str, RuntimeRelease]) -> Mapping[str, RuntimeRelease]:
    """The releases of one runtime, each settings catalog told which names a sibling has and it
    lacks (the newest sibling that has a name is the one named)."""
    out: dict[str, RuntimeRelease] = {}
    for version, release in releases.items():
        elsewhere: dict[str, str] = {}
        for other in sorted(releases.values(), key=lambda r: _version_key(r.version)):
            if other is release:
                continue
            for name in other.settings.fields:
                if name not in release.settings.fields:
                    elsewhere[name] = other.settings.label
        settings = replace(release.settings, elsewhere=MappingProxyType(elsewhere))
        out[version] = replace(release, settings=settings)
    return MappingProxyType(out)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


SKYRL_0_3_0_SETTINGS = SettingsCatalog.generated(
    "SkyRL 0.3.0", skyrl_fields_0_3_0.FIELDS, skyrl_fields_0_3_0.SECTIONS
)
SKYRL_0_4_0_SETTINGS = SettingsCatalog.generated(
    "SkyRL 0.4.0", skyrl_fields_0_4_0.FIELDS, skyrl_fields_0_4_0.SECTIONS
)

SKYRL_EVAL_ENTRYPOINT = "skyrl.train.entrypoints.main_generate"
"""SkyRL's eval-only entrypoint (0.3.0 and 0.4.0): `main` builds the config with
`from_cli_overrides`, checks it with `validate_generator_cfg`, and `EvalOnlyEntrypoint.run` scores
`trainer.policy.model.path` on `data.val_data` with `skyrl.train.evaluate.evaluate`
(skyrl/train/entrypoints/main_generate.py; 0.3.0 uses `evaluate_step_wise` instead when
`generator.step_wise_trajectories` is set, 0.4.0 always `evaluate`)."""

_SKYRL_0_3_0 = RuntimeRelease(
    version="0.3.0",
    entrypoints=("skyrl.train.entrypoints.main_base", SKYRL_EVAL_ENTRYPOINT),
    fixes=frozenset(FIXES),
    settings=SKYRL_0_3_0_SETTINGS,
    eval_entrypoints=frozenset({SKYRL_EVAL_ENTRYPOINT}),
)

# The four fixes are in 0.4.0's skyrl/train/utils/utils.py (validate_batch_sizes' lcm,
# validate_inference_engine_cfg's DP x TP == EP, validate_cfg's max_ckpts_to_keep == 0) and
# skyrl/train/trainer.py (`train` saves a final checkpoint when ckpt_interval > 0), as in 0.3.0.
_SKYRL_0_4_0 = replace(_SKYRL_0_3_0, version="0.4.0", settings=SKYRL_0_4_0_SETTINGS)

# The SkyRL settings the smoke runtime reads (rlaunch.runtimes.smoke.config.load_config); every
# other name would be silently ignored there, so it is refused.
SMOKE_SETTINGS = (
    "trainer.policy.optimizer_config.weight_decay",
    "trainer.policy.optimizer_config.adam_betas",
    "trainer.policy.optimizer_config.max_grad_norm",
    "trainer.algorithm.grpo_norm_by_std",
)

# What the smoke runtime can run (rlaunch.runtimes.smoke.config.load_config refuses the rest).
SMOKE_ENVIRONMENTS = ("countdown",)
SMOKE_ESTIMATORS = ("grpo", "rloo")

_SMOKE_0_1_0 = RuntimeRelease(
    version="0.1.0",
    entrypoints=("rlaunch.runtimes.smoke",),
    fixes=frozenset(),
    settings=SettingsCatalog.generated(
        "the smoke runtime 0.1.0", skyrl_fields_0_3_0.FIELDS, skyrl_fields_0_3_0.SECTIONS,
        only=SMOKE_SETTINGS,
    ),
)

PROFILES: Mapping[str, RuntimeProfile] = MappingProxyType(
    {
        "skyrl": RuntimeProfile(
            name="skyrl",
            summary="SkyRL (skyrl-train) on GPUs",
            package="skyrl",
            releases=_beside({"0.3.0": _SKYRL_0_3_0, "0.4.0": _SKYRL_0_4_0}),
            commits=MappingProxyType({}),
            strategies=frozenset({"fsdp", "megatron"}),
            rollout_backends=frozenset({"vllm", "sglang"}),
            weight_sync_backends=frozenset({"nccl", "gloo"}),
            environments=None,
            estimators=None,
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
            environments=frozenset(SMOKE_ENVIRONMENTS),
            estimators=frozenset(SMOKE_ESTIMATORS),
            simulated=True,
            adapter=None,
        ),
    }
)


def is_eval_entrypoint(profile_name: str, entrypoint: str) -> bool:
    """Whether `entrypoint` only evaluates in some catalogued release of the profile."""
    found = PROFILES.get(profile_name)
    if found is None:
        return False
    releases = (*found.releases.values(), *found.commits.values())
    return any(entrypoint in release.eval_entrypoints for release in releases)


def profile(name: str) -> RuntimeProfile | None:
    return PROFILES.get(name)


@lru_cache(maxsize=64)
def resolve(
    profile_name: str, *, package: str | None, commit: str | None
) -> RuntimeRelease | None:
    """The catalogued release a pin names, or None when the catalog does not know it (cached:
    the catalog is fixed, and every rule that reads a setting asks)."""
    found = PROFILES.get(profile_name)
    if found is None:
        return None
    if package is not None:
        _, separator, version = package.partition("==")
        return found.releases.get(version) if separator else None
    if commit is not None:
        return found.commits.get(commit)
    return None


@lru_cache(maxsize=64)
def settings_catalog(
    profile_name: str, *, package: str | None, commit: str | None
) -> SettingsCatalog | str:
    """The settings catalog of a pinned release, or why there is none (the fix included)."""
    release = resolve(profile_name, package=package, commit=commit)
    if release is not None:
        return release.settings
    found = PROFILES.get(profile_name)
    pin = package if package is not None else f"commit {commit}"
    if found is None:
        return f"the runtime profile {profile_name!r} is not in rlaunch's catalog"
    known = ", ".join(sorted(found.releases)) or "none"
    return (f"{pin} is not a release rlaunch's catalog lists settings for (catalogued "
            f"{found.name} releases: {known}); pin a catalogued release, or add this one to "
            f"src/rlaunch/spec/catalog.py with its field list (scripts/gen-skyrl-fields)")
