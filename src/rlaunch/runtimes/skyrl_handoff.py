"""SkyRL's own handoff check, on CPU, before any GPU is reserved.

    python -m rlaunch.runtimes.skyrl_handoff trainer.policy.model.path=/cache/m ...
        'data.train_data=["/cache/d/prompts.parquet"]'   (one line: SkyRL's own argv)

The arguments are the exact SkyRL key=value overrides the job gets, already pointing at local
files (the skyrl adapter stages them first). It runs SkyRL's own code on them (the installed
release: 0.3.0 or 0.4.0), the steps
`skyrl.train.entrypoints.main_base` takes before it creates placement groups:

1. config: `SkyRLTrainConfig.from_cli_overrides(argv)` and `skyrl.train.utils.validate_cfg`;
2. tokenizer: `skyrl.utils.tok.get_tokenizer` on `trainer.policy.model.path` with the arguments
   `BasePPOExp.__init__` passes, and its chat template (PromptDataset applies it to every row);
3. data: `skyrl.train.dataset.PromptDataset` over each train and val file with
   `trainer.max_prompt_length` (its prompt-length filter), reporting rows kept and dropped, and
   refusing fewer train rows than `trainer.train_batch_size`, which SkyRL asserts only in
   `BasePPOExp.get_train_dataset`, on the job's GPUs;
4. env: on every row of every train and val file, as SkyRL's `PromptDataset.__getitem__` hands
   it on, the row's `env_class` (else `environment.env_class`, as
   `skyrl/train/generators/utils.py` `prepare_generator_input` falls back) looked up in
   skyrl-gym's registry and made with `skyrl_gym.make`, as `SkyRLGymGenerator.agent_loop` does;
   where rlaunch.tasks knows how the env grades an answer, a response stating the row's own
   ground truth, and for a numeric env the number as a solution states it (`1250` for
   `1,250`, `27` for `27.0`), must earn the full reward (1.0). A row that fails is refused with
   its number in the file and its value.

It prints a short report, then one line `SKYRL_HANDOFF {json}` for programs, and exits 0 when
every step passed, 1 otherwise. `check_handoffs(argv)` does the same for a caller in-process.
Every message names the file and its artifact (read from `_record.json` beside it) and the fix.

Imports only what a SkyRL environment has (SkyRL, skyrl-gym, transformers, datasets) and the
stdlib-only rlaunch.tasks; `validate_cfg` imports torch and ray, as SkyRL always does.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import datasets
import skyrl
import skyrl_gym
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.dataset import PromptDataset
from skyrl.train.utils import validate_cfg
from skyrl.utils.tok import get_tokenizer
from skyrl_gym.envs.registration import registry

from rlaunch.tasks.prompts import REFERENCE_RESPONSES, STATED_NUMBER, ground_truth_column

MARKER = "SKYRL_HANDOFF"
FULL_REWARD = 1.0
LENGTH_SAMPLE = 64
"""Rows whose prompt length in tokens the report shows (shortest, longest) per file."""
_LOADERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}
_RECORD = "_record.json"

Say = Callable[[str], None]


@dataclass
class DataReport:
    slot: str
    path: str
    artifact: str
    rows: int
    kept: int
    dropped: int
    shortest_prompt_tokens: int | None
    longest_prompt_tokens: int | None


@dataclass
class HandoffReport:
    """What the check found; `problems` is empty when SkyRL would accept the handoff."""

    config: str = "not checked"
    tokenizer: str = "not checked"
    data: list[DataReport] = field(default_factory=list)
    env_class: str | None = None
    ground_truths_scored: dict[str, int] = field(default_factory=dict)
    """Per slot, the rows whose ground truth earned the env's full reward."""
    problems: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> str:
        return json.dumps({"ok": self.ok, **asdict(self)}, sort_keys=True)


class _Refused(Exception):
    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


def artifact_of(path: str) -> str:
    """`name@version` of the artifact a staged file belongs to, else the path itself."""
    record = Path(path).parent / _RECORD
    try:
        return str(json.loads(record.read_text(encoding="utf-8"))["identity"])
    except (OSError, ValueError, KeyError, TypeError):
        return path


def _config(argv: list[str], report: HandoffReport) -> SkyRLTrainConfig:
    try:
        cfg = SkyRLTrainConfig.from_cli_overrides(argv)
        validate_cfg(cfg)
    except Exception as err:  # SkyRL reports config problems as assert/Value/Type errors
        raise _Refused(
            "config",
            f"SkyRL {skyrl.__version__} refuses the job's overrides: {type(err).__name__}: {err}."
            " The launch YAML's skyrl section is what to fix"
            " (SkyRLTrainConfig.from_cli_overrides, validate_cfg)",
        ) from None
    report.config = "accepted by from_cli_overrides and validate_cfg"
    return cfg


def _tokenizer(cfg: SkyRLTrainConfig, report: HandoffReport) -> Any:
    path = cfg.trainer.policy.model.path
    where = f"{path} ({artifact_of(os.path.join(path, 'config.json'))})"
    try:
        tokenizer = get_tokenizer(
            path, trust_remote_code=True, use_fast=not cfg.trainer.disable_fast_tokenizer,
            padding_side="left",
        )
    except Exception as err:
        raise _Refused(
            "tokenizer",
            f"AutoTokenizer cannot load the tokenizer of trainer.policy.model.path {where}: "
            f"{type(err).__name__}: {err}. SkyRL loads the tokenizer from the policy model "
            f"folder: it needs tokenizer.json and tokenizer_config.json there",
        ) from None
    if not getattr(tokenizer, "chat_template", None):
        raise _Refused(
            "tokenizer",
            f"the tokenizer of trainer.policy.model.path {where} has no chat template, and "
            f"PromptDataset applies one to every prompt (apply_chat_template). Use a model "
            f"whose tokenizer_config.json has a chat_template (an instruct/chat model), or add "
            f"chat_template.jinja to the model artifact",
        )
    report.tokenizer = f"{type(tokenizer).__name__} from {path}, chat template present"
    return tokenizer


def _prompt_tokens(tokenizer: Any, prompt: Any) -> int:
    # The call of PromptDataset's filter (skyrl/train/dataset/dataset.py, _prompt_not_too_long).
    return len(tokenizer.apply_chat_template(
        prompt, add_generation_prompt=True, return_dict=False, tokenize=True
    ))


def _data(slot: str, path: str, tokenizer: Any, max_length: int) -> tuple[DataReport, Any]:
    artifact = artifact_of(path)
    where = f"{slot} {path} ({artifact})"
    loader = _LOADERS.get(os.path.splitext(path)[1].lower())
    if loader is None:
        raise _Refused(
            "data",
            f"{where}: PromptDataset reads files ending .parquet, .json or .jsonl and takes "
            f"anything else for a Hugging Face dataset name; point {slot} at the prompt file "
            f"inside the artifact (a prompt_parquet artifact's prompts.parquet)",
        )
    if not os.path.isfile(path):
        raise _Refused("data", f"{where} does not exist; stage the dataset artifact first")
    raw = datasets.load_dataset(loader, data_files=path, keep_in_memory=True)["train"]
    missing = [name for name in ("prompt", "env_class") if name not in raw.column_names]
    if missing:
        raise _Refused(
            "data",
            f"{where} lacks the column(s) {', '.join(missing)} that PromptDataset reads (it has "
            f"{', '.join(raw.column_names)}): it is not in the runtime format; build it with "
            f"the prompt_parquet builder",
        )
    sample = raw.select(range(min(LENGTH_SAMPLE, len(raw))))
    lengths = [_prompt_tokens(tokenizer, row["prompt"]) for row in sample]
    dataset = PromptDataset(
        datasets=[path], tokenizer=tokenizer, max_prompt_length=max_length, num_workers=1
    )
    shown = DataReport(
        slot=slot, path=path, artifact=artifact, rows=len(raw), kept=len(dataset),
        dropped=len(raw) - len(dataset),
        shortest_prompt_tokens=min(lengths) if lengths else None,
        longest_prompt_tokens=max(lengths) if lengths else None,
    )
    if len(raw) and not len(dataset):
        raise _Refused(
            "data",
            f"{where}: all {len(raw)} rows are longer than trainer.max_prompt_length "
            f"{max_length} tokens with the chat template applied (the shortest of the first "
            f"{len(lengths)} is {min(lengths)} tokens), so PromptDataset keeps none; raise "
            f"max_prompt_length (lengths.max_prompt_length in BUILD) to at least "
            f"{max(lengths)}, or shorten the artifact's template",
        )
    return shown, raw


class _Rows:
    """A data file's rows as SkyRL's own `PromptDataset.__getitem__` hands them to the
    generator (prompt, env class, extras), over every row of the file, so that a row's number
    is its number in the file (PromptDataset's length filter renumbers the rows it keeps)."""

    prompt_key = "prompt"
    env_class_key = "env_class"

    def __init__(self, raw: Any) -> None:
        self.dataframe = raw

    def __len__(self) -> int:
        return len(self.dataframe)

    def __getitem__(self, item: int) -> tuple[Any, Any, dict[str, Any], str]:
        return PromptDataset.__getitem__(self, item)  # type: ignore[arg-type]


def _truth_field(env_class: str, extras: dict[str, Any]) -> tuple[str, Any]:
    column = ground_truth_column(env_class)
    return column, (extras.get(column) or {}).get("ground_truth")


def _responses(env_class: str, truth: Any) -> list[tuple[str, str]]:
    """(what, response) pairs whose reward must be the full one: the ground truth as written,
    and, for a numeric env, the number as a solution states it."""
    respond = REFERENCE_RESPONSES[env_class]
    pairs = [("its own ground truth", respond(str(truth)))]
    stated = STATED_NUMBER.get(env_class)
    number = stated(str(truth)) if stated is not None else None
    if number is not None and number != str(truth):
        pairs.append((f"the number {number} as a solution states it", respond(number)))
    return pairs


def _ground_truths(cfg: SkyRLTrainConfig, slot: str, path: str, raw: Any,
                   report: HandoffReport) -> int:
    """Make the row's env as `SkyRLGymGenerator.agent_loop` does, on every row of the file, and
    score each row's ground truth with it; the rows scored."""
    where = f"{slot} {path} ({artifact_of(path)})"
    known = sorted(registry)
    rows = _Rows(raw)
    failures: list[tuple[int, str]] = []
    scored = 0
    for index in range(len(rows)):
        prompt, env_class, extras, _ = rows[index]
        # prepare_generator_input (skyrl/train/generators/utils.py) falls back to the config's.
        env_class = env_class if env_class is not None else cfg.environment.env_class
        report.env_class = env_class
        if env_class not in registry:
            raise _Refused(
                "env",
                f"{where}: row {index} names env_class {env_class!r}, which skyrl-gym does not "
                f"register (it has {', '.join(known)}); fix the env_class in the artifact's "
                f"config (and algorithm.environment) to one of them",
            )
        column, truth = _truth_field(env_class, extras)
        extras["max_turns"] = cfg.generator.max_turns
        env_config = getattr(cfg.environment.skyrl_gym, env_class, {})
        try:
            env = skyrl_gym.make(env_class, env_config=env_config, extras=extras)
            env.init(prompt)
        except Exception as err:
            raise _Refused(
                "env",
                f"{where}: env {env_class!r} refuses row {index} ({column} "
                f"{extras.get(column)!r}): {type(err).__name__}: {err}. Build the rows with "
                f"prompt_parquet, whose config.env_class writes the column the env reads, and "
                f"declare how the ground truth is taken from the source (config.ground_truth="
                f"{{column, extract}})",
            ) from None
        if env_class not in REFERENCE_RESPONSES:
            continue
        if truth is None:
            raise _Refused(
                "env",
                f"{where}: row {index} has no ground truth ({column} "
                f"{extras.get(column)!r}), and env {env_class!r} grades every answer "
                f"against it, so every reward would be 0. Declare how the ground truth is taken "
                f"from the source in the artifact's BUILD config (ground_truth={{column, "
                f"extract}})",
            )
        scored += 1
        for what, response in _responses(env_class, truth):
            env = skyrl_gym.make(env_class, env_config=env_config, extras=extras)
            env.init(prompt)
            reward = float(env.step(response)["reward"])
            if reward != FULL_REWARD:
                failures.append((index, f"row {index}'s ground truth {truth!r}: {what} "
                                        f"({response!r}) earns reward {reward:g}"))
                break
    if failures:
        first_row, first = failures[0]
        rows_shown = ", ".join(str(row) for row, _ in failures[:10])
        more = "" if len(failures) <= 10 else ", ..."
        raise _Refused(
            "env",
            f"{where}: {first} from env {report.env_class!r}, not {FULL_REWARD:g}; "
            f"{len(failures)} of {len(rows)} rows fail so (rows {rows_shown}{more}). A "
            f"correct answer can never earn the reward on them: write each ground truth as "
            f"the env compares it (the number alone: no thousands separator, no trailing .0) "
            f"with the artifact's config.ground_truth (for gsm8k: extract 'final_answer', the "
            f"number after ####, or 'number' for a numeric column)",
        )
    return scored


def check_handoffs(argv: list[str], *, say: Say = print) -> HandoffReport:
    """Run SkyRL's own code on the job's overrides; say what it found, step by step."""
    report = HandoffReport()
    try:
        cfg = _config(argv, report)
        say(f"config: {report.config}")
        tokenizer = _tokenizer(cfg, report)
        say(f"tokenizer: {report.tokenizer}")
        checked: list[tuple[str, str, Any]] = []
        val_files = list(cfg.data.val_data or []) if cfg.trainer.eval_interval > 0 else []
        sources = [("train_data", p) for p in cfg.data.train_data] + [
            ("val_data", p) for p in val_files
        ]
        for slot, path in sources:
            shown, raw = _data(slot, path, tokenizer, cfg.trainer.max_prompt_length)
            report.data.append(shown)
            say(f"{slot}: {shown.path} ({shown.artifact}): {shown.kept} of {shown.rows} rows "
                f"kept, {shown.dropped} longer than {cfg.trainer.max_prompt_length} tokens")
            checked.append((slot, path, raw))
        kept = sum(item.kept for item in report.data if item.slot == "train_data")
        if kept < cfg.trainer.train_batch_size:
            raise _Refused(
                "data",
                f"train_data keeps {kept} rows after the prompt-length filter, fewer than "
                f"trainer.train_batch_size {cfg.trainer.train_batch_size}: SkyRL would stop in "
                f"BasePPOExp.get_train_dataset after the GPUs are reserved; use more rows, a "
                f"larger max_prompt_length, or a smaller train_batch_size",
            )
        for slot, path, raw in checked:
            scored = _ground_truths(cfg, slot, path, raw, report)
            report.ground_truths_scored[slot] = report.ground_truths_scored.get(slot, 0) + scored
            shown = (f"the ground truth of all {scored} rows earns the full reward"
                     if scored else "ground truths not scored (rlaunch.tasks has no reference "
                     "answer for it)")
            say(f"env: {report.env_class} made on every row of {slot} {path}; {shown}")
    except _Refused as refused:
        report.problems.append({"stage": refused.stage, "message": str(refused)})
        say(f"error ({refused.stage}): {refused}")
    return report


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    report = check_handoffs(argv)
    print("handoff check: " + ("passed" if report.ok else "FAILED"), flush=True)
    print(f"{MARKER} {report.to_json()}", flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
