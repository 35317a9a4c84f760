"""`prompt_parquet`: a pinned HF dataset split turned into runtime-format prompts (one parquet).

    built_artifact(
        name="gsm8k-train-prompts", kind="dataset", builder="prompt_parquet",
        deps={"source": ":gsm8k-train"},              # an hf_dataset: repo, commit, config, split
        config={
            "task": "gsm8k",                           # rlaunch.tasks module of the extractors
            "template": "{question} Let's think step by step ...",   # over the source columns
            "ground_truth": {"column": "answer", "extract": "final_answer"},
            "env_class": "gsm8k",                      # the skyrl-gym env id: gsm8k, aime
            "reward_method": "rule",
        },
        rows=7473,
    )

The payload is `prompts.parquet` with the columns of `rlaunch.tasks.prompts` (SkyRL 0.3.0's
PromptDataset row), the ground truth in the column the env reads it from (`reward_spec` for
gsm8k, `reward_model` for aime: `rlaunch.tasks.prompts.GROUND_TRUTH_COLUMN`). The split's
files are found through the dataset card (`configs:` / `data_files:`), else by the usual
`{config}/{split}-*.parquet` layout; rows keep their order. Same source and config, same bytes.
Every config field is part of the fingerprint; the row count goes into the build record, and a
declared `rows` must equal it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from rlaunch.builders.base import AnyArtifact, BuildError, Built, Log, expect_type
from rlaunch.builders.config import parse_config
from rlaunch.builders.hf_snapshot import card_split_patterns
from rlaunch.spec.artifacts import BuiltArtifact, HFDataset, identity
from rlaunch.spec.builder_configs import GroundTruthConfig, PromptConfig
from rlaunch.tasks.parquet import write_prompts
from rlaunch.tasks.prompts import (
    GROUND_TRUTH,
    GROUND_TRUTH_COLUMN,
    PROMPTS_FILE,
    VERBATIM,
    no_ground_truth,
    prompt_row,
    template_fields,
)

_SUFFIXES = (".parquet", ".jsonl", ".json")


class PromptParquetBuilder:
    name = "prompt_parquet"

    def build(
        self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log
    ) -> Built:
        expect_type(self.name, artifact, BuiltArtifact)
        ident = identity(artifact)
        config = parse_config(PromptConfig, artifact)
        source = artifact.deps.get("source")
        if not isinstance(source, HFDataset) or "source" not in deps:
            raise BuildError(
                f"{ident}: prompt_parquet needs deps={{\"source\": <an hf_dataset target>}}, the "
                f"pinned split it formats; got deps {sorted(artifact.deps) or 'none'}"
            )
        if config.env_class not in GROUND_TRUTH_COLUMN:
            raise BuildError(
                f"{ident}: config.env_class {config.env_class!r} is not an env prompt_parquet "
                f"writes rows for; use one of {', '.join(sorted(GROUND_TRUTH_COLUMN))}"
            )
        truth_from = config.ground_truth
        if truth_from is None:
            raise BuildError(f"{ident}: config.ground_truth {no_ground_truth(config.env_class)}")
        extract = _extractor(ident, config.task, truth_from)
        files = split_files(deps["source"], source)
        if not files:
            raise BuildError(
                f"{ident}: no files of split {source.split!r} (config {source.config!r}) in "
                f"{identity(source)} ({source.repo_id}@{source.revision}); its card lists none "
                f"and no {source.config or '.'}/{source.split}-*.parquet exists: check the "
                f"hf_dataset's config and split"
            )
        rows = [row for path in files for row in _read_rows(path)]
        columns = sorted({key for row in rows[:1] for key in row})
        fields = _template_columns(ident, config.template, columns)
        out = []
        for index, row in enumerate(rows):
            truth = _ground_truth(ident, truth_from, extract, row, index, columns)
            out.append(prompt_row(
                content=config.template.format_map({name: row[name] for name in fields}),
                env_class=config.env_class, method=config.reward_method, ground_truth=truth,
                data_source=source.repo_id, split=source.split, index=index,
            ))
        if artifact.rows is not None and artifact.rows != len(out):
            raise BuildError(
                f"{ident}: rows declares {artifact.rows}, but split {source.split!r} of "
                f"{identity(source)} has {len(out)} rows; set rows={len(out)}"
            )
        write_prompts(out_dir / PROMPTS_FILE, out)
        shown = ", ".join(path.name for path in files)
        log(f"{ident}: {len(out)} prompts from {shown} -> {PROMPTS_FILE}")
        return Built(rows=len(out))


def _extractor(ident: str, task: str, truth_from: GroundTruthConfig) -> Any:
    if task not in GROUND_TRUTH:
        raise BuildError(
            f"{ident}: config.task {task!r} is not a task of rlaunch.tasks; use one of "
            f"{', '.join(sorted(GROUND_TRUTH))}"
        )
    if truth_from.extract == VERBATIM:
        return None
    named = GROUND_TRUTH[task]
    if truth_from.extract not in named:
        choices = ", ".join([VERBATIM, *sorted(named)])
        raise BuildError(
            f"{ident}: config.ground_truth.extract {truth_from.extract!r} is not an "
            f"extractor of task {task!r}; use one of {choices}"
        )
    return named[truth_from.extract]


def _template_columns(ident: str, template: str, columns: list[str]) -> list[str]:
    try:
        fields = template_fields(template)
    except ValueError as err:
        raise BuildError(
            f"{ident}: config.template {template!r} is not a format string over the source "
            f"columns ({err}); write columns as {{name}} and a literal brace as {{{{ or }}}}"
        ) from None
    unknown = [name for name in fields if name not in columns]
    if unknown or not fields:
        problem = (f"reads {', '.join(repr(n) for n in unknown)}" if unknown
                   else "reads no column")
        raise BuildError(
            f"{ident}: config.template {problem}; the source rows have the columns "
            f"{', '.join(columns)}: name them as {{column}}"
        )
    return fields


def _ground_truth(
    ident: str, spec: GroundTruthConfig, extract: Any, row: dict[str, Any], index: int,
    columns: list[str],
) -> str:
    if spec.column not in row:
        raise BuildError(
            f"{ident}: config.ground_truth.column {spec.column!r} is not a source column; the "
            f"columns are {', '.join(columns)}"
        )
    value = str(row[spec.column])
    truth = value if extract is None else extract(value)
    if not truth:
        raise BuildError(
            f"{ident}: row {index}: config.ground_truth.extract {spec.extract!r} finds no ground "
            f"truth in column {spec.column!r} ({value[-80:]!r}); fix the extractor or the column"
        )
    return truth


def split_files(root: Path, source: HFDataset) -> list[Path]:
    """The data files of the source's split in its snapshot folder, sorted."""
    patterns = card_split_patterns(root / "README.md", source.config, source.split)
    if patterns is None:
        base = f"{source.config}/" if source.config else ""
        patterns = [f"{base}{source.split}-*", f"{base}{source.split}.*",
                    f"{base}data/{source.split}-*", f"data/{source.split}-*"]
    found = {path for pattern in patterns for path in root.glob(pattern)}
    return sorted(path for path in found if path.is_file() and path.suffix in _SUFFIXES)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        return pq.read_table(path).to_pylist()
    with open(path, encoding="utf-8") as handle:
        if path.suffix == ".json":
            return list(json.load(handle))
        return [json.loads(line) for line in handle if line.strip()]
