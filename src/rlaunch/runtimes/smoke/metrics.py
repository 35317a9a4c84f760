"""Progress: one console line per step, the same numbers as JSON lines, and W&B when asked.

    {attempts_root}/{attempt id}/metrics.jsonl    one JSON object per step (and per eval)

The attempt id is $RLAUNCH_ATTEMPT_ID (set by the executor), else a UTC timestamp.
W&B runs offline when WANDB_API_KEY is not set; when wandb is not installed the run goes
on with console and JSONL only (wandb is not in the runtime lock).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from rlaunch.paths import ATTEMPT_ENV

METRICS_FILE = "metrics.jsonl"


def attempt_id() -> str:
    return os.environ.get(ATTEMPT_ENV) or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def step_line(record: dict[str, Any], total_steps: int) -> str:
    return (
        f"step {record['step']}/{total_steps} | reward {record['reward_mean']:.3f} "
        f"(solved {record['solved_fraction']:.2f}) | kl {record['kl']:.4f} | "
        f"loss {record['policy_loss']:+.4f} | {record['tokens_per_s']:.0f} tok/s | "
        f"{record['step_time_s']:.2f} s/step"
    )


class MetricsSink:
    def __init__(
        self,
        directory: Path,
        *,
        logger: str,
        project: str,
        entity: str | None,
        run_name: str,
        config: dict[str, Any],
        say=print,
    ) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / METRICS_FILE
        self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close)
        self._say = say
        self._wandb = None
        if logger == "wandb":
            self._wandb = self._start_wandb(project, entity, run_name, config)

    def _start_wandb(self, project: str, entity: str | None, run_name: str, config: dict):
        try:
            import wandb  # lazy: optional, not in the runtime lock; the run goes on without it
        except ImportError:
            self._say("wandb: not installed; logging to the console and metrics.jsonl only")
            return None
        mode = "online" if os.environ.get("WANDB_API_KEY") else "offline"
        if mode == "offline":
            self._say("wandb: WANDB_API_KEY is not set; logging offline into the attempt folder")
        return wandb.init(project=project, entity=entity, name=run_name, config=config,
                          dir=str(self.directory), mode=mode)

    def log(self, record: dict[str, Any], line: str | None = None) -> None:
        self._handle.write(json.dumps(record, sort_keys=True) + "\n")
        self._handle.flush()
        if line:
            self._say(line)
        if self._wandb is not None:
            numbers = {k: v for k, v in record.items() if isinstance(v, (int, float))}
            self._wandb.log(numbers, step=int(record.get("step", 0)))

    def close(self) -> None:
        self._handle.close()
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None
