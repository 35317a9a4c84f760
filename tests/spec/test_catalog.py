"""The runtime catalog (rlaunch/spec/catalog.py)."""

from __future__ import annotations

from rlaunch.spec.catalog import FIXES, PROFILES, is_eval_entrypoint, profile, resolve


def test_profiles() -> None:
    assert sorted(PROFILES) == ["skyrl", "smoke"]
    skyrl = profile("skyrl")
    assert skyrl is not None
    assert skyrl.entrypoints() == ("skyrl.train.entrypoints.main_base",
                                   "skyrl.train.entrypoints.main_generate")
    assert is_eval_entrypoint("skyrl", "skyrl.train.entrypoints.main_generate")
    assert not is_eval_entrypoint("skyrl", "skyrl.train.entrypoints.main_base")
    assert not is_eval_entrypoint("smoke", "rlaunch.runtimes.smoke")
    assert not is_eval_entrypoint("verl", "skyrl.train.entrypoints.main_generate")
    assert (skyrl.strategies, skyrl.rollout_backends) == (
        frozenset({"fsdp", "megatron"}), frozenset({"vllm", "sglang"})
    )
    smoke = profile("smoke")
    assert smoke is not None and smoke.simulated
    assert smoke.entrypoints() == ("rlaunch.runtimes.smoke",)
    assert profile("verl") is None


def test_resolve_pins() -> None:
    release = resolve("skyrl", package="skyrl==0.3.0", commit=None)
    assert release is not None and release.version == "0.3.0"
    assert release.fixes == frozenset(FIXES)
    upgraded = resolve("skyrl", package="skyrl==0.4.0", commit=None)
    assert upgraded is not None and upgraded.settings.label == "SkyRL 0.4.0"
    assert upgraded.fixes == frozenset(FIXES)
    assert upgraded.settings.elsewhere == {}
    assert release.settings.elsewhere["trainer.algorithm.cispo.cispo_anchor"] == "SkyRL 0.4.0"
    assert resolve("skyrl", package="skyrl==0.2.9", commit=None) is None
    assert resolve("skyrl", package="skyrl", commit=None) is None
    assert resolve("skyrl", package=None, commit="c" * 40) is None
    assert resolve("nope", package="skyrl==0.3.0", commit=None) is None
    smoke = resolve("smoke", package="rlaunch==0.1.0", commit=None)
    assert smoke is not None and smoke.fixes == frozenset()
