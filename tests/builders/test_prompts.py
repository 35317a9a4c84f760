"""prompt_parquet: a GSM8K-shaped split on the local Hub, snapshotted by hf_snapshot through the
real huggingface_hub client, turned into runtime-format parquet."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import gsm8kdata
from hubserver import hub_environment, serve_hub
from rlaunch.builders import BuildError, build_artifact
from rlaunch.tasks.parquet import SCHEMA, read_prompts


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with serve_hub(gsm8kdata.repos()) as (url, _):
        for key, value in hub_environment(url).items():
            monkeypatch.setenv(key, value)
        yield url


def quiet(message: str) -> None:
    pass


def test_a_split_becomes_skyrl_prompt_rows_with_the_row_count_in_the_record(
    hub: str, tmp_path: Path
) -> None:
    result = build_artifact(gsm8kdata.prompts(rows=12), str(tmp_path / "store"), log=quiet)
    assert [entry.path for entry in result.record.files] == ["prompts.parquet"]
    assert result.record.rows == 12
    assert result.built == ["gsm8k-train@2026.11.01", "gsm8k-train-prompts@2026.11.02"]
    path = result.local_path / "prompts.parquet"
    assert pq.read_schema(path).remove_metadata() == SCHEMA
    rows = read_prompts(path, "train_data")
    assert len(rows) == 12
    assert rows[1] == {
        "data_source": "openai/gsm8k",
        "prompt": [{"role": "user", "content": (
            "Ann has 4 apples and buys 1007 more. How many apples has she? Let's think step "
            "by step and output the final answer after \"####\"."
        )}],
        "env_class": "gsm8k",
        "reward_spec": {"method": "rule", "ground_truth": "1011"},
        "extra_info": {"split": "train", "index": 1},
    }
    # "1,011" in the source: the comma goes, as skyrl-gym's extract_solution drops it.
    assert rows[11]["reward_spec"]["ground_truth"] == "1091"


def test_the_same_input_gives_the_same_bytes(hub: str, tmp_path: Path) -> None:
    first = build_artifact(gsm8kdata.prompts(), str(tmp_path / "one"), log=quiet)
    second = build_artifact(gsm8kdata.prompts(), str(tmp_path / "two"), log=quiet)
    one = (first.local_path / "prompts.parquet").read_bytes()
    assert one == (second.local_path / "prompts.parquet").read_bytes()
    other = build_artifact(gsm8kdata.prompts(env_class="aime"),
                           str(tmp_path / "three"), log=quiet)
    assert other.fingerprint != first.fingerprint
    assert (other.local_path / "prompts.parquet").read_bytes() != one


def test_math_env_rows_hold_the_ground_truth_where_aime_reads_it(hub: str, tmp_path: Path) -> None:
    """skyrl-gym 0.4.0's AIMEEnv.__init__ asserts extras["reward_model"]["ground_truth"]."""
    result = build_artifact(gsm8kdata.prompts(env_class="aime"), str(tmp_path / "s"), log=quiet)
    table = pq.read_table(result.local_path / "prompts.parquet")
    assert table.column_names == ["data_source", "prompt", "env_class", "reward_model",
                                  "extra_info"]
    assert table.to_pylist()[1]["reward_model"] == {"method": "rule", "ground_truth": "1011"}


def test_an_env_class_whose_rows_it_cannot_write_is_refused(hub: str, tmp_path: Path) -> None:
    assert build_error(tmp_path, env_class="gsm8k_multi_turn") == (
        "gsm8k-train-prompts@2026.11.02: config.env_class 'gsm8k_multi_turn' is not an env "
        "prompt_parquet writes rows for; use one of aime, gsm8k"
    )


def test_no_ground_truth_is_refused(hub: str, tmp_path: Path) -> None:
    assert build_error(tmp_path, ground_truth=None) == (
        "gsm8k-train-prompts@2026.11.02: config.ground_truth is null, so every row's "
        "reward_spec.ground_truth would be None, and env 'gsm8k' (skyrl-gym 0.4.0) scores every "
        "answer against it: no answer could earn the reward. Set config.ground_truth to "
        "{column, extract}: the source column that holds the answer and how to take it from "
        "there"
    )


def build_error(tmp_path: Path, **changes: object) -> str:
    with pytest.raises(BuildError) as raised:
        build_artifact(gsm8kdata.prompts(**changes), str(tmp_path / "store"), log=quiet)
    return str(raised.value)


def test_declared_rows_must_be_the_split_s_rows(hub: str, tmp_path: Path) -> None:
    assert build_error(tmp_path, rows=7473) == (
        "gsm8k-train-prompts@2026.11.02: rows declares 7473, but split 'train' of "
        "gsm8k-train@2026.11.01 has 12 rows; set rows=12"
    )
    assert not (tmp_path / "store" / "gsm8k-train-prompts" / "2026.11.02").exists()


def test_a_template_column_the_source_lacks_is_named(hub: str, tmp_path: Path) -> None:
    assert build_error(tmp_path, template="Solve: {problem}") == (
        "gsm8k-train-prompts@2026.11.02: config.template reads 'problem'; the source rows have "
        "the columns answer, question: name them as {column}"
    )


def test_an_extractor_that_finds_nothing_names_the_row(hub: str, tmp_path: Path) -> None:
    message = build_error(tmp_path, ground_truth={"column": "question", "extract": "final_answer"})
    assert message == (
        "gsm8k-train-prompts@2026.11.02: row 0: config.ground_truth.extract 'final_answer' "
        "finds no ground truth in column 'question' ('Ann has 3 apples and buys 1000 more. "
        "How many apples has she?'); fix the extractor or the column"
    )


def test_an_unknown_task_or_extractor_lists_the_choices(hub: str, tmp_path: Path) -> None:
    assert build_error(tmp_path, task="algebra") == (
        "gsm8k-train-prompts@2026.11.02: config.task 'algebra' is not a task of "
        "rlaunch.tasks; use one of gsm8k, math"
    )
    assert build_error(tmp_path, ground_truth={"column": "answer", "extract": "last"}) == (
        "gsm8k-train-prompts@2026.11.02: config.ground_truth.extract 'last' is not an "
        "extractor of task 'gsm8k'; use one of verbatim, final_answer, number"
    )


def test_a_missing_config_field_is_named(hub: str, tmp_path: Path) -> None:
    artifact = gsm8kdata.prompts()
    config = dict(artifact.config)
    del config["env_class"]
    broken = artifact.model_copy(update={"config": config})
    with pytest.raises(BuildError) as raised:
        build_artifact(broken, str(tmp_path / "store"), log=quiet)
    assert str(raised.value) == (
        "gsm8k-train-prompts@2026.11.02: invalid config for builder 'prompt_parquet': "
        "config.env_class: Field required. Its fields: task, template, ground_truth, "
        "env_class, reward_method"
    )


def test_without_a_card_the_split_is_found_by_the_hub_s_layout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repos = gsm8kdata.repos()
    files = repos[("datasets", gsm8kdata.REPO, gsm8kdata.COMMIT)]
    del files["README.md"]
    with serve_hub(repos) as (url, _):
        for key, value in hub_environment(url).items():
            monkeypatch.setenv(key, value)
        result = build_artifact(gsm8kdata.prompts("test"), str(tmp_path / "store"), log=quiet)
        assert result.record.rows == 4
        # A split the repo does not have is named with the layout looked for.
        missing = gsm8kdata.prompts("validation")
        with pytest.raises(BuildError) as raised:
            build_artifact(missing, str(tmp_path / "store"), log=quiet)
    assert str(raised.value) == (
        "gsm8k-validation-prompts@2026.11.02: no files of split 'validation' (config 'main') in "
        f"gsm8k-validation@2026.11.01 ({gsm8kdata.REPO}@{gsm8kdata.COMMIT}); its card lists "
        "none and no main/validation-*.parquet exists: check the hf_dataset's config and split"
    )
