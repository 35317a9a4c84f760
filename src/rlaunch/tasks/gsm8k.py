"""GSM8K (openai/gsm8k): grade-school math word problems with a worked answer ending `#### N`.

The ground truth is the number after `####`, read the way skyrl-gym 0.4.0's GSM8kEnv reads a
response (`skyrl_gym/envs/gsm8k/utils.py`, `extract_solution(method="strict")`: the first
`#### <digits . , ->`, commas and `$` removed), so that a response ending in `#### <ground truth>`
earns the env's full reward. Stdlib only: SkyRL's environment imports it too (the handoff check).
"""

from __future__ import annotations

import re

_FINAL = re.compile(r"#### (\-?[0-9\.\,]+)")


def final_answer(solution: str) -> str | None:
    """The number a worked solution ends with (`... #### 1,234` -> `1234`); None without one."""
    found = _FINAL.search(solution)
    if found is None:
        return None
    return found.group(1).replace(",", "").replace("$", "")


_NUMBER = re.compile(r"^\$?(-?[0-9][0-9,]*(?:\.[0-9]+)?|-?\.[0-9]+)$")


def stated_number(value: str) -> str | None:
    """A number as a solution states it: no thousands separators, no `$`, no trailing `.0`
    (`1,250` -> `1250`, `27.0` -> `27`, `0.50` -> `0.5`); None when `value` is not a number."""
    found = _NUMBER.match(value.strip())
    if found is None:
        return None
    text = found.group(1).replace(",", "")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-", "-0") else text


def reference_response(ground_truth: str) -> str:
    """A response that states `ground_truth` in the format GSM8kEnv grades."""
    return f"The answer is\n#### {ground_truth}"


GROUND_TRUTH = {"final_answer": final_answer, "number": stated_number}
"""How a ground truth may be taken from a source column (`ground_truth.extract` in BUILD)."""
