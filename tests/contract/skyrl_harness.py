"""Run inside the SkyRL contract env (CPython 3.12, scripts/skyrl-contract-env), not under pytest.

    python skyrl_harness.py CASES_YAML RESULT_JSON

CASES_YAML maps a case id to `{skyrl: <a launch YAML's skyrl subtree>, cli_args: [...] | null}`.
For each case, build `SkyRLTrainConfig` with SkyRL 0.3.0's own loader,
`SkyRLTrainConfig.from_dict_config(OmegaConf.create(subtree))`, and, where `cli_args` are given,
also with `SkyRLTrainConfig.from_cli_overrides(cli_args)` (what the entrypoint
`skyrl.train.entrypoints.main_base` does with `sys.argv[1:]`); then run SkyRL's own
`validate_cfg`. Writes one JSON object to RESULT_JSON (SkyRL itself prints and logs, so not to
stdout): per id, accepted or the error SkyRL raised, and what the built config holds.

Stand-ins: `skyrl.train.utils` and the registries `validate_cfg` consults import `torch` and `ray`
at module level. Neither takes part in validating a config (the registries only ask
`ray.is_initialized()`, and torch only appears in decorators and type annotations), and torch
for CPython 3.12 from the package index is a CUDA build of several GB. So this process alone puts
tiny stand-ins for them in `sys.modules` before importing SkyRL: `ray.is_initialized()` is False
and `ray.remote` returns what it decorates; every torch attribute is an inert placeholder, with
`torch.Tensor` a plain class (jaxtyping subclass-checks it). Everything else is SkyRL's real
code and its real dependencies (3rdparty/skyrl-contract.txt).

This file must stay importable on CPython 3.12 with only those packages: no rlaunch, no pytest.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any


class _Inert:
    """Whatever torch attribute SkyRL touches at import time: callable, subscriptable, and a
    pass-through decorator."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, item: str) -> Any:
        if item.startswith("__"):
            raise AttributeError(item)
        return _Inert(f"{self._name}.{item}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Inert(f"{self._name}()")

    def __getitem__(self, item: Any) -> Any:
        return _Inert(f"{self._name}[]")

    def __or__(self, other: Any) -> Any:
        return _Inert(f"{self._name}|")

    __ror__ = __or__

    def __repr__(self) -> str:
        return f"<stand-in {self._name}>"


class _InertModule(types.ModuleType):
    def __getattr__(self, item: str) -> Any:
        if item.startswith("__"):
            raise AttributeError(item)
        return _Inert(f"{self.__name__}.{item}")


def _module(name: str) -> types.ModuleType:
    module = _InertModule(name)
    module.__path__ = []  # a package, so `import torch.nn.functional` resolves
    sys.modules[name] = module
    return module


def install_stand_ins() -> None:
    torch = _module("torch")
    torch.Tensor = type("Tensor", (), {})
    for name in ("torch.multiprocessing", "torch.multiprocessing.reductions", "torch.nn",
                 "torch.nn.functional"):
        _module(name)

    ray = _module("ray")
    ray.is_initialized = lambda: False

    def remote(*args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return lambda obj: obj

    ray.remote = remote
    for name in ("ray.util", "ray.util.placement_group", "ray.util.scheduling_strategies"):
        _module(name)


def _projection(config: Any, subtree: dict[str, Any]) -> dict[str, Any]:
    """The built config's values at the subtree's own keys: what SkyRL holds for what we wrote."""
    projected: dict[str, Any] = {}
    for key, value in subtree.items():
        # A dict-typed field (engine_init_kwargs, a setting) holds a plain dict.
        held = config[key] if isinstance(config, dict) else getattr(config, key)
        projected[key] = _projection(held, value) if isinstance(value, dict) else held
    return projected


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
    install_stand_ins()
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
