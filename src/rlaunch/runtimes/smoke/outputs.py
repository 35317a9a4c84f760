"""The terminal manifest: what the run produced, written last (docs/smoke-runtime.md)."""

from __future__ import annotations

from pathlib import Path

from rlaunch.runtimes.smoke.config import SmokeConfig

MANIFEST_SCHEMA_VERSION = 1


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def terminal_manifest(
    config: SmokeConfig,
    *,
    total_steps: int,
    history: list[dict],
    evals: dict[str, dict],
    export_path: Path,
    weights_sha256: str,
    start_step: int,
    time_to_first_step_s: float | None,
    wall_time_s: float,
    timings_s: dict[str, float],
) -> dict:
    """`history` holds every step's record, earlier attempts' included (from the checkpoint)."""
    this_attempt = [r for r in history if r["step"] > start_step]
    rewards = [r["reward_mean"] for r in history]
    solved = [r["solved_fraction"] for r in history]
    summary = {
        "steps": len(history),
        "steps_this_attempt": len(this_attempt),
        "reward_mean_first5": mean(rewards[:5]),
        "reward_mean_last5": mean(rewards[-5:]),
        "solved_first5": mean(solved[:5]),
        "solved_last5": mean(solved[-5:]),
        "kl_last": history[-1]["kl"] if history else 0.0,
        "seconds_per_step": mean([r["step_time_s"] for r in this_attempt]),
        "time_to_first_step_s": time_to_first_step_s,
        "wall_time_s": wall_time_s,
        # [phase, seconds] pairs, in the order the phases first ended.
        "timings_s": [[name, round(seconds, 3)] for name, seconds in timings_s.items()],
        "eval": evals,
    }
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "status": "succeeded",
        "run_id": config.run_id,
        "fingerprint": config.fingerprint,
        "runtime_fingerprint": config.runtime_fingerprint,
        "final_step": total_steps,
        "resumed_from_step": start_step or None,
        "export_path": str(export_path),
        "weights_sha256": weights_sha256,
        "metrics": summary,
    }
