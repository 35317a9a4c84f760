"""Math answers (AIME, MATH-style datasets) as skyrl-gym 0.4.0's AIMEEnv grades them.

`AIMEEnv.step` (skyrl_gym/envs/aime/env.py) calls `compute_score` (skyrl_gym/envs/aime/utils.py),
which with its defaults takes the last `Answer: X` of the response's last 300 characters
(`is_correct_minerva`), normalizes it and the ground truth with `normalize_final_answer`, and
scores 1.0 when they are equal, -1.0 otherwise. Stdlib only: SkyRL's environment imports it too.
"""

from __future__ import annotations

from rlaunch.tasks.gsm8k import stated_number


def reference_response(ground_truth: str) -> str:
    """A response that states `ground_truth` in the format AIMEEnv grades."""
    return f"The final answer.\nAnswer: {ground_truth}"


GROUND_TRUTH = {"number": stated_number}
"""How a ground truth may be taken from a source column, besides `verbatim`."""
