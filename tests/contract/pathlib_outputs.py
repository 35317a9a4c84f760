"""Run inside the SkyRL 0.3.0 contract env (the rehearsal env), not under pytest, in the working
folder the test chooses:

    python pathlib_outputs.py CLI_ARGS_JSON GLOBAL_STEP

Where SkyRL 0.3.0 writes its two pathlib outputs for a config, decided by SkyRL's own
expressions, found in the installed wheel's source and evaluated on the config SkyRL's own
`SkyRLTrainConfig.from_cli_overrides` builds:
- `log_path = Path(cfg.trainer.log_path).resolve()` in `initialize_ray`
  (skyrl/train/utils/utils.py), then `log_path.mkdir(parents=True, exist_ok=True)` and the
  infra log `log_path / f"infra-{timestamp}.log"`;
- `data_save_dir = Path(cfg.trainer.export_path) / "dumped_evals" / (...)` in `evaluate`
  (skyrl/train/evaluate.py), then `data_save_dir.mkdir(parents=True, exist_ok=True)` and
  `dump_per_dataset_eval_results`'s `aggregated_results.jsonl` there.
The expressions are read from the functions' source and evaluated alone, since the functions
around them start Ray and run an evaluation. Each folder is made and one file written in it as
SkyRL does; prints the two paths as JSON.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path


def assigned(module: Path, function: str, name: str) -> ast.expr:
    tree = ast.parse(module.read_text(encoding="utf-8"))
    [found] = [node for node in tree.body if isinstance(node, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef))
               and node.name == function]
    [value] = [node.value for node in ast.walk(found) if isinstance(node, ast.Assign)
               and [getattr(t, "id", None) for t in node.targets] == [name]]
    return value


def evaluated(expr: ast.expr, names: dict[str, object]) -> Path:
    code = compile(ast.fix_missing_locations(ast.Expression(expr)), "<skyrl>", "eval")
    return eval(code, {"Path": Path}, names)


def main(cli_args: str, global_step: str) -> int:
    import skyrl
    from skyrl.train.config import SkyRLTrainConfig

    cfg = SkyRLTrainConfig.from_cli_overrides(json.loads(cli_args))
    train = Path(skyrl.__file__).parent / "train"
    log_path = evaluated(assigned(train / "utils" / "utils.py", "initialize_ray", "log_path"),
                         {"cfg": cfg})
    log_path.mkdir(parents=True, exist_ok=True)
    (log_path / "infra-000000_000000.log").write_text("infra log\n")
    dump_dir = evaluated(assigned(train / "evaluate.py", "evaluate", "data_save_dir"),
                         {"cfg": cfg, "global_step": int(global_step)})
    dump_dir.mkdir(parents=True, exist_ok=True)
    (dump_dir / "aggregated_results.jsonl").write_text('{"eval/all/avg_score": 1.0}\n')
    print(json.dumps({"log_path": str(log_path), "dump_dir": str(dump_dir)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
