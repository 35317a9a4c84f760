"""The `greedy_eval` builder: an eval stage's report, built like any artifact.

    greedy_eval      deps {data, <model slot>...}; config: environment, rows, max_new_tokens
                     -> report.json (metrics per model), samples.jsonl (one line per answer)

Every dep but `data` is a model to score: a model artifact or another run's export (a pipeline
stage), so one report compares the stages of a chain; `data` is a countdown_data dataset. Each
model answers the first `rows` problems of the data's eval.parquet greedily on CPU
(the smoke runtime's eval: rlaunch.models.generate at temperature 0, one thread, so the report is
the same bytes on every build) and the task's reward scores each answer. The report is cached by
fingerprint like any artifact: the same model, data and config give the same identity and are
reused, never evaluated again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

import torch

from rlaunch.builders.base import AnyArtifact, BuildError, Built, Log, expect_type
from rlaunch.builders.config import parse_config
from rlaunch.models.generate import sample
from rlaunch.models.tiny import ModelFormatError, load_pretrained
from rlaunch.spec.artifacts import BuiltArtifact, identity
from rlaunch.spec.builder_configs import GreedyEvalConfig
from rlaunch.tasks.countdown import CORRECT_REWARD, reward
from rlaunch.tasks.parquet import read_countdown
from rlaunch.tasks.prompts import EVAL_FILE

REPORT_FILE = "report.json"
SAMPLES_FILE = "samples.jsonl"
_BATCH = 256


class GreedyEvalBuilder:
    name = "greedy_eval"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path,
              log: Log) -> Built:
        expect_type(self.name, artifact, BuiltArtifact)
        ident = identity(artifact)
        config = parse_config(GreedyEvalConfig, artifact)
        models = sorted(slot for slot in deps if slot != "data")
        if "data" not in deps or not models:
            raise BuildError(
                f"{ident}: greedy_eval needs deps `data` (a countdown_data dataset) and at least "
                f"one model slot (a model or an rl_run's export, e.g. model=\":grpo\"); it has "
                f"{', '.join(sorted(deps)) or 'none'}"
            )
        problems = read_countdown(deps["data"] / EVAL_FILE, "deps.data")[: config.rows]
        report: dict[str, Any] = {
            "data": _dep(artifact, "data"), "environment": config.environment,
            "rows": len(problems), "max_new_tokens": config.max_new_tokens, "temperature": 0.0,
            "models": {},
        }
        with (out_dir / SAMPLES_FILE).open("w", encoding="utf-8") as samples:
            for slot in models:
                rewards = _score(ident, slot, deps[slot], problems, config, samples)
                metrics = {
                    "model": _dep(artifact, slot),
                    "mean_reward": sum(rewards) / len(rewards),
                    "solved_fraction": sum(v == CORRECT_REWARD for v in rewards) / len(rewards),
                }
                report["models"][slot] = metrics
                log(f"{ident}: {slot} {metrics['model']} on {len(problems)} problems of "
                    f"{report['data']}: mean reward {metrics['mean_reward']:.3f}, solved "
                    f"{metrics['solved_fraction']:.3f}")
        (out_dir / REPORT_FILE).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        return Built(rows=len(problems))


def _score(ident: str, slot: str, folder: Path, problems: list[dict], config: GreedyEvalConfig,
           samples: TextIO) -> list[float]:
    """One greedy answer per problem from the model in `folder`, each scored by the reward;
    one line per problem into `samples`."""
    try:
        model, tokenizer = load_pretrained(folder)
    except ModelFormatError as err:
        raise BuildError(f"{ident}: deps.{slot}: {err}") from None
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: the same answers on every build
    try:
        texts: list[str] = []
        for start in range(0, len(problems), _BATCH):
            chunk = problems[start:start + _BATCH]
            texts += sample(model, tokenizer, [p["prompt"] for p in chunk],
                            max_new_tokens=config.max_new_tokens, temperature=0.0).texts
    finally:
        torch.set_num_threads(threads)
    rewards = [reward(problem, text) for problem, text in zip(problems, texts)]
    for problem, text, value in zip(problems, texts, rewards):
        samples.write(json.dumps({"model": slot, "id": problem["id"], "prompt": problem["prompt"],
                                  "completion": text, "reward": value}, sort_keys=True) + "\n")
    return rewards


def _dep(artifact: AnyArtifact, slot: str) -> str:
    deps = artifact.deps if isinstance(artifact, BuiltArtifact) else {}
    return identity(deps[slot])
