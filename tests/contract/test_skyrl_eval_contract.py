"""The eval stage's contract with SkyRL's eval-only entrypoint (main_generate), per release:
0.3.0 and 0.4.0, each in its own contract env, with the eval spec pinned to it.

1. Config: an eval run's launch YAML, rendered, with `trainer.export_path` made node-local as the
   skyrl adapter makes it, is built by SkyRL's own `from_cli_overrides` and accepted by
   `validate_generator_cfg` (the steps of `main_generate.main`), in the contract env
   (tests/contract/eval_harness.py); SkyRL then holds the fields its eval reads as rendered, and
   `BasePPOExp.get_eval_dataset`'s condition holds. Negative cases: an input length other than
   the prompt length is refused by SkyRL and by preflight (CTX003); `trainer.eval_interval 0`
   SkyRL accepts, but it would load no eval dataset, so preflight refuses it (RT006).
2. Dump format: the folder, the file names and the per-sample keys (`DUMP_KEYS`) the adapter
   reads are those of each release's own source (`dump_per_dataset_eval_results` in
   skyrl/train/utils/trainer_utils.py; the folder in skyrl/train/evaluate.py `evaluate`), read
   with `ast`. For 0.3.0, tests/e2e/test_skyrl_eval_only.py runs the eval-only
   entrypoint itself on this CPU and reads the files it wrote.
"""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from contract.skyrl_env import RELEASES, contract_python, pin_release
from rlaunch.preflight import run_preflight
from rlaunch.render import launch_document, skyrl_cli_args
from rlaunch.runtimes.skyrl_eval import AGGREGATED_FILE, DUMP_FOLDER, local_dump_root
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example

HARNESS = Path(__file__).with_name("eval_harness.py")
DUMP_KEYS = ("input_prompt", "output_response", "score", "stop_reason", "env_class",
             "env_extras", "data_source")
"""The keys of each sample `dump_per_dataset_eval_results` writes, in its order."""
EVAL_ENTRYPOINT = "skyrl.train.entrypoints.main_generate"
# experiments/runtimes:h100-gsm8k, the settings the GSM8K evals share with the runs.
GSM8K_SETTINGS = {"generator.inference_engine.gpu_memory_utilization": 0.85,
                  "trainer.eval_before_train": True, "trainer.eval_interval": 10}


def eval_spec(release: str = "0.3.0", **changes: Any) -> dict[str, Any]:
    data = pin_release(worked_example("colocated-1x8"), release)
    data["runtime"]["entrypoint"] = EVAL_ENTRYPOINT
    data["settings"] = dict(GSM8K_SETTINGS)
    for key, value in changes.items():
        section, _, leaf = key.partition("__")
        if leaf:
            data[section][leaf] = value
        else:
            data[section] = value
    return data


def adapter_args(data: dict[str, Any], dump_root: Path) -> list[str]:
    document = launch_document(parse_spec(data), store_prefix="/store", launcher_commit=None)
    tree = document["skyrl"]
    tree["trainer"]["export_path"] = str(dump_root)  # as rlaunch.runtimes.skyrl.main does
    return skyrl_cli_args(tree)


def errors(data: dict[str, Any]) -> list[str]:
    return [f.code for f in run_preflight(parse_spec(data, "test"), scope="spec")
            if f.severity == "error"]


@pytest.mark.parametrize("release", RELEASES)
def test_skyrl_builds_and_validates_the_rendered_eval_config(tmp_path: Path, release: str) -> None:
    dump_root = local_dump_root(tmp_path / "node-cache", "colocated-1x8@2026.11.29", "a1")
    cases = {
        "gsm8k-eval": eval_spec(release),
        "input-length": eval_spec(release, lengths__max_input_length=256),
        "no-eval-interval": eval_spec(release, settings=dict(GSM8K_SETTINGS,
                                                             **{"trainer.eval_interval": 0})),
    }
    assert errors(cases["gsm8k-eval"]) == []
    assert errors(cases["input-length"]) == ["CTX003"]
    assert errors(cases["no-eval-interval"]) == ["RT006"]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({case_id: {"cli_args": adapter_args(data, dump_root)}
                                for case_id, data in cases.items()}))
    result = tmp_path / "result.json"
    done = subprocess.run([contract_python(release), str(HARNESS), str(path), str(result)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(result.read_text())
    assert report["skyrl_version"] == release
    results = report["results"]
    assert results["gsm8k-eval"]["accepted"], results["gsm8k-eval"]
    assert results["gsm8k-eval"]["held"] == {
        "policy_model_path": "/store/qwen2.5-1.5b-instruct/2026.11.01",
        "val_data": ["/store/gsm8k-test-prompts/2026.11.30/prompts.parquet"],
        "eval_interval": 10,
        "dump_eval_results": True,
        "export_path": str(dump_root),
        "colocate_all": True,
        "engine_gpus": [8, 1, 1, 1],
        "env_class": "gsm8k",
        "eval_temperature": 0.0,
        "eval_max_generate_length": 1024,
        "eval_n_samples_per_prompt": 1,
        "eval_batch_size": 512,
        "loads_eval_dataset": True,
    }
    assert results["input-length"] == {
        "accepted": False,
        "held": dict(results["gsm8k-eval"]["held"]),
        "error": "AssertionError: max_input_length should be set equal to "
                 "trainer.max_prompt_length for single-turn generation",
        "where": "utils.py validate_generator_cfg",
    }
    # SkyRL accepts it, and would load no eval dataset: only preflight stops it (RT006).
    assert results["no-eval-interval"]["accepted"]
    assert results["no-eval-interval"]["held"]["loads_eval_dataset"] is False


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    [found] = [node for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name]
    return found


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


@pytest.mark.parametrize("release", RELEASES)
def test_the_dump_format_is_skyrls_own(release: str) -> None:
    done = subprocess.run(
        [contract_python(release), "-c",
         "import os, skyrl; print(os.path.dirname(skyrl.__file__))"],
        capture_output=True, text=True, timeout=120, check=True)
    skyrl = Path(done.stdout.strip())
    utils = ast.parse((skyrl / "train" / "utils" / "trainer_utils.py").read_text())
    dump = _function(utils, "dump_per_dataset_eval_results")
    [entry] = [node.value for node in ast.walk(dump) if isinstance(node, ast.Assign)
               and any(isinstance(t, ast.Name) and t.id == "entry" for t in node.targets)]
    assert isinstance(entry, ast.Dict)
    assert tuple(ast.literal_eval(key) for key in entry.keys if key is not None) == DUMP_KEYS
    assert AGGREGATED_FILE in _strings(dump)
    evaluate = _function(ast.parse((skyrl / "train" / "evaluate.py").read_text()), "evaluate")
    assert set(DUMP_FOLDER) <= _strings(evaluate)
    assert "dump_eval_results" in {n.attr for n in ast.walk(evaluate)
                                   if isinstance(n, ast.Attribute)}
