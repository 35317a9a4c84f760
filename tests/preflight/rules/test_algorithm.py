"""Algorithm rules (rlaunch/preflight/rules/algorithm.py)."""

from __future__ import annotations

from preflight.helpers import example, findings, messages
from rlaunch.spec.examples import QWEN25_1_5B

MEGATRON = "megatron-moe-5x8"
CHECKPOINT = "gs://rlaunch-example/store/colocated-1x8/2026.11.01/checkpoints/global_step_10"


def test_algo001_kl_in_loss_and_reward_are_exclusive() -> None:
    assert messages(example(edits={"algorithm.kl.use_kl_in_reward": True}), "ALGO001") == [
        "algorithm.kl.use_kl_loss and algorithm.kl.use_kl_in_reward are both true; SkyRL"
        " applies KL in one place only"
    ]
    in_reward_only = example(edits={"algorithm.kl.use_kl_in_reward": True,
                                    "algorithm.kl.use_kl_loss": False})
    assert messages(in_reward_only, "ALGO001") == []


def test_algo002_critic_model_exactly_with_gae() -> None:
    assert messages(example(edits={"algorithm.advantage_estimator": "gae"}), "ALGO002") == [
        "algorithm.advantage_estimator gae needs a value model, but critic_model is null"
    ]
    extra = example(edits={"critic_model": dict(QWEN25_1_5B, name="critic")})
    assert messages(extra, "ALGO002") == [
        "critic_model critic@2026.11.01 is set but algorithm.advantage_estimator grpo uses no"
        " critic"
    ]
    assert messages(example(), "ALGO002") == []


def test_algo003_megatron_constraints_each_reported() -> None:
    data = example(MEGATRON, {
        "role_plan.rollout.weight_sync_backend": "gloo",
        "role_plan.rollout.backend": "sglang",
        "role_plan.policy.sequence_parallel_size": 2,
        "role_plan.reference.sequence_parallel_size": 4,
        "critic_model": dict(QWEN25_1_5B, name="critic"),
    })
    found = findings(data, "ALGO003")
    tail = " (SkyRL 0.3.0 supports vllm, nccl weight sync, no critic and SP 1 with Megatron)"
    assert [(f.paths[0], f.message) for f in found] == [
        ("role_plan.rollout.backend", "strategy megatron does not support rollout backend"
         f" sglang{tail}"),
        ("role_plan.rollout.weight_sync_backend", "strategy megatron does not support weight"
         f" sync gloo{tail}"),
        ("critic_model", f"strategy megatron does not support a critic{tail}"),
        ("role_plan.policy.sequence_parallel_size", "strategy megatron does not support"
         f" policy sequence_parallel_size 2{tail}"),
        # skyrl/train/utils/utils.py validate_megatron_cfg asserts SP 1 for trainer.ref too.
        ("role_plan.reference.sequence_parallel_size", "strategy megatron does not support"
         f" reference sequence_parallel_size 4{tail}"),
    ]
    assert messages(example(MEGATRON), "ALGO003") == []
    # A 0.4.0 run is told what 0.4.0's validate_megatron_cfg takes.
    upgraded = example(MEGATRON, {"role_plan.rollout.weight_sync_backend": "gloo",
                                  "runtime.package": "skyrl==0.4.0"})
    assert messages(upgraded, "ALGO003") == [
        "strategy megatron does not support weight sync gloo (SkyRL 0.4.0 supports vllm, nccl,"
        " delta or sharded_rdt weight sync, no critic and SP 1 with Megatron)"]
    # FSDP may use gloo.
    assert messages(example(edits={"role_plan.rollout.weight_sync_backend": "gloo"}),
                    "ALGO003") == []


def test_algo004_max_ckpts_to_keep_not_zero() -> None:
    assert messages(example(edits={"checkpoint.max_ckpts_to_keep": 0}), "ALGO004") == [
        "checkpoint.max_ckpts_to_keep is 0, which would keep no checkpoint"
    ]
    assert messages(example(edits={"checkpoint.max_ckpts_to_keep": -1}), "ALGO004") == []


def test_algo005_ckpt_interval_positive() -> None:
    assert messages(example(edits={"checkpoint.ckpt_interval": 0}), "ALGO005") == [
        "checkpoint.ckpt_interval is 0; the run would never checkpoint, so it could not resume"
    ]
    assert messages(example(), "ALGO005") == []


def test_algo006_resume_mode_and_path() -> None:
    assert messages(example(edits={"resume.mode": "from_path"}), "ALGO006") == [
        "resume.mode from_path needs resume.path, but it is null"
    ]
    assert messages(example(edits={"resume.path": CHECKPOINT}), "ALGO006") == [
        f"resume.path '{CHECKPOINT}' is set but resume.mode latest ignores it"
    ]
    ambient = example(edits={"resume.mode": "from_path", "resume.path": "/home/me/ckpt"})
    assert messages(ambient, "ALGO006") == [
        "resume.path '/home/me/ckpt' is not a checkpoint under the store"
        " (gs://rlaunch-example/store/<name>/<version>/checkpoints/<step>)"
    ]
    no_store = example(edits={"resume.mode": "from_path", "resume.path": CHECKPOINT,
                              "execution.store_prefix": None})
    assert messages(no_store, "ALGO006") == [
        f"resume.path '{CHECKPOINT}' cannot be proven to be under the store, because"
        " execution.store_prefix is null"
    ]
    bad_fingerprint = example(edits={"resume.compatible_runtimes": ["skyrl-0.2.0"]})
    assert messages(bad_fingerprint, "ALGO006") == [
        "resume.compatible_runtimes[0] 'skyrl-0.2.0' is not a runtime fingerprint"
        " (sha256:<64 hex>)"
    ]
    good = example(edits={"resume.mode": "from_path", "resume.path": CHECKPOINT,
                          "resume.compatible_runtimes": ["sha256:" + "a" * 64]})
    assert messages(good, "ALGO006") == []
    assert messages(example(), "ALGO006") == []


def test_algo007_training_length() -> None:
    data = example(edits={"algorithm.epochs": 0, "algorithm.max_training_steps": 0,
                          "algorithm.learning_rate": 0.0})
    assert messages(data, "ALGO007") == [
        "algorithm.epochs is 0; the run would not train",
        "algorithm.max_training_steps is 0; the run would not train",
        "algorithm.learning_rate is 0.0; it must be positive",
    ]
    assert messages(example(edits={"algorithm.max_training_steps": 5}), "ALGO007") == []
