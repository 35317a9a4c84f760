"""Batch sizes as SkyRL 0.3.0 validates them (skyrl/train/utils/utils.py validate_batch_sizes)
and shards them (skyrl/backends/skyrl_train/distributed/dispatch.py MeshDispatch.stage_chunks).
The train batch against the DP sizes and the dataset is in batch_tail.py."""

from __future__ import annotations

from typing import NamedTuple

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.parallelism import Parallelism

BATCH = "role_plan.batch"


class MiniBatch(NamedTuple):
    """The optimizer mini batch of one trained role (policy or critic)."""

    role: str
    field: str
    size: int
    dp: int | None
    """None when the role's DP is undefined (GEO001/GEO003/GEO005 report why)."""
    parallelism: Parallelism
    """The role's layout: its DP's equation."""

    def per_gpu(self, samples: int) -> int:
        """SkyRL's per-GPU mini batch: mini x n // DP, floored as validate_batch_sizes does."""
        if self.dp is None:
            raise ValueError(f"the {self.role} mini batch per GPU is asked for while the "
                             f"{self.role} DP is undefined (rules filter with `sharded`)")
        return self.size * samples // self.dp


def mini_batches(check: Check) -> list[MiniBatch]:
    """The policy's and (with a critic) the critic's mini batch, their DP None when undefined:
    rules that need no DP still see every mini batch (listed once per check: BATCH002 to
    BATCH006 read them)."""
    return check.derived(_mini_batches)


def _mini_batches(check: Check) -> list[MiniBatch]:
    if not check.batch_ok:
        return []
    plan = check.plan
    found = [MiniBatch("policy", "policy_mini_batch_size", plan.batch.policy_mini_batch_size,
                       check.policy_dp, check.parallelism("policy"))]
    critic_size = plan.batch.critic_mini_batch_size
    if plan.critic is not None and critic_size is not None:
        found.append(MiniBatch("critic", "critic_mini_batch_size", critic_size, check.critic_dp,
                               check.parallelism("critic")))
    return found


def sharded(check: Check) -> list[MiniBatch]:
    """The mini batches whose DP is defined, with at least one sequence per GPU (listed once
    per check: BATCH005 and BATCH006 read them)."""
    return check.derived(_sharded)


def _sharded(check: Check) -> list[MiniBatch]:
    samples = check.plan.batch.n_samples_per_prompt
    return [m for m in mini_batches(check) if m.dp is not None and m.per_gpu(samples) > 0]


@rule(
    "BATCH001",
    "Every batch size and the samples per prompt are at least 1.",
    example=Example(edits={"role_plan.batch.train_batch_size": 0}),
)
def positive_batch_sizes(check: Check) -> list[Finding]:
    """Error. Mirrors the `> 0` asserts of skyrl/train/utils/utils.py `validate_batch_sizes` and
    extends them to every batch size."""
    findings: list[Finding] = []
    for path, value in check.nonpositive_batch_counts:
        findings.append(error(
            "BATCH001", (path,),
            f"{path} is {value}; batch sizes and samples per prompt must be at least 1",
            f"Set {path} to a positive integer.",
        ))
    return findings


@rule(
    "BATCH002",
    "The train batch is at least the policy (and critic) mini batch.",
    example=Example(edits={"role_plan.batch.train_batch_size": 32}),
)
def train_at_least_mini(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_batch_sizes` (`train_batch_size >=
    policy_mini_batch_size`, and the critic's). Needs no DP, so it is reported even when a DP size
    is undefined."""
    findings: list[Finding] = []
    train = check.plan.batch.train_batch_size
    for mini in mini_batches(check):
        if train < mini.size:
            findings.append(error(
                "BATCH002", (f"{BATCH}.train_batch_size", f"{BATCH}.{mini.field}"),
                f"train_batch_size {train} is smaller than {mini.field} {mini.size}",
                f"Make {mini.field} at most train_batch_size {train}.",
            ))
    return findings


@rule(
    "BATCH003",
    "The train batch is a multiple of the policy (and critic) mini batch.",
    example=Example(edits={"role_plan.batch.policy_mini_batch_size": 96}),
)
def train_multiple_of_mini(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_batch_sizes` (`train_batch_size %
    policy_mini_batch_size == 0`, and the critic's). Needs no DP, so it is reported even when a DP
    size is undefined."""
    findings: list[Finding] = []
    train = check.plan.batch.train_batch_size
    for mini in mini_batches(check):
        if train % mini.size:
            findings.append(error(
                "BATCH003", (f"{BATCH}.train_batch_size", f"{BATCH}.{mini.field}"),
                f"train_batch_size {train} is not divisible by {mini.field} {mini.size}"
                f" ({train} % {mini.size} = {train % mini.size})",
                f"Make {mini.field} a divisor of train_batch_size {train}.",
            ))
    return findings


@rule(
    "BATCH004",
    "A mini batch has at least 1 sequence per GPU (error); one that does not split evenly over"
    " DP is padded (warning).",
    example=Example(
        edits={
            "role_plan.batch.policy_mini_batch_size": 2,
            "role_plan.batch.n_samples_per_prompt": 3,
        }
    ),
)
def mini_splits_over_dp(check: Check) -> list[Finding]:
    """Error below 1 sequence per GPU: mirrors skyrl/train/utils/utils.py `validate_batch_sizes`
    (`policy_mini_batch_size_per_gpu > 0`, floored). Warning when mini x n does not split evenly
    over DP: SkyRL accepts it and skyrl/backends/skyrl_train/distributed/dispatch.py
    `MeshDispatch.stage_chunks` pads each mini batch with loss-masked dummy sequences, computed and
    thrown away."""
    findings: list[Finding] = []
    samples = check.plan.batch.n_samples_per_prompt
    for mini in mini_batches(check):
        if mini.dp is None:
            continue
        sequences = mini.size * samples
        if sequences >= mini.dp and not sequences % mini.dp:
            continue  # splits evenly; the words below are written only for a finding
        head = (
            f"{mini.role} mini batch of {mini.field} {mini.size} x n_samples_per_prompt"
            f" {samples} = {sequences} sequences"
        )
        how = mini.parallelism.dp_equation()
        paths = (f"{BATCH}.{mini.field}", f"{BATCH}.n_samples_per_prompt", f"role_plan.{mini.role}")
        if sequences < mini.dp:
            findings.append(error(
                "BATCH004", paths,
                f"{head} is fewer than {mini.role} DP {mini.dp} ({how}): SkyRL's"
                " validate_batch_sizes needs at least 1 sequence per GPU",
                f"Make {mini.field} x n_samples_per_prompt at least {mini.role} DP {mini.dp}.",
            ))
        else:
            pad = -sequences % mini.dp
            findings.append(warning(
                "BATCH004", paths,
                f"{head} does not split evenly over {mini.role} DP {mini.dp} ({sequences} %"
                f" {mini.dp} = {sequences % mini.dp}; {how}): SkyRL pads every mini batch with"
                f" {pad} dummy sequences (loss mask 0) to {sequences + pad}, computed and thrown"
                " away",
                f"Make {mini.field} x n_samples_per_prompt a multiple of {mini.role} DP"
                f" {mini.dp}.",
            ))
    return findings


@rule(
    "BATCH005",
    "The per-GPU mini batch is divisible by the micro train batch per GPU.",
    example=Example(edits={"role_plan.batch.micro_train_batch_size_per_gpu": 6}),
)
def mini_multiple_of_micro(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_batch_sizes`: the floored per-GPU mini
    batch (mini x n // DP) is a multiple of `micro_train_batch_size_per_gpu`."""
    findings: list[Finding] = []
    batch = check.plan.batch
    micro = batch.micro_train_batch_size_per_gpu
    for mini in sharded(check):
        per_gpu = mini.per_gpu(batch.n_samples_per_prompt)
        if per_gpu % micro:
            findings.append(error(
                "BATCH005",
                (f"{BATCH}.{mini.field}", f"{BATCH}.micro_train_batch_size_per_gpu"),
                f"{mini.role} mini batch per GPU {per_gpu} = {mini.field} {mini.size} x"
                f" n_samples_per_prompt {batch.n_samples_per_prompt} // {mini.role} DP"
                f" {mini.dp} is not divisible by micro_train_batch_size_per_gpu {micro}"
                f" ({per_gpu} % {micro} = {per_gpu % micro})",
                f"Set micro_train_batch_size_per_gpu to a divisor of {per_gpu}.",
            ))
    return findings


@rule(
    "BATCH006",
    "The per-GPU train batch is divisible by the per-GPU mini batch.",
    example=Example(edits={"role_plan.batch.train_batch_size": 96}),
)
def train_per_gpu_multiple_of_mini(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_batch_sizes`: the floored per-GPU train
    batch is a multiple of the floored per-GPU mini batch."""
    findings: list[Finding] = []
    batch = check.plan.batch
    samples = batch.n_samples_per_prompt
    for mini in sharded(check):
        per_gpu_mini = mini.per_gpu(samples)
        # SkyRL floors both divisions; the remainder is what it asserts.
        per_gpu_train = batch.train_batch_size * samples // mini.dp
        if per_gpu_train % per_gpu_mini:
            findings.append(error(
                "BATCH006", (f"{BATCH}.train_batch_size", f"{BATCH}.{mini.field}"),
                f"{mini.role} train batch per GPU {per_gpu_train} = train_batch_size"
                f" {batch.train_batch_size} x n_samples_per_prompt {samples} // {mini.role} DP"
                f" {mini.dp} is not divisible by the per-GPU mini batch {per_gpu_mini}",
                f"Make train_batch_size a multiple of {mini.field} {mini.size}.",
            ))
    return findings


@rule(
    "BATCH007",
    "critic_mini_batch_size is set exactly when there is a critic role.",
    example=Example(edits={"role_plan.batch.critic_mini_batch_size": 64}),
)
def critic_mini_iff_critic(check: Check) -> list[Finding]:
    """Error. rlaunch renders `critic_mini_batch_size` only for a critic; a size without a critic,
    or a critic without one, says two things. Goes beyond SkyRL."""
    findings: list[Finding] = []
    plan = check.plan
    size = plan.batch.critic_mini_batch_size
    paths = (f"{BATCH}.critic_mini_batch_size", "role_plan.critic")
    if plan.critic is not None and size is None:
        findings.append(error(
            "BATCH007", paths,
            "role_plan.critic is set but role_plan.batch.critic_mini_batch_size is null",
            "Set role_plan.batch.critic_mini_batch_size (prompts per critic optimizer step).",
        ))
    elif plan.critic is None and size is not None:
        findings.append(error(
            "BATCH007", paths,
            f"role_plan.batch.critic_mini_batch_size is {size} but there is no critic role",
            "Set role_plan.batch.critic_mini_batch_size to null.",
        ))
    return findings
