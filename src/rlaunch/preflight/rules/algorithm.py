"""Algorithm settings SkyRL 0.3.0 rejects at start-up (validate_cfg, validate_megatron_cfg),
checkpointing, and the resume policy."""

from __future__ import annotations

import re
from collections.abc import Iterator

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule

FINGERPRINT = re.compile(r"sha256:[0-9a-f]{64}")


@rule(
    "ALGO001",
    "KL in the loss and KL in the reward are mutually exclusive.",
    example=Example(edits={"algorithm.kl.use_kl_in_reward": True}),
    reads_plan=False,
)
def kl_exclusive(check: Check) -> Iterator[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_cfg`: `use_kl_in_reward` and
    `use_kl_loss` are mutually exclusive."""
    kl = check.spec.algorithm.kl
    if kl.use_kl_loss and kl.use_kl_in_reward:
        yield error(
            "ALGO001", ("algorithm.kl.use_kl_loss", "algorithm.kl.use_kl_in_reward"),
            "algorithm.kl.use_kl_loss and algorithm.kl.use_kl_in_reward are both true;"
            " SkyRL applies KL in one place only",
            "Set one of algorithm.kl.use_kl_loss or algorithm.kl.use_kl_in_reward to false.",
        )


@rule(
    "ALGO002",
    "critic_model is set exactly when the advantage estimator is gae.",
    example=Example(edits={"algorithm.advantage_estimator": "gae"}),
    reads_plan=False,
)
def critic_model_iff_gae(check: Check) -> Iterator[Finding]:
    """Error. gae without a critic model mirrors skyrl/train/utils/utils.py `validate_cfg`
    (`trainer.critic.model.path` required); a critic model without gae would be built and trained
    for nothing (skyrl/train/trainer.py `build_models` builds a critic whenever its path is set),
    so it is refused as a plan that does not mean what it says."""
    spec = check.spec
    estimator = spec.algorithm.advantage_estimator
    paths = ("critic_model", "algorithm.advantage_estimator")
    if estimator == "gae" and spec.critic_model is None:
        yield error(
            "ALGO002", paths,
            "algorithm.advantage_estimator gae needs a value model, but critic_model is null",
            "Set critic_model (usually the policy's base model), or use grpo, rloo or"
            " reinforce++.",
        )
    elif estimator != "gae" and spec.critic_model is not None:
        yield error(
            "ALGO002", paths,
            f"critic_model {spec.critic_model.name}@{spec.critic_model.version} is set but"
            f" algorithm.advantage_estimator {estimator} uses no critic",
            "Set critic_model to null, or use advantage_estimator gae.",
        )


# validate_megatron_cfg's weight sync backends, per release.
MEGATRON_WEIGHT_SYNC = {"0.3.0": "nccl", "0.4.0": "nccl, delta or sharded_rdt"}


@rule(
    "ALGO003",
    "Megatron needs rollout backend vllm, weight sync nccl, no critic and SP 1.",
    example=Example(
        base="megatron-moe-5x8", edits={"role_plan.rollout.weight_sync_backend": "gloo"}
    ),
)
def megatron_constraints(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_megatron_cfg`: vLLM, nccl weight sync,
    no critic, and SP 1 for `trainer.policy` and `trainer.ref`. SkyRL 0.4.0 also takes delta and
    sharded_rdt weight sync there, which the role plan does not offer (`weight_sync_backend` is
    nccl or gloo), so the rule is the same for both releases; the message names the run's."""
    findings: list[Finding] = []
    spec = check.spec
    plan = check.plan
    if plan.strategy != "megatron":
        return findings
    rollout = plan.rollout
    problems: list[tuple[str, str, str]] = []
    if rollout.backend != "vllm":
        problems.append(("role_plan.rollout.backend", f"rollout backend {rollout.backend}",
                         "Set role_plan.rollout.backend to vllm."))
    if rollout.weight_sync_backend != "nccl":
        problems.append(("role_plan.rollout.weight_sync_backend",
                         f"weight sync {rollout.weight_sync_backend}",
                         "Set role_plan.rollout.weight_sync_backend to nccl."))
    if plan.critic is not None or spec.critic_model is not None:
        path = "role_plan.critic" if plan.critic is not None else "critic_model"
        problems.append((path, "a critic", "Use strategy fsdp for a critic (gae), or drop it."))
    # utils.validate_megatron_cfg asserts SP 1 for both trainer.policy and trainer.ref.
    for name, role in (("policy", plan.policy), ("reference", plan.reference)):
        if role is not None and role.sequence_parallel_size != 1:
            path = f"role_plan.{name}.sequence_parallel_size"
            problems.append((path, f"{name} sequence_parallel_size {role.sequence_parallel_size}",
                             f"Set {path} to 1 (use CP instead)."))
    syncs = MEGATRON_WEIGHT_SYNC.get(spec.skyrl_release, "nccl")
    for path, what, fix in problems:
        findings.append(error(
            "ALGO003", (path, "role_plan.strategy"),
            f"strategy megatron does not support {what} (SkyRL {spec.skyrl_release} supports"
            f" vllm, {syncs} weight sync, no critic and SP 1 with Megatron)",
            fix,
        ))
    return findings


@rule(
    "ALGO004",
    "max_ckpts_to_keep is not 0 (-1 keeps all).",
    example=Example(edits={"checkpoint.max_ckpts_to_keep": 0}),
    reads_plan=False,
)
def keeps_checkpoints(check: Check) -> Iterator[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_cfg` (`max_ckpts_to_keep == 0`
    raises)."""
    if check.spec.checkpoint.max_ckpts_to_keep == 0:
        yield error(
            "ALGO004", ("checkpoint.max_ckpts_to_keep",),
            "checkpoint.max_ckpts_to_keep is 0, which would keep no checkpoint",
            "Set checkpoint.max_ckpts_to_keep to a positive count, or -1 to keep all.",
        )


@rule(
    "ALGO005",
    "ckpt_interval is at least 1.",
    example=Example(edits={"checkpoint.ckpt_interval": 0}),
    reads_plan=False,
)
def checkpoints_periodically(check: Check) -> Iterator[Finding]:
    """Error. Beyond SkyRL: a run that never checkpoints cannot resume, which the ledger's resume
    rules rely on."""
    interval = check.spec.checkpoint.ckpt_interval
    if interval < 1:
        yield error(
            "ALGO005", ("checkpoint.ckpt_interval",),
            f"checkpoint.ckpt_interval is {interval}; the run would never checkpoint, so it"
            " could not resume",
            "Set checkpoint.ckpt_interval to the number of steps between checkpoints.",
        )


def _resume_path_problem(check: Check, path: str) -> tuple[str, str] | None:
    prefix = check.spec.execution.store_prefix
    if prefix is None:
        return (
            f"resume.path {path!r} cannot be proven to be under the store, because"
            " execution.store_prefix is null",
            "Set execution.store_prefix, and point resume.path at a checkpoint under it.",
        )
    root = prefix.rstrip("/") + "/"
    parts = path[len(root):].split("/") if path.startswith(root) else []
    if len(parts) < 4 or parts[2] != "checkpoints" or ".." in parts:
        return (
            f"resume.path {path!r} is not a checkpoint under the store"
            f" ({root}<name>/<version>/checkpoints/<step>)",
            "Point resume.path at a checkpoint directory under execution.store_prefix.",
        )
    return None


@rule(
    "ALGO006",
    "The resume mode and path agree, the path is a checkpoint in the store, fingerprints valid.",
    example=Example(edits={"resume.mode": "from_path"}),
    reads_plan=False,
)
def resume_policy(check: Check) -> Iterator[Finding]:
    """Error. Beyond SkyRL: a resume path outside the store, or a mode and path that disagree,
    would start from a checkpoint nothing records."""
    resume = check.spec.resume
    paths = ("resume.mode", "resume.path")
    if resume.mode == "from_path" and not resume.path:
        yield error(
            "ALGO006", paths, "resume.mode from_path needs resume.path, but it is null",
            "Set resume.path to a checkpoint under the store, or use mode latest or none.",
        )
    elif resume.mode != "from_path" and resume.path is not None:
        yield error(
            "ALGO006", paths,
            f"resume.path {resume.path!r} is set but resume.mode {resume.mode} ignores it",
            "Set resume.path to null, or resume.mode to from_path.",
        )
    elif resume.mode == "from_path" and resume.path:
        problem = _resume_path_problem(check, resume.path)
        if problem is not None:
            yield error("ALGO006", ("resume.path",), *problem)
    for index, value in enumerate(resume.compatible_runtimes):
        if not FINGERPRINT.fullmatch(value):
            yield error(
                "ALGO006", (f"resume.compatible_runtimes.{index}",),
                f"resume.compatible_runtimes[{index}] {value!r} is not a runtime fingerprint"
                " (sha256:<64 hex>)",
                "List runtime fingerprints as printed in a launch YAML's runtime.fingerprint.",
            )


@rule(
    "ALGO007",
    "epochs >= 1, max_training_steps null or >= 1, learning_rate > 0.",
    example=Example(edits={"algorithm.epochs": 0}),
    reads_plan=False,
)
def training_length(check: Check) -> Iterator[Finding]:
    """Error. `max_training_steps` <= 0 mirrors skyrl/train/utils/utils.py `validate_cfg`; epochs <
    1 and a non-positive learning rate go beyond it (a run that trains nothing)."""
    algorithm = check.spec.algorithm
    if algorithm.epochs < 1:
        yield error(
            "ALGO007", ("algorithm.epochs",),
            f"algorithm.epochs is {algorithm.epochs}; the run would not train",
            "Set algorithm.epochs to at least 1.",
        )
    steps = algorithm.max_training_steps
    if steps is not None and steps < 1:
        yield error(
            "ALGO007", ("algorithm.max_training_steps",),
            f"algorithm.max_training_steps is {steps}; the run would not train",
            "Set algorithm.max_training_steps to at least 1, or null to run every epoch.",
        )
    if not algorithm.learning_rate > 0:
        yield error(
            "ALGO007", ("algorithm.learning_rate",),
            f"algorithm.learning_rate is {algorithm.learning_rate}; it must be positive",
            "Set algorithm.learning_rate to a positive number (e.g. 1.0e-6).",
        )
