"""A very small countdown task: combine the given numbers with + - * to hit the target.

    prompt      "3 7 5 to 22:"        (three digits 1..9, a target)
    completion  "3*5+7"               (each given number at most once; usual precedence)

Sized for a tiny character-level transformer on CPU: a short SFT run teaches the format
and gets some targets right; GRPO can raise the hit rate within minutes because the
reward is verifiable and partially dense (a well-formed expression over the given
numbers earns `FORMAT_REWARD`).
"""

from __future__ import annotations

import json
import random
from collections import Counter

from rlaunch.tasks.prompts import prompt_row

NUMBERS_PER_PROBLEM = 3
SMALLEST, LARGEST = 1, 9
MAX_TARGET = 99
OPERATORS = "+-*"
CORRECT_REWARD = 1.0
FORMAT_REWARD = 0.1
MAX_COMPLETION_CHARS = 15
ENV_CLASS = "countdown"
"""The rows' env_class: the smoke runtime's reward (`reward` below); skyrl-gym has none."""
REWARD_METHOD = "countdown"
DATA_SOURCE = "rlaunch/countdown"


class _ParseError(ValueError):
    pass


def _prompt(numbers: list[int], target: int) -> str:
    return " ".join(str(n) for n in numbers) + f" to {target}:"


def _problem(rng: random.Random, index: int) -> dict:
    while True:
        numbers = [rng.randint(SMALLEST, LARGEST) for _ in range(NUMBERS_PER_PROBLEM)]
        order = rng.sample(numbers, len(numbers))
        operators = [rng.choice(OPERATORS) for _ in range(len(order) - 1)]
        expression = str(order[0]) + "".join(
            op + str(n) for op, n in zip(operators, order[1:], strict=True)
        )
        target = evaluate(expression)
        if 1 <= target <= MAX_TARGET:
            return {
                "id": index,
                "prompt": _prompt(numbers, target),
                "target": target,
                "numbers": numbers,
                "solution": expression,
            }


def make_problems(seed: int, count: int) -> list[dict]:
    """`count` problems, the same for the same `seed` (on every machine and Python)."""
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    rng = random.Random(f"countdown:{seed}")
    return [_problem(rng, index) for index in range(count)]


def solution(problem: dict) -> str:
    """A correct completion (the expression the target was made from), for SFT."""
    return str(problem["solution"])


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isdigit():
            j = i
            while j < len(text) and text[j].isdigit():
                j += 1
            tokens.append(text[i:j])
            i = j
        elif char in OPERATORS or char in "()":
            tokens.append(char)
            i += 1
        elif char == " ":
            i += 1
        else:
            raise _ParseError(f"unexpected character {char!r}")
    return tokens


class _Parser:
    """Recursive descent over + - * and parentheses; records every number literal."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.position = 0
        self.literals: list[int] = []

    def _peek(self) -> str | None:
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self) -> str:
        token = self._peek()
        if token is None:
            raise _ParseError("unexpected end of expression")
        self.position += 1
        return token

    def expression(self) -> int:
        value = self.term()
        while self._peek() in ("+", "-"):
            op = self._take()
            value = value + self.term() if op == "+" else value - self.term()
        return value

    def term(self) -> int:
        value = self.atom()
        while self._peek() == "*":
            self._take()
            value *= self.atom()
        return value

    def atom(self) -> int:
        token = self._take()
        if token == "(":
            value = self.expression()
            if self._take() != ")":
                raise _ParseError("missing ')'")
            return value
        if token.isdigit():
            self.literals.append(int(token))
            return int(token)
        raise _ParseError(f"unexpected {token!r}")

    def parse(self) -> int:
        value = self.expression()
        if self._peek() is not None:
            raise _ParseError(f"trailing {self._peek()!r}")
        return value


def _parse(text: str) -> tuple[int, list[int]]:
    parser = _Parser(_tokens(text))
    return parser.parse(), parser.literals


def evaluate(expression: str) -> int:
    """Value of an expression over integers with + - * and parentheses (no `eval`)."""
    try:
        return _parse(expression)[0]
    except _ParseError as error:
        raise ValueError(f"not a countdown expression: {expression!r} ({error})") from None


def reward(problem: dict, completion: str) -> float:
    """1.0 if `completion` equals the target using each given number at most once;
    FORMAT_REWARD if it is a well-formed expression over the given numbers; else 0."""
    text = completion.strip()
    if not text or len(text) > MAX_COMPLETION_CHARS:
        return 0.0
    try:
        value, literals = _parse(text)
    except _ParseError:
        return 0.0
    if Counter(literals) - Counter(problem["numbers"]):
        return 0.0
    return CORRECT_REWARD if value == problem["target"] else FORMAT_REWARD


def prompt_rows(problems: list[dict], split: str) -> list[dict]:
    """Problems as runtime-format rows (rlaunch.tasks.prompts): the prompt text as the user
    message, the ground truth a JSON object {numbers, target, solution} (the reward reads
    numbers and target; the solution is the reference answer SFT learns)."""
    return [
        prompt_row(
            content=problem["prompt"], env_class=ENV_CLASS, method=REWARD_METHOD,
            ground_truth=json.dumps(
                {key: problem[key] for key in ("numbers", "target", "solution")},
                sort_keys=True, separators=(",", ":"),
            ),
            data_source=DATA_SOURCE, split=split, index=index,
        )
        for index, problem in enumerate(problems)
    ]


def problem_of(row: dict) -> dict:
    """The problem a runtime-format row states (the inverse of `prompt_rows`); ValueError
    naming what is wrong when the row is not a countdown row."""
    if row.get("env_class") != ENV_CLASS:
        raise ValueError(f"env_class is {row.get('env_class')!r}, not {ENV_CLASS!r}")
    messages = row.get("prompt") or []
    if len(messages) != 1 or messages[0].get("role") != "user":
        raise ValueError(f"prompt is {messages!r}, not one user message")
    truth = (row.get("reward_spec") or {}).get("ground_truth")
    try:
        answer = json.loads(truth)
        numbers, target = list(answer["numbers"]), int(answer["target"])
    except (TypeError, ValueError, KeyError):
        raise ValueError(
            f"reward_spec.ground_truth is {truth!r}, not a JSON object with numbers and target"
        ) from None
    index = (row.get("extra_info") or {}).get("index")
    return {"id": index, "prompt": messages[0]["content"], "numbers": numbers, "target": target,
            "solution": answer.get("solution")}

