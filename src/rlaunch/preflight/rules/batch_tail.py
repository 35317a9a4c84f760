"""The train batch against the trainers' DP sizes and the dataset, as SkyRL 0.3.0 checks and
trims it: utils.validate_batch_sizes (the lcm of DP sizes), RayPPOTrainer._remove_tail_data and
preprocess.compute_prompt_mini_batch_boundaries (the step's prompt count), and
trainer_utils.build_dataloader (whole train batches per epoch)."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.preflight.rules.batch import BATCH
from rlaunch.memo import Memo


def dp_terms(check: Check, *, with_critic: bool) -> list[tuple[str, int]] | None:
    """`(name, DP)` of the enabled trainer roles, None when one of them has no defined DP."""
    if not check.batch_ok:
        return None
    terms = check.lcm_terms(with_critic=with_critic)
    defined = [(name, dp) for name, dp in terms if dp is not None]
    return defined if len(defined) == len(terms) else None


def prompt_stride(lcm: int, samples: int) -> int:
    """The prompt count SkyRL's _remove_tail_data keeps a multiple of: the smallest m with
    m x n_samples_per_prompt divisible by lcm, i.e. lcm / gcd(lcm, n_samples_per_prompt)."""
    return lcm // math.gcd(lcm, samples)


@rule(
    "BATCH008",
    "The train batch's sequences (train x n) are at least lcm(policy DP, reference DP).",
    example=Example(
        edits={
            "role_plan.batch.train_batch_size": 1,
            "role_plan.batch.policy_mini_batch_size": 1,
            "role_plan.batch.n_samples_per_prompt": 4,
        }
    ),
)
def train_at_least_lcm(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_batch_sizes`: `train_batch_size *
    n_samples_per_prompt >= lcm(policy DP, reference DP)`, counted in sequences; the critic is not
    in its lcm."""
    findings: list[Finding] = []
    terms = dp_terms(check, with_critic=False)
    if terms is None:
        return findings
    lcm = math.lcm(*(dp for _, dp in terms))
    batch = check.plan.batch
    sequences = batch.train_batch_size * batch.n_samples_per_prompt
    if sequences < lcm:
        roles = tuple(f"role_plan.{name.split()[0]}" for name, _ in terms)
        findings.append(error(
            "BATCH008", (f"{BATCH}.train_batch_size", f"{BATCH}.n_samples_per_prompt", *roles),
            f"train_batch_size {batch.train_batch_size} x n_samples_per_prompt"
            f" {batch.n_samples_per_prompt} = {sequences} sequences, fewer than"
            f" {check.lcm_equation(terms)}",
            f"Make train_batch_size x n_samples_per_prompt at least {lcm}.",
        ))
    return findings


@rule(
    "BATCH009",
    "The train batch is a multiple of SkyRL's tail-drop stride lcm(DP sizes) / gcd(lcm, n):"
    " otherwise the step crashes.",
    example=Example(
        edits={
            "role_plan.batch.train_batch_size": 12,
            "role_plan.batch.policy_mini_batch_size": 12,
            "role_plan.batch.n_samples_per_prompt": 1,
        }
    ),
)
def no_prompts_dropped_per_step(check: Check) -> list[Finding]:
    """Error. skyrl/train/trainer.py `RayPPOTrainer._remove_tail_data` keeps the largest multiple
    of lcm / gcd(lcm, n_samples_per_prompt) of a step's prompts (lcm over the policy's, critic's
    and reference's DP, skyrl/backends/skyrl_train/workers/worker_dispatch.py `get_lcm_dp_size`);
    skyrl/train/dataset/preprocess.py `compute_prompt_mini_batch_boundaries` then asserts the
    prompt count equals `train_batch_size`. So a trimmed step is not a silent loss but an
    AssertionError in the first training step. Beyond `validate_cfg`."""
    findings: list[Finding] = []
    terms = dp_terms(check, with_critic=True)
    if terms is None:
        return findings
    batch = check.plan.batch
    lcm = math.lcm(*(dp for _, dp in terms))
    samples = batch.n_samples_per_prompt
    stride = prompt_stride(lcm, samples)
    train = batch.train_batch_size
    if train % stride:
        kept = train // stride * stride
        findings.append(error(
            "BATCH009", (f"{BATCH}.train_batch_size", f"{BATCH}.n_samples_per_prompt"),
            f"train_batch_size {train} is not a multiple of {stride} prompts ="
            f" {check.lcm_equation(terms)} / gcd({lcm}, n_samples_per_prompt {samples}):"
            f" SkyRL's _remove_tail_data trims each step to {kept} prompts, and the step then"
            f" fails its assert that the prompt count equals train_batch_size {train}",
            f"Make train_batch_size a multiple of {stride}.",
        ))
    return findings


@lru_cache(maxsize=1024)
def _divisors(number: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(number) + 1) if number % d == 0]
    return tuple(sorted(set(small + [number // d for d in small])))


@lru_cache(maxsize=4096)
def _policy_mini_for(train: int, current: int, samples: int, dp: int | None, micro: int
                     ) -> int | None:
    """The policy mini batch closest to `current` (within half to twice it) that divides
    `train` and keeps the per-GPU mini batch whole and a multiple of the micro batch (BATCH003
    to BATCH005)."""

    def fits(mini: int) -> bool:
        if dp is None:
            return True
        sequences = mini * samples
        return sequences % dp == 0 and (sequences // dp) % micro == 0

    options = [mini for mini in _divisors(train)
               if current // 2 <= mini <= 2 * current and fits(mini)]
    if not options:
        return None
    return min(options, key=lambda mini: (abs(mini - current), mini))


@lru_cache(maxsize=1024)
def _train_candidates(rows: int, train: int, samples: int, lcm: int, critic: int | None
                      ) -> tuple[tuple[int, int], ...]:
    """`(train_batch_size, rows left out)` of the train sizes from half to twice `train` that
    leave out fewer rows, keep the tail-drop stride (BATCH009), the lcm (BATCH008) and the critic
    mini batch (BATCH003): fewest left out first, then nearest `train`, then smallest. They do
    not depend on the mini batch, the DP or the micro batch, which a search varies more."""
    stride = prompt_stride(lcm, samples)
    candidates = []
    low = max(1, train // 2)
    current = rows % train
    for size in range(-(-low // stride) * stride, min(2 * train, rows) + 1, stride):
        left = rows % size
        if left >= current or size * samples < lcm:
            continue
        if critic is not None and size % critic:
            continue
        candidates.append((left, abs(size - train), size))
    return tuple((size, left) for left, _, size in sorted(candidates))


def usable_train_sizes(check: Check, rows: int, limit: int = 3) -> list[tuple[int, int, int]]:
    """Up to `limit` `(train_batch_size, policy_mini_batch_size, rows left out per epoch)`
    between half and twice the current train batch that leave out fewer rows and keep every
    batch rule: fewest left out first, then nearest the current size."""
    return list(_train_size_choices(check, rows, limit))


def _train_size_choices(check: Check, rows: int, limit: int = 3
                        ) -> tuple[tuple[int, int, int], ...]:
    batch = check.plan.batch
    terms = dp_terms(check, with_critic=True)
    lcm = math.lcm(*(dp for _, dp in terms)) if terms is not None else 1
    critic = batch.critic_mini_batch_size if check.plan.critic is not None else None
    return _usable_train_sizes(
        rows, limit, batch.train_batch_size, batch.n_samples_per_prompt, lcm, critic,
        batch.policy_mini_batch_size, check.policy_dp, batch.micro_train_batch_size_per_gpu,
    )


@lru_cache(maxsize=4096)
def _usable_train_sizes(rows: int, limit: int, train: int, samples: int, lcm: int,
                        critic: int | None, mini: int, dp: int | None, micro: int
                        ) -> tuple[tuple[int, int, int], ...]:
    """usable_train_sizes of the sizes alone (cached: a search asks again and again)."""
    # Best first, and a mini batch is looked for only until `limit` sizes have one.
    found = []
    for size, left in _train_candidates(rows, train, samples, lcm, critic):
        chosen = _policy_mini_for(size, mini, samples, dp, micro)
        if chosen is not None:
            found.append((size, chosen, left))
            if len(found) == limit:
                break
    return tuple(found)


@rule(
    "BATCH010",
    "The training data holds at least one train batch; the rows each epoch leaves out are"
    " reported (warning).",
    example=Example(edits={"train_data.rows": 100}),
)
def dataset_covers_batches(check: Check) -> list[Finding]:
    """Error when the data holds no whole train batch (skyrl/train/utils/trainer_utils.py
    `build_dataloader` drops the last partial batch, leaving no step). Warning for the rows each
    epoch leaves out: the loader shuffles every epoch, so no row is lost for good; the fix offers
    train and mini batch sizes that leave out fewer and keep every batch rule."""
    findings: list[Finding] = []
    data = check.shared(_train_rows)
    train = check.plan.batch.train_batch_size
    if data is None or train < 1:
        return findings
    rows, name, version = data
    if rows < train:
        findings.append(error(
            "BATCH010", _COVER_PATHS,
            f"train_data {name}@{version} has {rows} rows, fewer than train_batch_size"
            f" {train}: not one training step",
            f"Use a larger split, or make train_batch_size at most {rows}.",
        ))
        return findings
    if rows % train == 0:
        return findings
    # trainer_utils.build_dataloader: shuffle=True, drop_last=True for the train split.
    choices = _train_size_choices(check, rows) if check.batch_ok else ()
    key = (name, version, rows, train, choices)
    found = _LEFT_OUT.get(key)
    if found is None:
        found = _LEFT_OUT.put(key, _left_out(*key))
    findings.append(found)
    return findings


def _rows(data: Any) -> tuple[int, str, str] | None:
    """A data slot's rows, name and version; None for an artifact without rows (a model in the
    data slot, ART003)."""
    rows = getattr(data, "rows", None)
    return None if rows is None else (rows, data.name, data.version)


def _train_rows(check: Check) -> tuple[int, str, str] | None:
    """`_rows` of `train_data` (once per distinct part beside the plan: `Check.shared`)."""
    return _rows(check.spec.train_data)


def _eval_rows(check: Check) -> tuple[int, str, str] | None:
    """`_rows` of `eval_data` (once per distinct part beside the plan: `Check.shared`)."""
    return _rows(check.spec.eval_data)


_COVER_PATHS = ("train_data.rows", f"{BATCH}.train_batch_size")
_LEFT_OUT: Memo[tuple[Any, ...], Finding] = Memo(1024)
"""BATCH010's warning, by all its text reads (the data's name, version and rows, the train
batch, the sizes offered): a search meets the same few again and again."""


def _left_out(name: str, version: str, rows: int, train: int,
              choices: tuple[tuple[int, int, int], ...]) -> Finding:
    rest = rows % train
    offer = "; ".join(
        f"train_batch_size {size} with policy_mini_batch_size {mini} leaves out {left}"
        for size, mini, left in choices
    )
    return warning(
        "BATCH010", _COVER_PATHS,
        f"train_data {name}@{version} has {rows} rows = {rows // train} batches of"
        f" train_batch_size {train} + {rest}:"
        f" each epoch trains on {rows - rest} prompts and leaves out {rest}"
        f" ({100 * rest / rows:.1f}%), a fresh random draw every epoch (SkyRL's train"
        " dataloader shuffles and drops the last partial batch)",
        "No row is lost for good, so this is usually fine"
        + (f". To leave out fewer, within the batch rules: {offer}." if offer else
           f"; no train_batch_size from {max(1, train // 2)} to {min(2 * train, rows)} that"
           " keeps the batch rules leaves out fewer."),
    )


@rule(
    "BATCH011",
    "The eval batch is no larger than the eval data (warning).",
    example=Example(edits={"role_plan.batch.eval_batch_size": 2048}),
)
def eval_batch_fits(check: Check) -> list[Finding]:
    """Warning. An eval batch larger than the eval data runs as one partial batch (the eval loader
    keeps it, `drop_last=False`)."""
    findings: list[Finding] = []
    data = check.shared(_eval_rows)
    size = check.plan.batch.eval_batch_size
    if data is None or size < 1:
        return findings
    rows, name, version = data
    if size > rows:
        findings.append(warning(
            "BATCH011", ("role_plan.batch.eval_batch_size", "eval_data.rows"),
            f"eval_batch_size {size} exceeds the {rows} rows of eval_data"
            f" {name}@{version}: evaluation runs one partial batch",
            f"Set role_plan.batch.eval_batch_size to at most {rows}.",
        ))
    return findings


@rule(
    "BATCH012",
    "Fully asynchronous training needs train batch == policy mini batch.",
    example=Example(edits={"algorithm.fully_async": True}),
)
def fully_async_one_mini_batch(check: Check) -> list[Finding]:
    """Error. skyrl/train/fully_async_trainer.py `FullyAsyncRayPPOTrainer.__init__` asserts
    `train_batch_size == policy_mini_batch_size` at start-up."""
    findings: list[Finding] = []
    batch = check.plan.batch
    if check.spec.algorithm.fully_async and batch.train_batch_size != batch.policy_mini_batch_size:
        findings.append(error(
            "BATCH012",
            ("algorithm.fully_async", f"{BATCH}.train_batch_size",
             f"{BATCH}.policy_mini_batch_size"),
            f"algorithm.fully_async needs train_batch_size == policy_mini_batch_size, but"
            f" train_batch_size {batch.train_batch_size} != policy_mini_batch_size"
            f" {batch.policy_mini_batch_size}",
            "Set policy_mini_batch_size equal to train_batch_size, or turn fully_async off.",
        ))
    return findings
