"""Batch sizes, as SkyRL 0.3.0 validates and shards them (skyrl_train utils.validate_batch_sizes
and trainer._remove_tail_data), plus coverage of the dataset by whole train batches."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

from rlaunch.preflight.check import Check
from rlaunch.preflight.finding import Finding, error, warning
from rlaunch.preflight.registry import Example, rule

BATCH = "role_plan.batch"


class MiniBatch(NamedTuple):
    """The optimizer mini batch of one trained role (policy or critic)."""

    role: str
    field: str
    size: int
    dp: int
    world: int


def mini_batches(check: Check) -> list[MiniBatch]:
    """The policy's and (with a critic) the critic's mini batch, when their DP is defined."""
    if not check.batch_ok:
        return []
    plan = check.spec.role_plan
    found = []
    if check.policy_dp is not None:
        found.append(MiniBatch("policy", "policy_mini_batch_size",
                               plan.batch.policy_mini_batch_size, check.policy_dp,
                               plan.policy.world_size))
    critic_size = plan.batch.critic_mini_batch_size
    if plan.critic is not None and critic_size is not None and check.critic_dp is not None:
        found.append(MiniBatch("critic", "critic_mini_batch_size", critic_size, check.critic_dp,
                               plan.critic.world_size))
    return found


@rule(
    "BATCH001",
    "Every batch size and the samples per prompt are at least 1.",
    example=Example(edits={"role_plan.batch.train_batch_size": 0}),
)
def positive_batch_sizes(check: Check) -> Iterator[Finding]:
    for path, value in check.nonpositive_batch_counts:
        yield error(
            "BATCH001", (path,),
            f"{path} is {value}; batch sizes and samples per prompt must be at least 1",
            f"Set {path} to a positive integer.",
        )


@rule(
    "BATCH002",
    "The train batch is at least the policy (and critic) mini batch.",
    example=Example(edits={"role_plan.batch.train_batch_size": 32}),
)
def train_at_least_mini(check: Check) -> Iterator[Finding]:
    train = check.spec.role_plan.batch.train_batch_size
    for mini in mini_batches(check):
        if train < mini.size:
            yield error(
                "BATCH002", (f"{BATCH}.train_batch_size", f"{BATCH}.{mini.field}"),
                f"train_batch_size {train} is smaller than {mini.field} {mini.size}",
                f"Make {mini.field} at most train_batch_size {train}.",
            )


@rule(
    "BATCH003",
    "The train batch is a multiple of the policy (and critic) mini batch.",
    example=Example(edits={"role_plan.batch.policy_mini_batch_size": 96}),
)
def train_multiple_of_mini(check: Check) -> Iterator[Finding]:
    train = check.spec.role_plan.batch.train_batch_size
    for mini in mini_batches(check):
        if train % mini.size:
            yield error(
                "BATCH003", (f"{BATCH}.train_batch_size", f"{BATCH}.{mini.field}"),
                f"train_batch_size {train} is not divisible by {mini.field} {mini.size}"
                f" ({train} % {mini.size} = {train % mini.size})",
                f"Make {mini.field} a divisor of train_batch_size {train}.",
            )


@rule(
    "BATCH004",
    "A mini batch's sequences (mini x n) split evenly over DP, at least 1 per GPU.",
    example=Example(
        edits={
            "role_plan.batch.policy_mini_batch_size": 2,
            "role_plan.batch.n_samples_per_prompt": 3,
        }
    ),
)
def mini_splits_over_dp(check: Check) -> Iterator[Finding]:
    samples = check.spec.role_plan.batch.n_samples_per_prompt
    for mini in mini_batches(check):
        sequences = mini.size * samples
        head = (
            f"{mini.role} mini batch per GPU = {mini.field} {mini.size} x n_samples_per_prompt"
            f" {samples} / {mini.role} DP {mini.dp} = {sequences}/{mini.dp} sequences"
        )
        tail = f"({check.dp_equation(mini.role, mini.world)})"
        paths = (f"{BATCH}.{mini.field}", f"{BATCH}.n_samples_per_prompt", f"role_plan.{mini.role}")
        if sequences < mini.dp:
            yield error(
                "BATCH004", paths, f"{head}, below 1 per GPU {tail}",
                f"Make {mini.field} x n_samples_per_prompt at least {mini.role} DP {mini.dp}.",
            )
        elif sequences % mini.dp:
            yield error(
                "BATCH004", paths,
                f"{head}, not a whole number ({sequences} % {mini.dp} = {sequences % mini.dp})"
                f" {tail}",
                f"Make {mini.field} x n_samples_per_prompt a multiple of {mini.role} DP"
                f" {mini.dp}.",
            )


def exact_per_gpu(mini: MiniBatch, samples: int) -> int | None:
    sequences = mini.size * samples
    return sequences // mini.dp if sequences >= mini.dp and sequences % mini.dp == 0 else None


@rule(
    "BATCH005",
    "The per-GPU mini batch is divisible by the micro train batch per GPU.",
    example=Example(edits={"role_plan.batch.micro_train_batch_size_per_gpu": 6}),
)
def mini_multiple_of_micro(check: Check) -> Iterator[Finding]:
    batch = check.spec.role_plan.batch
    micro = batch.micro_train_batch_size_per_gpu
    for mini in mini_batches(check):
        per_gpu = exact_per_gpu(mini, batch.n_samples_per_prompt)
        if per_gpu is not None and per_gpu % micro:
            yield error(
                "BATCH005",
                (f"{BATCH}.{mini.field}", f"{BATCH}.micro_train_batch_size_per_gpu"),
                f"{mini.role} mini batch per GPU {per_gpu} = {mini.field} {mini.size} x"
                f" n_samples_per_prompt {batch.n_samples_per_prompt} / {mini.role} DP {mini.dp}"
                f" is not divisible by micro_train_batch_size_per_gpu {micro}"
                f" ({per_gpu} % {micro} = {per_gpu % micro})",
                f"Set micro_train_batch_size_per_gpu to a divisor of {per_gpu}.",
            )


@rule(
    "BATCH006",
    "The per-GPU train batch is divisible by the per-GPU mini batch.",
    example=Example(edits={"role_plan.batch.train_batch_size": 96}),
)
def train_per_gpu_multiple_of_mini(check: Check) -> Iterator[Finding]:
    batch = check.spec.role_plan.batch
    samples = batch.n_samples_per_prompt
    for mini in mini_batches(check):
        per_gpu_mini = exact_per_gpu(mini, samples)
        if per_gpu_mini is None:
            continue
        # SkyRL floors this division; the remainder check below is what it asserts.
        per_gpu_train = batch.train_batch_size * samples // mini.dp
        if per_gpu_train % per_gpu_mini:
            yield error(
                "BATCH006", (f"{BATCH}.train_batch_size", f"{BATCH}.{mini.field}"),
                f"{mini.role} train batch per GPU {per_gpu_train} = train_batch_size"
                f" {batch.train_batch_size} x n_samples_per_prompt {samples} / {mini.role} DP"
                f" {mini.dp} is not divisible by the per-GPU mini batch {per_gpu_mini}",
                f"Make train_batch_size a multiple of {mini.field} {mini.size}.",
            )


@rule(
    "BATCH007",
    "critic_mini_batch_size is set exactly when there is a critic role.",
    example=Example(edits={"role_plan.batch.critic_mini_batch_size": 64}),
)
def critic_mini_iff_critic(check: Check) -> Iterator[Finding]:
    plan = check.spec.role_plan
    size = plan.batch.critic_mini_batch_size
    paths = (f"{BATCH}.critic_mini_batch_size", "role_plan.critic")
    if plan.critic is not None and size is None:
        yield error(
            "BATCH007", paths,
            "role_plan.critic is set but role_plan.batch.critic_mini_batch_size is null",
            "Set role_plan.batch.critic_mini_batch_size (prompts per critic optimizer step).",
        )
    elif plan.critic is None and size is not None:
        yield error(
            "BATCH007", paths,
            f"role_plan.batch.critic_mini_batch_size is {size} but there is no critic role",
            "Set role_plan.batch.critic_mini_batch_size to null.",
        )


@rule(
    "BATCH008",
    "The train batch is at least lcm(policy DP, reference DP) (SkyRL validate_batch_sizes).",
    example=Example(
        edits={
            "role_plan.batch.train_batch_size": 4,
            "role_plan.batch.policy_mini_batch_size": 4,
        }
    ),
)
def train_at_least_lcm(check: Check) -> Iterator[Finding]:
    terms = check.lcm_terms(with_critic=False)
    if not check.batch_ok or any(dp == 0 for _, dp in terms):
        return
    lcm = math.lcm(*(dp for _, dp in terms))
    train = check.spec.role_plan.batch.train_batch_size
    if train < lcm:
        equation = check.lcm_equation(terms)
        roles = tuple(f"role_plan.{name.split()[0]}" for name, _ in terms)
        yield error(
            "BATCH008", (f"{BATCH}.train_batch_size", *roles),
            f"train_batch_size {train} is smaller than {equation}",
            f"Make train_batch_size at least {lcm}.",
        )


@rule(
    "BATCH009",
    "The train batch is a multiple of the trainers' lcm of DP sizes (no prompt dropped per step).",
    example=Example(
        edits={
            "role_plan.batch.train_batch_size": 12,
            "role_plan.batch.policy_mini_batch_size": 4,
        }
    ),
)
def no_prompts_dropped_per_step(check: Check) -> Iterator[Finding]:
    terms = check.lcm_terms(with_critic=True)
    if not check.batch_ok or any(dp == 0 for _, dp in terms):
        return
    lcm = math.lcm(*(dp for _, dp in terms))
    train = check.spec.role_plan.batch.train_batch_size
    if train % lcm:
        equation = check.lcm_equation(terms)
        yield error(
            "BATCH009", (f"{BATCH}.train_batch_size",),
            f"train_batch_size {train} is not a multiple of {equation}: SkyRL drops the last"
            f" {train % lcm} prompts of every step to shard evenly",
            f"Make train_batch_size a multiple of {lcm}.",
        )


@rule(
    "BATCH010",
    "The training data holds at least one train batch; a dropped tail is reported.",
    example=Example(edits={"train_data.rows": 100}),
)
def dataset_covers_batches(check: Check) -> Iterator[Finding]:
    data = check.spec.train_data
    rows = getattr(data, "rows", None)  # a model in the data slot (ART003) has no rows
    train = check.spec.role_plan.batch.train_batch_size
    if rows is None or train < 1:
        return
    name = f"train_data {data.name}@{data.version}"
    paths = ("train_data.rows", f"{BATCH}.train_batch_size")
    if rows < train:
        yield error(
            "BATCH010", paths,
            f"{name} has {rows} rows, fewer than train_batch_size {train}: not one training step",
            f"Use a larger split, or make train_batch_size at most {rows}.",
        )
    elif rows % train:
        yield warning(
            "BATCH010", paths,
            f"{name} has {rows} rows = {rows // train} batches of train_batch_size {train}"
            f" + {rows % train}: the last {rows % train} prompts are dropped every epoch",
            f"Accept the dropped tail, or pick a train_batch_size that divides {rows}.",
        )


@rule(
    "BATCH011",
    "The eval batch is no larger than the eval data (warning).",
    example=Example(edits={"role_plan.batch.eval_batch_size": 2048}),
)
def eval_batch_fits(check: Check) -> Iterator[Finding]:
    data = check.spec.eval_data
    size = check.spec.role_plan.batch.eval_batch_size
    rows = getattr(data, "rows", None)
    if rows is None or size < 1:
        return
    if size > rows:
        yield warning(
            "BATCH011", ("role_plan.batch.eval_batch_size", "eval_data.rows"),
            f"eval_batch_size {size} exceeds the {rows} rows of eval_data"
            f" {data.name}@{data.version}: evaluation runs one partial batch",
            f"Set role_plan.batch.eval_batch_size to at most {rows}.",
        )


@rule(
    "BATCH012",
    "Fully asynchronous training needs train batch == policy mini batch.",
    example=Example(edits={"algorithm.fully_async": True}),
)
def fully_async_one_mini_batch(check: Check) -> Iterator[Finding]:
    batch = check.spec.role_plan.batch
    if check.spec.algorithm.fully_async and batch.train_batch_size != batch.policy_mini_batch_size:
        yield error(
            "BATCH012",
            ("algorithm.fully_async", f"{BATCH}.train_batch_size",
             f"{BATCH}.policy_mini_batch_size"),
            f"algorithm.fully_async needs train_batch_size == policy_mini_batch_size, but"
            f" train_batch_size {batch.train_batch_size} != policy_mini_batch_size"
            f" {batch.policy_mini_batch_size}",
            "Set policy_mini_batch_size equal to train_batch_size, or turn fully_async off.",
        )
