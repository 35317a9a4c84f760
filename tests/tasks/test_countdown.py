"""The countdown task: deterministic problems, exact rewards, solvable by construction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlaunch.tasks.countdown import (
    CORRECT_REWARD,
    FORMAT_REWARD,
    MAX_TARGET,
    evaluate,
    make_problems,
    problem_of,
    prompt_rows,
    reward,
    solution,
)
from rlaunch.tasks.parquet import PromptFileError, read_countdown, write_prompts

PROBLEM = {"prompt": "8 2 5 to 11:", "target": 11, "numbers": [8, 2, 5], "solution": "5-2+8"}


def test_same_seed_same_problems_and_different_seed_differs() -> None:
    assert make_problems(3, 50) == make_problems(3, 50)
    assert make_problems(3, 50) != make_problems(4, 50)
    assert make_problems(3, 10) == make_problems(3, 50)[:10]


def test_first_problems_are_pinned() -> None:
    # Datasets built on another machine must hold the same rows.
    assert make_problems(0, 2) == [
        {"id": 0, "prompt": "1 6 1 to 7:", "target": 7, "numbers": [1, 6, 1],
         "solution": "1+6*1"},
        {"id": 1, "prompt": "6 1 2 to 8:", "target": 8, "numbers": [6, 1, 2],
         "solution": "2+1*6"},
    ]


def test_every_solution_is_correct_and_short() -> None:
    for problem in make_problems(11, 2000):
        assert reward(problem, solution(problem)) == CORRECT_REWARD
        assert 1 <= problem["target"] <= MAX_TARGET
        assert len(problem["prompt"]) < 32
        assert len(solution(problem)) < 16


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("5-2+8", CORRECT_REWARD),
        (" 8+5-2 ", CORRECT_REWARD),
        ("(8-5)*2+5", 0.0),  # uses 5 twice
        ("8+5", FORMAT_REWARD),  # well-formed, subset of the numbers, 13 != 11
        ("8*2-5", CORRECT_REWARD),  # 16 - 5: a different correct answer
        ("8+3", 0.0),  # 3 is not given
        ("8+", 0.0),
        ("", 0.0),
        ("abc", 0.0),
        ("8+2+5+" + "1" * 20, 0.0),  # longer than a completion may be
    ],
)
def test_reward(completion: str, expected: float) -> None:
    assert reward(PROBLEM, completion) == expected


def test_evaluate_respects_precedence_and_parentheses() -> None:
    assert evaluate("2+3*4") == 14
    assert evaluate("(2+3)*4") == 20
    assert evaluate("9-2-3") == 4


def test_evaluate_rejects_what_is_not_an_expression() -> None:
    message = r"not a countdown expression: '2\+\+3' \(unexpected '\+'\)"
    with pytest.raises(ValueError, match=message):
        evaluate("2++3")


def test_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="count must be >= 0, got -1"):
        make_problems(0, -1)


def test_problems_round_trip_through_runtime_format_rows() -> None:
    problems = make_problems(3, 5)
    rows = prompt_rows(problems, "train")
    assert rows[2] == {
        "data_source": "rlaunch/countdown",
        "prompt": [{"role": "user", "content": problems[2]["prompt"]}],
        "env_class": "countdown",
        "reward_spec": {"method": "countdown", "ground_truth": json.dumps(
            {"numbers": problems[2]["numbers"], "solution": problems[2]["solution"],
             "target": problems[2]["target"]}, separators=(",", ":"))},
        "extra_info": {"split": "train", "index": 2},
    }
    assert [problem_of(row) for row in rows] == problems


def test_a_row_of_another_task_is_named() -> None:
    row = prompt_rows(make_problems(3, 1), "train")[0]
    with pytest.raises(ValueError, match="^env_class is 'gsm8k', not 'countdown'$"):
        problem_of({**row, "env_class": "gsm8k"})
    broken = {**row, "reward_spec": {"method": "rule", "ground_truth": "72"}}
    with pytest.raises(ValueError) as raised:
        problem_of(broken)
    assert str(raised.value) == (
        "reward_spec.ground_truth is '72', not a JSON object with numbers and target"
    )


def test_a_prompt_file_of_another_task_is_refused_with_the_row(tmp_path: Path) -> None:
    rows = prompt_rows(make_problems(3, 2), "train")
    rows[1] = {**rows[1], "env_class": "gsm8k"}
    write_prompts(tmp_path / "train.parquet", rows)
    with pytest.raises(PromptFileError) as raised:
        read_countdown(tmp_path / "train.parquet", "train_data")
    assert str(raised.value) == (
        f"train_data: {tmp_path / 'train.parquet'} row 1 is not a countdown row (env_class is "
        f"'gsm8k', not 'countdown'); build it with the countdown_data builder"
    )
