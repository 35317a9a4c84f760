"""Prompt files on disk: runtime-format rows (`rlaunch.tasks.prompts`) as parquet.

One explicit arrow schema, so that every file has the same column types whatever its rows hold
(a null ground truth is still a string column), and fixed writer settings, so that the same
rows give the same bytes (pyarrow is pinned in the lock: its version is in the file's footer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from rlaunch.tasks.countdown import problem_of

SCHEMA = pa.schema([
    ("data_source", pa.string()),
    ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
    ("env_class", pa.string()),
    ("reward_spec", pa.struct([("method", pa.string()), ("ground_truth", pa.string())])),
    ("extra_info", pa.struct([("split", pa.string()), ("index", pa.int64())])),
])


class PromptFileError(ValueError):
    """A prompt file that is missing, unreadable or not in the runtime format."""


def _schema_of(rows: list[dict[str, Any]]) -> pa.Schema:
    """SCHEMA, with the ground truth's column named as the rows name it (`reward_model` for
    the envs that read it there, rlaunch.tasks.prompts.GROUND_TRUTH_COLUMN)."""
    if rows and "reward_model" in rows[0]:
        index = SCHEMA.get_field_index("reward_spec")
        return SCHEMA.set(index, SCHEMA.field(index).with_name("reward_model"))
    return SCHEMA


def write_prompts(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write runtime-format rows to `path` (a builder's fresh folder), deterministically."""
    table = pa.Table.from_pylist(rows, schema=_schema_of(rows))
    pq.write_table(table, str(path), compression="zstd", compression_level=3,
                   use_dictionary=True, write_statistics=False,
                   row_group_size=max(len(rows), 1))


def read_prompts(path: Path, slot: str) -> list[dict[str, Any]]:
    """The rows of a prompt file; PromptFileError naming the file, the slot and the fix."""
    if not path.is_file():
        raise PromptFileError(
            f"{slot}: {path} does not exist; build the dataset artifact (a prompt_parquet or "
            f"countdown_data builder writes runtime-format parquet)"
        )
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as err:
        raise PromptFileError(f"{slot}: {path} is not a readable parquet file ({err})") from None
    missing = [name for name in SCHEMA.names if name not in table.column_names]
    if missing:
        raise PromptFileError(
            f"{slot}: {path} lacks the column(s) {', '.join(missing)} of the runtime format "
            f"(it has {', '.join(table.column_names)}); rebuild it with a prompt builder"
        )
    return table.select(list(SCHEMA.names)).to_pylist()


def read_countdown(path: Path, slot: str) -> list[dict[str, Any]]:
    """The countdown problems of a prompt file (`rlaunch.tasks.countdown.problem_of` per row)."""
    problems = []
    for index, row in enumerate(read_prompts(path, slot)):
        try:
            problems.append(problem_of(row))
        except ValueError as err:
            raise PromptFileError(
                f"{slot}: {path} row {index} is not a countdown row ({err}); build it with the "
                f"countdown_data builder"
            ) from None
    if not problems:
        raise PromptFileError(f"{slot}: {path} has no rows")
    return problems

