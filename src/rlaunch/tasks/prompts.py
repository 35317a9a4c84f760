"""The runtime-format prompt row: one data handoff that SkyRL and the smoke runtime both read.

A row, as SkyRL 0.3.0's `PromptDataset` (`skyrl/train/dataset/dataset.py`) and its environments
take it:

    prompt       [{role, content}, ...]   PromptDataset's `prompt_key`; the tokenizer's chat
                                          template is applied to it (`_prompt_not_too_long`)
    env_class    "gsm8k"                  PromptDataset's `env_class_key`: the skyrl-gym env id
    reward_spec  {method, ground_truth}   passed on in the env's `extras`; GSM8kEnv.__init__
                                          (skyrl_gym/envs/gsm8k/env.py) asserts ground_truth;
                 (reward_model)           the column AIMEEnv.__init__ (skyrl_gym/envs/aime/
                                          env.py) reads it from instead (GROUND_TRUTH_COLUMN)
    data_source  "openai/gsm8k"           where the row came from
    extra_info   {split, index}           the source split and the row's index in it

`PromptDataset.__getitem__` pops `prompt` and `env_class` and hands every other column to the
env as `extras`. Files are parquet (a path ending `.parquet` is read with
`datasets.load_dataset("parquet", ...)`; any other suffix but .json/.jsonl is taken for a Hub
dataset name). The ground truth is text: a number for GSM8K, a JSON object for countdown.

Stdlib only: the handoff check imports this module inside SkyRL's environment.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

from rlaunch.tasks import gsm8k, math_answers

COLUMNS = ("data_source", "prompt", "env_class", "reward_spec", "extra_info")
PROMPTS_FILE = "prompts.parquet"
"""The one file of a `prompt_parquet` artifact."""

TRAIN_FILE = "train.parquet"
EVAL_FILE = "eval.parquet"
"""The two files of an artifact that carries both splits (`countdown_data`)."""

DATA_FILES: dict[str, dict[str, str]] = {
    "prompt_parquet": {"train_data": PROMPTS_FILE, "eval_data": PROMPTS_FILE},
    "countdown_data": {"train_data": TRAIN_FILE, "eval_data": EVAL_FILE},
}
"""Per builder of runtime-format data, the file inside its artifact folder each slot reads."""

GROUND_TRUTH: dict[str, dict[str, Callable[[str], str | None]]] = {
    "gsm8k": gsm8k.GROUND_TRUTH,
    "math": math_answers.GROUND_TRUTH,
}
"""Per task, the named ways a ground truth is taken from a source column."""
VERBATIM = "verbatim"
"""The extractor every task has: the source column's value as it is."""

REFERENCE_RESPONSES: dict[str, Callable[[str], str]] = {
    "gsm8k": gsm8k.reference_response,
    "aime": math_answers.reference_response,
}
"""Per env class, a response that states a row's ground truth the way the env grades it: the
handoff check proves that the dataset's own answer earns the env's full reward."""


GROUND_TRUTH_COLUMN: dict[str, str] = {
    "gsm8k": "reward_spec",
    "aime": "reward_model",
}
"""The skyrl-gym 0.4.0 envs `prompt_parquet` writes rows for, and the column whose `ground_truth`
each reads from its `extras`: GSM8kEnv.__init__ (skyrl_gym/envs/gsm8k/env.py) asserts
`extras["reward_spec"]["ground_truth"]`, AIMEEnv.__init__ (skyrl_gym/envs/aime/env.py)
`extras["reward_model"]["ground_truth"]`."""


def no_ground_truth(env_class: str) -> str:
    """Why `config.ground_truth: null` cannot feed `env_class` (one of GROUND_TRUTH_COLUMN's):
    every row would carry `ground_truth: None`, which the env keeps and scores each answer
    against (GSM8kEnv._get_reward and AIMEEnv.step call their `compute_score(action,
    self.ground_truth)`), so no answer matches it."""
    return (f"is null, so every row's {GROUND_TRUTH_COLUMN[env_class]}.ground_truth would be "
            f"None, and env {env_class!r} (skyrl-gym 0.4.0) scores every answer against it: no "
            "answer could earn the reward. Set config.ground_truth to {column, extract}: the "
            "source column that holds the answer and how to take it from there")


STATED_NUMBER = {"gsm8k": gsm8k.stated_number, "aime": gsm8k.stated_number}
"""Per env, how a solution states a numeric ground truth: the handoff check scores that too."""


def ground_truth_column(env_class: str) -> str:
    """The column a row of `env_class` holds its ground truth in (`reward_spec` for the smoke
    runtime's countdown, and by default)."""
    return GROUND_TRUTH_COLUMN.get(env_class, "reward_spec")


def data_file(builder: str | None, slot: str) -> str | None:
    """The prompt file a `train_data`/`eval_data` slot reads inside an artifact made by
    `builder`; None when that builder writes no runtime-format file."""
    return DATA_FILES.get(builder or "", {}).get(slot)


def template_fields(template: str) -> list[str]:
    """The `{column}` names a prompt template reads, in order (`ValueError` if malformed)."""
    fields = []
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            if not name.isidentifier():
                raise ValueError(f"{{{name}}} is not a column name")
            fields.append(name)
    return fields


def prompt_row(
    *,
    content: str,
    env_class: str,
    method: str,
    ground_truth: str | None,
    data_source: str,
    split: str,
    index: int,
) -> dict[str, Any]:
    """One row in the runtime format: a single user message."""
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": content}],
        "env_class": env_class,
        ground_truth_column(env_class): {"method": method, "ground_truth": ground_truth},
        "extra_info": {"split": split, "index": index},
    }
