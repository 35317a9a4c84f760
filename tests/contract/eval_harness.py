"""Run inside a SkyRL contract env (scripts/skyrl-contract-env RELEASE), not under pytest.

    python eval_harness.py CASES_JSON RESULT_JSON

CASES_JSON maps a case id to `{"cli_args": [...]}`: the overrides the skyrl adapter passes to
SkyRL's eval-only entrypoint. For each case, take the steps
`skyrl.train.entrypoints.main_generate.main` takes before it starts Ray:
`SkyRLTrainConfig.from_cli_overrides(argv)`, then `validate_generator_cfg(cfg)`; and report what
the built config holds for the fields `EvalOnlyEntrypoint` and `skyrl.train.evaluate.evaluate`
read, with `loads_eval_dataset`: the condition of `BasePPOExp.get_eval_dataset`
(`trainer.eval_interval > 0 and data.val_data`), without which `EvalOnlyEntrypoint.run` fails its
assert. Writes one JSON object to RESULT_JSON. torch and ray are the real ones, as for
skyrl_harness.py.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any


def held(cfg: Any) -> dict[str, Any]:
    engine = cfg.generator.inference_engine
    return {
        "policy_model_path": cfg.trainer.policy.model.path,
        "val_data": list(cfg.data.val_data),
        "eval_interval": cfg.trainer.eval_interval,
        "dump_eval_results": cfg.trainer.dump_eval_results,
        "export_path": cfg.trainer.export_path,
        "colocate_all": cfg.trainer.placement.colocate_all,
        "engine_gpus": [engine.num_engines, engine.tensor_parallel_size,
                        engine.pipeline_parallel_size, engine.data_parallel_size],
        "env_class": cfg.environment.env_class,
        "eval_temperature": cfg.generator.eval_sampling_params.temperature,
        "eval_max_generate_length": cfg.generator.eval_sampling_params.max_generate_length,
        "eval_n_samples_per_prompt": cfg.generator.eval_n_samples_per_prompt,
        "eval_batch_size": cfg.trainer.eval_batch_size,
        "loads_eval_dataset": bool(cfg.trainer.eval_interval > 0 and cfg.data.val_data),
    }


def main(cases_json: str, result_json: str) -> int:
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.utils.utils import validate_generator_cfg

    results: dict[str, Any] = {}
    for case_id, case in json.loads(Path(cases_json).read_text()).items():
        outcome: dict[str, Any] = {"accepted": False, "error": None}
        try:
            cfg = SkyRLTrainConfig.from_cli_overrides(case["cli_args"])
            outcome["held"] = held(cfg)
            validate_generator_cfg(cfg)
            outcome["accepted"] = True
        except Exception as err:  # SkyRL reports config problems as assert/Value/Type errors
            last = traceback.extract_tb(err.__traceback__)[-1]
            outcome["error"] = f"{type(err).__name__}: {err}"
            outcome["where"] = f"{Path(last.filename).name} {last.name}"
        results[case_id] = outcome
    Path(result_json).write_text(json.dumps(
        {"skyrl_version": sys.modules["skyrl"].__version__, "results": results}, default=repr))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
