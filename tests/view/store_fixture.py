"""A store holding runs the way a launch and the smoke runtime leave them: ledger records written
through `rlaunch.ledger`, metrics through the runtime's own `MetricsSink`, a job.log per attempt."""

from __future__ import annotations

import math
from pathlib import Path

from rlaunch.ledger import Ledger, set_status, set_submission, start_attempt
from rlaunch.paths import run_paths
from rlaunch.render import render_launch
from rlaunch.runtimes.smoke.metrics import MetricsSink
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.status import AttemptStatus


def step_record(step: int, scale: float) -> dict[str, float | int]:
    return {"step": step, "reward_mean": round(scale * (0.3 + 0.02 * step), 6),
            "solved_fraction": 0.25, "kl": round(0.001 * math.sqrt(step), 6),
            "policy_loss": -0.01, "tokens_per_s": 1000.0, "step_time_s": 0.5}


def add_run(store: Path, name: str, version: str, *, attempts: list[tuple[str, range, str]],
            scale: float = 1.0, wandb: dict[str, str] | None = None,
            evals: bool = True) -> None:
    """One run with the given attempts: (attempt id, the steps it trained, its final status)."""
    ledger = Ledger(str(store))
    paths = run_paths(str(store), name, version)
    for attempt_id, steps, status in attempts:
        yaml_path = store.parent / "dist" / name / version / "launch.yaml"
        yaml_path.parent.mkdir(parents=True, exist_ok=True)
        # The launch YAML a launch writes (rendered for real, named and logged as this run).
        spec = worked_example("colocated-1x8")
        spec.update(name=name, version=version)
        spec["model"]["name"] = "countdown-model"
        spec["execution"]["wandb"] = wandb
        yaml_path.write_text(render_launch(parse_spec(spec), store_prefix=str(store),
                                           launcher_commit=None))

        def start(record: dict, attempt_id: str = attempt_id, yaml_path: Path = yaml_path,
                  status: str = status) -> None:
            start_attempt(record, attempt_id=attempt_id, fingerprint="sha256:" + "a" * 64,
                          runtime_fingerprint="sha256:" + "b" * 64, geometry={"policy": 2},
                          launcher_commit="c" * 40, yaml_digest="sha256:" + "d" * 64,
                          yaml_path=str(yaml_path), smoke_of=None, skip_smoke_gate=None)
            set_submission(record, attempt_id, {
                "executor": "local", "submission_id": f"rlaunch-{name}-{attempt_id}",
                "address": "http://127.0.0.1:1", "attempt_id": attempt_id})
            set_status(record, attempt_id, AttemptStatus(status))

        ledger.update(name, version, start)
        folder = Path(paths.attempts_root) / attempt_id
        sink = MetricsSink(folder, logger="console", project="p", entity=None,
                           run_name=f"{name}@{version}", config={}, say=lambda line: None)
        if evals and steps.start == 1:
            sink.log({"eval": "initial", "reward_mean": 0.2, "step": 0})
        for step in steps:
            sink.log(step_record(step, scale))
        if evals and status == "SUCCEEDED":
            sink.log({"eval": "final", "reward_mean": 0.6 * scale, "step": steps.stop - 1})
        sink.close()
        (folder / "job.log").write_text(f"{name}@{version} attempt {attempt_id} log\n")
