"""Helpers of the plugin tests: BUILD text for a worked example, the library for a sandbox, and
the project runtime that the rules run the library on."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Optional

from pants.testutil.rule_runner import RuleRunner

from rlaunch_pants.schema_fields import target_example

REPO_ROOT = Path(__file__).resolve().parents[2]

# The worked example `colocated-1x8` of src/rlaunch/spec/examples.py, as targets.
COLOCATED_BUILD = (
    """
_GSM8K_PROMPTS = dict(
    task="gsm8k",
    template="{question} Let's think step by step and output the final answer after \\"####\\".",
    ground_truth=dict(column="answer", extract="final_answer"),
    env_class="gsm8k",
    reward_method="rule",
)
hf_model(
    name="qwen2.5-1.5b-instruct",
    repo_id="Qwen/Qwen2.5-1.5B-Instruct",
    revision="989aa7980e4cf806f80c7fef2b1adb7bc71aa306",
    facts=dict(num_attention_heads=12, num_key_value_heads=2,
               max_position_embeddings=32768, num_experts=None,
               num_hidden_layers=28, hidden_size=1536, intermediate_size=8960,
               vocab_size=151936, head_dim=None, torch_dtype="bfloat16",
               num_parameters=1543714304),
    version="2026.11.01",
)
hf_dataset(
    name="gsm8k-train",
    repo_id="openai/gsm8k",
    revision="e53f048856ff4f594e959d75785d2c2d37b678ee",
    config="main",
    split="train",
    rows=7473,
    version="2026.11.01",
)
hf_dataset(
    name="gsm8k-test",
    repo_id="openai/gsm8k",
    revision="e53f048856ff4f594e959d75785d2c2d37b678ee",
    config="main",
    split="test",
    rows=1319,
    version="2026.11.01",
)
built_artifact(
    name="gsm8k-train-prompts",
    builder="prompt_parquet",
    kind="dataset",
    deps={"source": ":gsm8k-train"},
    config=_GSM8K_PROMPTS,
    rows=7473,
    version="2026.11.30",
)
built_artifact(
    name="gsm8k-test-prompts",
    builder="prompt_parquet",
    kind="dataset",
    deps={"source": ":gsm8k-test"},
    config=_GSM8K_PROMPTS,
    rows=1319,
    version="2026.11.30",
)
rl_runtime(
    name="skyrl-0.3.0",
    profile="skyrl",
    package="skyrl==0.3.0",
    entrypoint="skyrl.train.entrypoints.main_base",
)
"""
    # The role plan and execution of the worked example, as schema.json carries it: a key added
    # to the library's models reaches every plugin test without an edit here.
    + target_example("role_plan", "plan", "role_plan")
    + "\n"
    + target_example("rl_execution", "cluster", "execution")
    + "\n"
    + """rl_run(
    name="run",
    run_name="colocated-1x8",
    version="2026.11.29",
    seed=42,
    model=":qwen2.5-1.5b-instruct",
    tokenizer=":qwen2.5-1.5b-instruct",
    train_data=":gsm8k-train-prompts",
    eval_data=":gsm8k-test-prompts",
    runtime=":skyrl-0.3.0",
    role_plan=":plan",
    execution=":cluster",
    lengths=dict(max_prompt_length=512, max_generate_length=1024, max_input_length=512,
                 max_turns=1),
    algorithm=dict(
        advantage_estimator="grpo",
        kl=dict(use_kl_loss=True, use_kl_in_reward=False, kl_loss_coef=0.001,
                kl_estimator_type="k3"),
        learning_rate=1.0e-6,
        epochs=1,
        max_training_steps=None,
        temperature=1.0,
        clip_ratio=0.2,
        fully_async=False,
        environment="gsm8k",
    ),
    logger="console",
    checkpoint=dict(ckpt_interval=10, max_ckpts_to_keep=2, hf_save_interval=-1,
                    export_final=True),
    resume=dict(mode="latest", path=None, compatible_runtimes=[]),
)
"""
)


def runtime_python() -> Optional[str]:
    """The project runtime's interpreter: $PANTS_RLAUNCH_PYTHON, else what `scripts/runtime`
    prints (it builds the runtime when missing), else None."""
    configured = os.environ.get("PANTS_RLAUNCH_PYTHON")
    if configured:
        return configured
    script = REPO_ROOT / "scripts" / "runtime"
    if not script.is_file():
        return None
    done = subprocess.run([str(script)], capture_output=True, text=True, check=False)
    path = done.stdout.strip()
    return path if done.returncode == 0 and path else None


def write_library(rule_runner: RuleRunner) -> None:
    """Copy the library sources and the runtime lock into the rule runner's build root."""
    files = {
        str(path.relative_to(REPO_ROOT)): path.read_text(encoding="utf-8")
        for path in (REPO_ROOT / "src" / "rlaunch").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    lock = REPO_ROOT / "3rdparty" / "requirements.lock"
    files["3rdparty/requirements.lock"] = lock.read_text(encoding="utf-8")
    rule_runner.write_files(files)


def library_json(python: str, code: str) -> object:
    """Run `code` (which prints JSON) on the runtime with the repo's library; the parsed value."""
    done = subprocess.run(
        [python, "-c", code],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)
