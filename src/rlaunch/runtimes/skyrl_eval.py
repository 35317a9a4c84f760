"""An eval stage on SkyRL: what SkyRL 0.3.0's eval-only entrypoint leaves, turned into the report.

A run whose runtime entrypoint is `skyrl.train.entrypoints.main_generate` scores its model on
its eval data and trains nothing (docs/pipelines.md, "Eval stages on GPUs").
`EvalOnlyEntrypoint.run` (skyrl/train/entrypoints/main_generate.py) calls
`skyrl.train.evaluate.evaluate` with `global_step=None`; with `trainer.dump_eval_results` on, that
writes into the folder `Path(trainer.export_path) / "dumped_evals" / "eval_only"` through
`dump_per_dataset_eval_results` (skyrl/train/utils/trainer_utils.py):
- `<data source>.jsonl` per data source (`sanitize_data_source`: `/` becomes `_`, none is
  `unknown`), one JSON object per sample: `input_prompt`, `output_response` (both decoded by the
  tokenizer), `score` (the reward: a number, or a list of per-token rewards), `stop_reason`,
  `env_class`, `env_extras`, `data_source`;
- `aggregated_results.jsonl`: one line, the eval metrics (`eval/<source>/avg_score`,
  `eval/<source>/pass_at_<n>`, `eval/<source>/mean_positive_reward`, the same under `eval/all/`,
  and `eval/all/<rollout metric>`).
That folder is a pathlib path, written with `open` (not through fsspec, unlike checkpoints), so
the adapter points `trainer.export_path` at a node-local folder (`local_dump_root`) and, once
SkyRL exits 0, writes the report artifact into the run's export root in the store:
`report.json` (the CPU `greedy_eval` report's shape: per model its identity and mean reward, plus
SkyRL's own metrics) and `samples.jsonl` (one line per answer with its reward).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from rlaunch.paths import join
from rlaunch.render import LaunchDocument
from rlaunch.runtimes.skyrl_outputs import OutputError, manifest_of
from rlaunch.store.fs import open_location

DUMP_FOLDER = ("dumped_evals", "eval_only")
AGGREGATED_FILE = "aggregated_results.jsonl"
REPORT_FILE = "report.json"
SAMPLES_FILE = "samples.jsonl"
REPORT_SCHEMA_VERSION = 1
_PASS_AT = re.compile(r"^eval/all/pass_at_(\d+)$")
_SAMPLE_KEYS = ("input_prompt", "output_response", "score", "data_source")
_AVG_TOLERANCE = 1e-9


def dump_folder(export_path: Path) -> Path:
    """Where SkyRL 0.3.0's eval-only run dumps its results under `trainer.export_path`."""
    return export_path.joinpath(*DUMP_FOLDER)


def _trajectory_score(score: Any, where: str) -> float:
    """A sample's reward as SkyRL's `get_metrics_from_generator_output` counts it: the number,
    or the sum of per-token rewards."""
    if isinstance(score, bool) or not isinstance(score, (int, float, list)):
        raise OutputError(f"{where}: score {score!r} is neither a number nor a list of numbers")
    if isinstance(score, list):
        if not score or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                for v in score):
            raise OutputError(f"{where}: score {score!r} is not a non-empty list of numbers")
        return float(sum(score))
    return float(score)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise OutputError(f"{path}:{number}: not JSON ({err.msg})") from None
        if not isinstance(row, dict):
            raise OutputError(f"{path}:{number}: a line is not a JSON object")
        rows.append(row)
    return rows


def read_dump(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """SkyRL's eval metrics and every sample, in file-name then line order."""
    aggregated = folder / AGGREGATED_FILE
    if not aggregated.is_file():
        raise OutputError(
            f"SkyRL exited 0 but wrote no {AGGREGATED_FILE} in {folder}: its eval-only run dumps "
            "there only with trainer.dump_eval_results on, on the node its eval task ran on "
            "(main_generate's eval_entrypoint, a Ray task); run the eval on a one-node "
            "allocation, or with RLAUNCH_NODE_CACHE on a filesystem every node shares"
        )
    lines = _read_jsonl(aggregated)
    if len(lines) != 1:
        raise OutputError(f"{aggregated}: {len(lines)} lines; SkyRL writes exactly one")
    samples: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.jsonl")):
        if path.name == AGGREGATED_FILE:
            continue
        for number, row in enumerate(_read_jsonl(path), start=1):
            missing = [key for key in _SAMPLE_KEYS if key not in row]
            if missing:
                raise OutputError(f"{path}:{number}: no {', '.join(missing)} (SkyRL 0.3.0's "
                                  "dump_per_dataset_eval_results writes them)")
            samples.append(dict(row, reward=_trajectory_score(row["score"],
                                                              f"{path}:{number}")))
    if not samples:
        raise OutputError(f"SkyRL exited 0 but dumped no samples in {folder}")
    return lines[0], samples


def build_report(launch: LaunchDocument, metrics: dict[str, Any],
                 samples: list[dict[str, Any]]) -> dict[str, Any]:
    """report.json of an eval stage; refuses a dump whose mean reward is not SkyRL's own
    `eval/all/avg_score` (the files would not be what SkyRL scored)."""
    mean = sum(sample["reward"] for sample in samples) / len(samples)
    avg_score = metrics.get("eval/all/avg_score")
    if not isinstance(avg_score, (int, float)) or not math.isclose(
            mean, avg_score, rel_tol=_AVG_TOLERANCE, abs_tol=_AVG_TOLERANCE):
        raise OutputError(
            f"the dumped samples' mean reward {mean!r} is not SkyRL's eval/all/avg_score "
            f"{avg_score!r} in {AGGREGATED_FILE}: the dump is incomplete or from another run"
        )
    pass_at = sorted((int(m[1]), key) for key in metrics if (m := _PASS_AT.match(key)))
    skyrl = launch.skyrl_tree()
    inputs = launch.inputs
    model: dict[str, Any] = {"model": inputs["model"].identity, "mean_reward": mean,
                             "solved_fraction": sum(s["reward"] > 0 for s in samples)
                             / len(samples)}
    if pass_at:
        model[f"pass_at_{pass_at[0][0]}"] = metrics[pass_at[0][1]]
    return {
        "schema_version": REPORT_SCHEMA_VERSION,
        "run": launch.run.id,
        "fingerprint": launch.run.fingerprint,
        "runtime": f"skyrl {launch.runtime.entrypoint}",
        "data": inputs["eval_data"].identity if "eval_data" in inputs else None,
        "environment": skyrl.get("environment", {}).get("env_class"),
        "rows": len(samples),
        "models": {"model": model},
        "skyrl_metrics": metrics,
    }


def _samples_jsonl(samples: list[dict[str, Any]]) -> str:
    return "".join(
        json.dumps({"model": "model", "data_source": s["data_source"],
                    "prompt": s["input_prompt"], "completion": s["output_response"],
                    "reward": s["reward"], "stop_reason": s.get("stop_reason")},
                   sort_keys=True, ensure_ascii=False) + "\n"
        for s in samples
    )


def eval_manifest(launch: LaunchDocument, folder: Path, *, attempt_id: str,
                  wandb_url: str | None) -> dict[str, Any]:
    """Read SkyRL's dump in `folder`, write report.json and samples.jsonl into the export root
    (samples first, the report last), and return the terminal manifest: the export is the
    report folder, with the report's path, mean reward and rows."""
    metrics, samples = read_dump(folder)
    report = build_report(launch, metrics, samples)
    root = launch.artifacts.export_root
    location = open_location(root, what="artifacts.export_root")
    location.fs.makedirs(location.root, exist_ok=True)
    location.fs.pipe_file(join(location.root, SAMPLES_FILE),
                          _samples_jsonl(samples).encode("utf-8"))
    location.fs.pipe_file(join(location.root, REPORT_FILE),
                          (json.dumps(report, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    manifest = manifest_of(launch, attempt_id=attempt_id, wandb_url=wandb_url, final_step=None,
                           export_path=root)
    manifest.update(report_path=join(root, REPORT_FILE),
                    mean_reward=report["models"]["model"]["mean_reward"], rows=report["rows"])
    return manifest


def local_dump_root(cache: Path, run_id: str, attempt_id: str) -> Path:
    """The node-local folder the adapter gives SkyRL as `trainer.export_path` for an eval."""
    return cache / "evals" / run_id.replace("@", "-") / attempt_id
