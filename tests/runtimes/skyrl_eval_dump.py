"""An eval-only dump written the way SkyRL 0.3.0 writes it (no GPU here to run the real eval).

`skyrl.train.evaluate.evaluate` with `global_step=None` (main_generate's
`EvalOnlyEntrypoint.run`) computes its metrics with `calculate_per_dataset_metrics`
(skyrl/train/utils/trainer_utils.py) and `get_metrics_from_generator_output`
(skyrl/train/generators/utils.py), adds `eval/all/<rollout metric>`, and hands them to
`dump_per_dataset_eval_results` (trainer_utils.py), which writes into
`Path(trainer.export_path) / "dumped_evals" / "eval_only"`:
- `<data source with / as _>.jsonl`: per sample, in that key order, `input_prompt`,
  `output_response`, `score`, `stop_reason`, `env_class`, `env_extras`, `data_source`, each line
  `json.dumps(entry, ensure_ascii=False)`;
- `aggregated_results.jsonl`: `json.dumps(eval_metrics, ensure_ascii=False)` and a newline.
tests/contract/test_skyrl_eval_contract.py reads those names and keys out of SkyRL 0.3.0's own
source, so this file cannot drift from it unnoticed.

Run as a program (`python -m skyrl.train.entrypoints.main_generate` through a stand-in package
the adapter test writes), it stands in for SkyRL's eval entrypoint: it checks the staged eval file
was staged and writes SAMPLES' dump under its `trainer.export_path` override.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

DUMP_KEYS = ("input_prompt", "output_response", "score", "stop_reason", "env_class",
             "env_extras", "data_source")
ROLLOUT_METRICS = {"generate/avg_num_tokens": 11.5, "generate/min_num_tokens": 7}

# Three GSM8K answers from two data sources (one with a `/`, as a Hub name has); rewards as the
# gsm8k env gives them, the last as per-token rewards (the reward on the last token).
SAMPLES: list[dict[str, Any]] = [
    {"uid": "0", "input_prompt": "Ann has 3 apples... ####", "output_response": "#### 1003",
     "score": 1.0, "stop_reason": "stop", "env_class": "gsm8k",
     "env_extras": {"data_source": "openai/gsm8k", "reward_spec": {"ground_truth": "1003"}}},
    {"uid": "1", "input_prompt": "Bo has 2 pens... ####", "output_response": "#### 5",
     "score": 0.0, "stop_reason": "length", "env_class": "gsm8k",
     "env_extras": {"data_source": "openai/gsm8k", "reward_spec": {"ground_truth": "4"}}},
    {"uid": "2", "input_prompt": "Cy runs 4 km... ####", "output_response": "#### 8 ✓",
     "score": [0.0, 0.0, 1.0], "stop_reason": "stop", "env_class": "gsm8k",
     "env_extras": {"data_source": "local", "reward_spec": {"ground_truth": "8"}}},
]


def _trajectory(score: Any) -> float:
    return float(sum(score)) if isinstance(score, list) else float(score)


def _last(score: Any) -> float:
    return float(score[-1]) if isinstance(score, list) else float(score)


def _metrics(samples: list[dict[str, Any]]) -> dict[str, float]:
    """get_metrics_from_generator_output: mean trajectory reward, pass@n over uids (any last
    reward > 0), mean positive reward."""
    scores = [sample["score"] for sample in samples]
    by_uid: dict[str, list[float]] = {}
    for sample in samples:
        by_uid.setdefault(sample["uid"], []).append(_last(sample["score"]))
    positive = [sum(max(r, 0.0) for r in s) if isinstance(s, list) else max(float(s), 0.0)
                for s in scores]
    return {
        "avg_score": sum(_trajectory(s) for s in scores) / len(scores),
        "pass_at_n": sum(1 for v in by_uid.values() if any(r > 0 for r in v)) / len(by_uid),
        "mean_positive_reward": sum(positive) / len(positive),
    }


def eval_metrics(samples: list[dict[str, Any]], n: int = 1) -> dict[str, float]:
    """`evaluate`'s metrics: per data source, then `eval/all/`, then the rollout metrics."""
    metrics: dict[str, float] = {}
    sources: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        source = sample["env_extras"].get("data_source") or "unknown"
        sources.setdefault(source, []).append(sample)
    for source, subset in sources.items():
        found = _metrics(subset)
        name = source.replace("/", "_")
        metrics[f"eval/{name}/avg_score"] = found["avg_score"]
        metrics[f"eval/{name}/pass_at_{n}"] = found["pass_at_n"]
        metrics[f"eval/{name}/mean_positive_reward"] = found["mean_positive_reward"]
    overall = _metrics(samples)
    metrics.update({
        "eval/all/avg_score": overall["avg_score"],
        f"eval/all/pass_at_{n}": overall["pass_at_n"],
        "eval/all/mean_positive_reward": overall["mean_positive_reward"],
    })
    for key, value in ROLLOUT_METRICS.items():
        metrics[f"eval/all/{key}"] = value
    return metrics


def write_dump(folder: Path, samples: list[dict[str, Any]] = SAMPLES, n: int = 1) -> None:
    """dump_per_dataset_eval_results' files for `samples` in `folder` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    sources: dict[str, list[dict[str, Any]]] = {}
    for sample in samples:
        sources.setdefault(sample["env_extras"].get("data_source") or "unknown", []).append(sample)
    for source, subset in sources.items():
        with open(folder / f"{source.replace('/', '_')}.jsonl", "w") as handle:
            for sample in subset:
                entry = {key: sample[key] for key in DUMP_KEYS if key != "data_source"}
                entry["data_source"] = source
                handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    with open(folder / "aggregated_results.jsonl", "w") as handle:
        handle.write(json.dumps(eval_metrics(samples, n), ensure_ascii=False) + "\n")


def _override(name: str) -> Any:
    """An override's value, read as SkyRL's CLI parser reads it (YAML)."""
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        if key == name:
            return yaml.safe_load(value)
    raise SystemExit(f"no override {name}")


def stand_in_main() -> int:
    [val_file] = _override("data.val_data")
    # The adapter tests' inputs are small test artifacts: the staged folder, not its file.
    if not Path(val_file).parent.is_dir():
        print(f"stand-in: the eval data {val_file} is not staged", flush=True)
        return 4
    write_dump(Path(_override("trainer.export_path")) / "dumped_evals" / "eval_only")
    print("stand-in: dumped 3 eval samples", flush=True)
    return 0
