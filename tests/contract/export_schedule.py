"""Run inside a SkyRL contract env (scripts/skyrl-contract-env RELEASE), not under pytest.

    python export_schedule.py CASES_JSON RESULT_JSON

Which steps the release exports a Hugging Face model at, decided by SkyRL's own code:
CASES_JSON maps a case id to `{cli_args: [...], steps_per_epoch: N}`. Each case's config is built
by SkyRL's own `SkyRLTrainConfig.from_cli_overrides` (what `main_base` does with `sys.argv[1:]`),
and the conditions are the expressions of `RayPPOTrainer.train` (skyrl/train/trainer.py) as the
installed wheel writes them, found in its source and evaluated on that config:
- `is_epoch_end = self.global_step % len(self.train_dataloader) == 0`,
- `hf_model_save = self.cfg.trainer.hf_save_interval > 0 and (is_epoch_end or ...)`, after
  which the loop calls `save_models()`,
- the "Safety net" after the loop, `if self.cfg.trainer.hf_save_interval > 0 and not
  hf_model_save:` `save_models()`, with `global_step` back at the last step.
What this file adds is the step counter only: steps 1, 2, ... up to `epochs * steps_per_epoch`,
or `max_training_steps` when set (the loop's `global_step > max_training_steps` stop). SkyRL's
whole loop on CPU is the rehearsal's (rlaunch --rehearse); this starts no Ray and trains nothing.

The trainer's conditions are read from its source rather than run, so that no trainer (and no
Ray cluster, dataloader or model) is needed to evaluate them; the config is SkyRL's own, built
with the env's real torch and ray, as for skyrl_harness.py.
"""

from __future__ import annotations

import ast
import json
import sys
import types
from pathlib import Path
from typing import Any


def _train_function(source: str) -> ast.AsyncFunctionDef | ast.FunctionDef:
    tree = ast.parse(source)
    [trainer] = [node for node in tree.body
                 if isinstance(node, ast.ClassDef) and node.name == "RayPPOTrainer"]
    [train] = [node for node in trainer.body
               if isinstance(node, (ast.AsyncFunctionDef, ast.FunctionDef))
               and node.name == "train"]
    return train


def _assigned(train: ast.AST, name: str) -> ast.expr:
    """The one computed value `train` assigns to `name` (not the constant it starts from:
    `hf_model_save = False` before the loop)."""
    [value] = [node.value for node in ast.walk(train) if isinstance(node, ast.Assign)
               and [getattr(t, "id", None) for t in node.targets] == [name]
               and not isinstance(node.value, ast.Constant)]
    return value


def _safety_net(train: ast.AST) -> ast.expr:
    """The `if ... and not hf_model_save:` test after the loop."""
    def negates_hf_save(test: ast.expr) -> bool:
        return any(isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
                   and getattr(node.operand, "id", None) == "hf_model_save"
                   for node in ast.walk(test))
    [test] = [node.test for node in ast.walk(train)
              if isinstance(node, ast.If) and negates_hf_save(node.test)]
    return test


def _compiled(expr: ast.expr) -> types.CodeType:
    return compile(ast.fix_missing_locations(ast.Expression(expr)), "<skyrl trainer.py>", "eval")


def schedule(conditions: dict[str, types.CodeType], cfg: Any,
             steps_per_epoch: int) -> dict[str, Any]:
    trainer = cfg.trainer
    total = trainer.epochs * steps_per_epoch
    if trainer.max_training_steps is not None:
        total = min(total, trainer.max_training_steps)
    state = types.SimpleNamespace(cfg=cfg, global_step=0, train_dataloader=range(steps_per_epoch))
    loop: list[int] = []
    hf_model_save = False  # as RayPPOTrainer.train sets it before the loop
    for step in range(1, total + 1):
        state.global_step = step
        is_epoch_end = eval(conditions["is_epoch_end"], {}, {"self": state})
        hf_model_save = eval(conditions["hf_model_save"], {},
                             {"self": state, "is_epoch_end": is_epoch_end})
        if hf_model_save:
            loop.append(step)
    final = bool(eval(conditions["safety_net"], {},
                      {"self": state, "hf_model_save": hf_model_save}))
    exported = loop + ([total] if final else [])
    return {"hf_save_interval": trainer.hf_save_interval, "total_steps": total,
            "exported_steps": exported, "final_save": final,
            "last_step_exported": bool(exported) and exported[-1] == total}


def main(cases_json: str, result_json: str) -> int:
    import skyrl
    from skyrl.train.config import SkyRLTrainConfig

    source_path = Path(skyrl.__file__).parent / "train" / "trainer.py"
    train = _train_function(source_path.read_text(encoding="utf-8"))
    conditions = {
        "is_epoch_end": _compiled(_assigned(train, "is_epoch_end")),
        "hf_model_save": _compiled(_assigned(train, "hf_model_save")),
        "safety_net": _compiled(_safety_net(train)),
    }
    cases = json.loads(Path(cases_json).read_text(encoding="utf-8"))
    results = {}
    for case_id, case in cases.items():
        cfg = SkyRLTrainConfig.from_cli_overrides(case["cli_args"])
        results[case_id] = schedule(conditions, cfg, case["steps_per_epoch"])
    Path(result_json).write_text(json.dumps({
        "skyrl_version": skyrl.__version__,
        "trainer_source": str(source_path),
        "conditions": {name: ast.unparse(expr) for name, expr in (
            ("is_epoch_end", _assigned(train, "is_epoch_end")),
            ("hf_model_save", _assigned(train, "hf_model_save")),
            ("safety_net", _safety_net(train)))},
        "results": results,
    }), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
