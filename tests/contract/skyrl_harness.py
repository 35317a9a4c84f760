"""Run inside a SkyRL contract env (scripts/skyrl-contract-env RELEASE), not under pytest.

    python skyrl_harness.py CASES_YAML RESULT_JSON

CASES_YAML maps a case id to `{skyrl: <a launch YAML's skyrl subtree>, cli_args: [...] | null}`.
For each case, build `SkyRLTrainConfig` with the release's own loader,
`SkyRLTrainConfig.from_dict_config(OmegaConf.create(subtree))`, and, where `cli_args` are given,
also with `SkyRLTrainConfig.from_cli_overrides(cli_args)` (what the entrypoint
`skyrl.train.entrypoints.main_base` does with `sys.argv[1:]`); then run SkyRL's own
`validate_cfg`. Writes one JSON object to RESULT_JSON (SkyRL itself prints and logs, so not to
stdout): per id, accepted or the error SkyRL raised, and what the built config holds; and the
versions of SkyRL, Python, torch and ray that ran it.

Nothing is stood in for: each release's env (CPython 3.11) has the real CPU torch 2.13.0 and the
ray that release pins, which `skyrl.train.utils` and the registries `validate_cfg` consults
import (SkyRL 0.3.0: the rehearsal env, 3rdparty/skyrl-rehearsal.txt; 0.4.0:
3rdparty/skyrl-contract-0.4.0.txt, whose header says why 3.11 serves a release that asks 3.12).
The harnesses beside this file (eval_harness.py, export_schedule.py, pathlib_outputs.py) run the
same way.

This file must stay importable in those envs with only their packages: no rlaunch, no pytest.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def _projection(config: Any, subtree: dict[str, Any]) -> dict[str, Any]:
    """The built config's values at the subtree's own keys: what SkyRL holds for what we wrote."""
    projected: dict[str, Any] = {}
    for key, value in subtree.items():
        # A dict-typed field (engine_init_kwargs, a setting) holds a plain dict.
        held = config[key] if isinstance(config, dict) else getattr(config, key)
        projected[key] = _projection(held, value) if isinstance(value, dict) else held
    return projected


def ray_pin() -> str:
    """The ray version the installed SkyRL pins (its `skyrl-train` extra's `ray==X`)."""
    [pin] = {req.split(";")[0].removeprefix("ray==")
             for req in importlib.metadata.requires("skyrl") or [] if req.startswith("ray==")}
    return pin


def check_case(case: dict[str, Any], skyrl: dict[str, Any]) -> dict[str, Any]:
    OmegaConf, SkyRLTrainConfig = skyrl["OmegaConf"], skyrl["config"]
    validate_cfg = skyrl["validate"]
    subtree = case["skyrl"]
    outcome: dict[str, Any] = {"accepted": False, "stage": "build", "error": None}
    try:
        config = SkyRLTrainConfig.from_dict_config(OmegaConf.create(subtree))
        outcome["held"] = _projection(config, subtree)
        if case.get("cli_args") is not None:
            from_cli = SkyRLTrainConfig.from_cli_overrides(case["cli_args"])
            outcome["cli_equals_yaml"] = dataclasses.asdict(from_cli) == dataclasses.asdict(config)
        outcome["stage"] = "validate"
        validate_cfg(config)
        outcome["accepted"] = True
        outcome["stage"] = "done"
    except Exception as err:  # SkyRL reports config problems as assert/Value/Type errors
        last = traceback.extract_tb(err.__traceback__)[-1]
        outcome["error"] = f"{type(err).__name__}: {err}"
        outcome["where"] = f"{Path(last.filename).name}:{last.lineno} {last.name}"
    return outcome


def main(cases_yaml: str, result_json: str) -> int:
    started = time.perf_counter()
    import yaml
    from omegaconf import OmegaConf
    from skyrl.train.config import SkyRLTrainConfig
    from skyrl.train.utils import validate_cfg

    skyrl = {"OmegaConf": OmegaConf, "config": SkyRLTrainConfig, "validate": validate_cfg}
    imported = time.perf_counter()
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    cases = yaml.load(Path(cases_yaml).read_text(encoding="utf-8"), Loader=loader)
    loaded = time.perf_counter()
    results = {case_id: check_case(case, skyrl) for case_id, case in cases.items()}
    finished = time.perf_counter()
    report = json.dumps(
        {
            "skyrl_version": sys.modules["skyrl"].__version__,
            "python": sys.version.split()[0],
            "torch": sys.modules["torch"].__version__,
            "ray": sys.modules["ray"].__version__,
            "ray_pinned": ray_pin(),
            "import_seconds": round(imported - started, 3),
            "load_seconds": round(loaded - imported, 3),
            "check_seconds": round(finished - loaded, 3),
            "results": results,
        },
        default=repr,
    )
    Path(result_json).write_text(report, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
