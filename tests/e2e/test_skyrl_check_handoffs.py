"""`./pants run <rl_run> -- --check-handoffs` for a GSM8K-shaped SkyRL experiment, end to end:
the real ./pants (a scratch copy of the repository with one experiment added), the artifacts
built from a local Hub (tests/hubserver.py) into a store on moto's S3 server
(tests/objectstores.py), the local Ray head, and SkyRL 0.3.0's own handoff check
(rlaunch.runtimes.skyrl_handoff) in SkyRL 0.3.0's environment (the rehearsal env: CPython 3.11
with the real torch and ray), which the job's interpreter follows from the runtime pin
(`RLAUNCH_SKYRL_PYTHON`).

The tokenizer is trained by tests/contract/make_tokenizer.py in that environment and served as
the model repo with a config.json (and once more without a chat template, as a base model's);
the data is tests/gsm8kdata.py's GSM8K-shaped split. Good inputs pass with the staged paths,
the rows kept and the ground truth's reward; no chat template fails with the check's message
(its other messages are tests/contract/test_skyrl_handoff.py's); no ground truth and an env
class prompt_parquet cannot feed with `check`'s. The environment is tests/contract's
(contract_python), and the check is the adapter's default module.
"""

from __future__ import annotations

import json
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pants_scratch import ScratchRepo

import gsm8kdata
from contract.skyrl_env import contract_python
from hubserver import hub_environment, serve_hub
from objectstores import ObjectStoreServer

CONTRACT = Path(__file__).resolve().parents[1] / "contract"
MODEL_REPO = "rlaunch-tests/tiny-chat"
MODEL_COMMIT = "c" * 40
BASE_REPO = "rlaunch-tests/tiny-base"
"""The same model whose tokenizer has no chat template (a base model's)."""
# A model folder's config.json: what the facts in BUILD state, and what transformers reads.
CONFIG = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 2048, "intermediate_size": 128, "vocab_size": 64,
    "torch_dtype": "float32",
}
# One float32 tensor of vocab x hidden, zeros: the weights the snapshot builder counts
# (num_parameters) and the handoff check never loads.
EMBEDDING = {"model.embed_tokens.weight": {"dtype": "F32", "shape": [64, 64],
                                           "data_offsets": [0, 64 * 64 * 4]}}
BUILD = f'''
hf_model(
    name="tiny-chat",
    description="A word-level tokenizer with a chat template, and a 2-layer config.",
    repo_id="{MODEL_REPO}",
    revision="{MODEL_COMMIT}",
    facts=dict(num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
               num_experts=None, num_hidden_layers=2, hidden_size=64, intermediate_size=128,
               vocab_size=64, head_dim=None, torch_dtype="float32", num_parameters=4096),
    version="2026.11.30",
)

hf_model(
    name="tiny-base",
    description="tiny-chat without a chat template.",
    repo_id="{BASE_REPO}",
    revision="{MODEL_COMMIT}",
    facts=dict(num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
               num_experts=None, num_hidden_layers=2, hidden_size=64, intermediate_size=128,
               vocab_size=64, head_dim=None, torch_dtype="float32", num_parameters=4096),
    version="2026.11.30",
)

hf_dataset(name="gsm8k-train", repo_id="{gsm8kdata.REPO}", revision="{gsm8kdata.COMMIT}",
           config="main", split="train", rows=12, version="2026.11.30")
hf_dataset(name="gsm8k-test", repo_id="{gsm8kdata.REPO}", revision="{gsm8kdata.COMMIT}",
           config="main", split="test", rows=4, version="2026.11.30")

_PROMPTS = dict(
    task="gsm8k",
    template={gsm8kdata.TEMPLATE!r},
    ground_truth=dict(column="answer", extract="final_answer"),
    env_class="gsm8k",
    reward_method="rule",
)
built_artifact(name="train-prompts", builder="prompt_parquet", kind="dataset",
               deps={{"source": ":gsm8k-train"}}, config=_PROMPTS, rows=12, version="2026.11.30")
built_artifact(name="test-prompts", builder="prompt_parquet", kind="dataset",
               deps={{"source": ":gsm8k-test"}}, config=_PROMPTS, rows=4, version="2026.11.30")
# The same rows with the ground truth left out of the template's config.
built_artifact(name="no-truth-prompts", builder="prompt_parquet", kind="dataset",
               deps={{"source": ":gsm8k-train"}}, config=dict(_PROMPTS, ground_truth=None),
               rows=12, version="2026.11.30")
# ... and with an env class whose rows prompt_parquet cannot write (skyrl-gym has none such).
built_artifact(name="wrong-env-prompts", builder="prompt_parquet", kind="dataset",
               deps={{"source": ":gsm8k-train"}}, config=dict(_PROMPTS, env_class="gsm8k_math"),
               rows=12, version="2026.11.30")

role_plan(
    name="colocated-1x2",
    strategy="fsdp",
    policy=dict(num_nodes=1, num_gpus_per_node=2, tensor_parallel_size=1,
                pipeline_parallel_size=1, context_parallel_size=1, expert_parallel_size=1,
                expert_tensor_parallel_size=1, sequence_parallel_size=1),
    reference=dict(colocated_with_policy=True, num_nodes=1, num_gpus_per_node=2,
                   tensor_parallel_size=1, pipeline_parallel_size=1, context_parallel_size=1,
                   expert_parallel_size=1, expert_tensor_parallel_size=1,
                   sequence_parallel_size=1),
    critic=None,
    rollout=dict(num_engines=2, tensor_parallel_size=1, pipeline_parallel_size=1,
                 data_parallel_size=1, expert_parallel_size=1, backend="vllm",
                 weight_sync_backend="nccl"),
    placement=dict(colocate_all=True, colocate_policy_ref=True),
    batch=dict(train_batch_size=8, policy_mini_batch_size=8, critic_mini_batch_size=None,
               micro_train_batch_size_per_gpu=4, micro_forward_batch_size_per_gpu=8,
               n_samples_per_prompt=8, eval_batch_size=4),
)

rl_execution(
    name="local-1x2",
    executor="local",
    # tests/e2e/conftest.py's SKYRL_ALLOCATION: the launches reuse the session's skyrl_head.
    allocation=dict(num_nodes=1, gpus_per_node=2, accelerator="sim", cpus_per_node=6,
                    memory_gb_per_node=8, disk_gb_per_node=10),
    timeout_minutes=30,
    # The store is on an S3-compatible server: the job needs its address and keys.
    credentials=["AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_DEFAULT_REGION"],
)

_RUN = dict(
    model=":tiny-chat",
    tokenizer=":tiny-chat",
    eval_data=":test-prompts",
    runtime="experiments/runtimes:skyrl-0.3.0",
    role_plan=":colocated-1x2",
    execution=":local-1x2",
    version="dev",
    seed=1,
    algorithm=grpo_algorithm(environment="gsm8k", learning_rate=1e-6, kl_loss_coef=0.001,
                             max_training_steps=2),
    lengths=dict(max_prompt_length=512, max_generate_length=64, max_input_length=512,
                 max_turns=1),
    logger="console",
    checkpoint=dict(ckpt_interval=1, max_ckpts_to_keep=1, hf_save_interval=-1,
                    export_final=True),
    resume=dict(mode="none", path=None, compatible_runtimes=[]),
)
rl_run(name="grpo", run_name="tiny-gsm8k-grpo", train_data=":train-prompts", **_RUN)
rl_run(name="no-truth", run_name="tiny-gsm8k-no-truth", train_data=":no-truth-prompts", **_RUN)
rl_run(name="wrong-env", run_name="tiny-gsm8k-wrong-env", train_data=":wrong-env-prompts",
       **_RUN)
rl_run(name="no-template", run_name="tiny-gsm8k-no-template", train_data=":train-prompts",
       **dict(_RUN, model=":tiny-base", tokenizer=":tiny-base"))
'''


def safetensors(tensors: dict[str, dict[str, object]]) -> bytes:
    """The safetensors layout: 8-byte little-endian header length, JSON header, zeroed data."""
    header = json.dumps(tensors).encode()
    size = max(int(t["data_offsets"][1]) for t in tensors.values())  # type: ignore[index]
    return struct.pack("<Q", len(header)) + header + bytes(size)


@pytest.fixture(scope="module")
def scratch(scratch_copy: ScratchRepo, s3_server: ObjectStoreServer, skyrl_head: Path,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScratchRepo]:
    """The session's scratch copy (its pantsd shared with other modules) with this module's
    experiment in place of experiments/tiny-gsm8k/BUILD, put back as it was at the end."""
    python = contract_python()
    root = tmp_path_factory.mktemp("skyrl-handoffs")
    repos = gsm8kdata.repos()
    variants = ((MODEL_REPO, []), (BASE_REPO, ["--no-chat-template"]))
    # Both tokenizers in one run of make_tokenizer.py (one transformers import).
    done = subprocess.run([python, str(CONTRACT / "make_tokenizer.py"),
                           *(arg for repo_id, flags in variants
                             for arg in (str(root / repo_id), *flags))],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    for repo_id, _ in variants:
        tokenizer = root / repo_id
        model = {path.name: path.read_bytes() for path in tokenizer.iterdir()}
        model["config.json"] = json.dumps(CONFIG, indent=2).encode()
        model["model.safetensors"] = safetensors(EMBEDDING)
        repos[("models", repo_id, MODEL_COMMIT)] = model
    repo = scratch_copy.view()
    original = (repo.root / "experiments/tiny-gsm8k/BUILD").read_text(encoding="utf-8")
    repo.write("experiments/tiny-gsm8k/BUILD", BUILD)
    repo.commit_all("a GSM8K-shaped SkyRL experiment")
    try:
        with serve_hub(repos) as (url, _):
            repo.env.update(hub_environment(url))
            repo.env.update(s3_server.env())
            repo.env.update({
                "RLAUNCH_STORE": s3_server.prefix(),
                "RLAUNCH_SKYRL_PYTHON": python,
                "RLAUNCH_NODE_CACHE": str(root / "node-cache"),
                # The session's head for :local-1x2's allocation, started by the Ray of the
                # job's interpreter (rlaunch.executors.runtime_python.head_python) as a launch
                # starts it: every check reuses it.
                "RLAUNCH_LOCAL_HEAD_DIR": str(skyrl_head),
            })
            yield repo
    finally:
        repo.write("experiments/tiny-gsm8k/BUILD", original)
        repo.commit_all("experiments/tiny-gsm8k/BUILD as it was")


def check(scratch: ScratchRepo, target: str) -> subprocess.CompletedProcess[str]:
    return scratch.pants("run", f"experiments/tiny-gsm8k:{target}", "--", "--check-handoffs")


def staged(scratch: ScratchRepo, name: str) -> str:
    """The node-cache folder the adapter staged artifact `name` into (one per fingerprint)."""
    folders = sorted((Path(scratch.env["RLAUNCH_NODE_CACHE"]) / name).glob("2026.11.30-*"))
    assert len(folders) == 1, folders
    return str(folders[0])


def test_skyrls_own_check_runs_in_skyrls_environment_on_inputs_staged_from_s3(
    scratch: ScratchRepo, s3_server: ObjectStoreServer
) -> None:
    result = check(scratch, "grpo")
    out, err = result.stdout, result.stderr
    assert result.returncode == 0, out + err
    store, python = scratch.env["RLAUNCH_STORE"], scratch.env["RLAUNCH_SKYRL_PYTHON"]
    # The job's interpreter is the one the runtime pin resolved to, not the launcher's.
    assert f"-- {python} -m rlaunch.runtimes.skyrl " in out
    model, train, test = (staged(scratch, name)
                          for name in ("tiny-chat", "train-prompts", "test-prompts"))
    assert (f"rlaunch: staged path data.train_data: ['{store}/train-prompts/2026.11.30/"
            f"prompts.parquet'] -> ['{train}/prompts.parquet']") in out
    assert (f"rlaunch: staged path data.val_data: ['{store}/test-prompts/2026.11.30/"
            f"prompts.parquet'] -> ['{test}/prompts.parquet']") in out
    assert (f"rlaunch: staged path trainer.policy.model.path: {store}/tiny-chat/2026.11.30 "
            f"-> {model}") in out
    assert "config: accepted by from_cli_overrides and validate_cfg" in out
    assert f"tokenizer: Qwen2Tokenizer from {model}, chat template present" in out
    assert (f"train_data: {train}/prompts.parquet (train-prompts@2026.11.30): 12 of 12 rows "
            "kept, 0 longer than 512 tokens") in out
    assert (f"val_data: {test}/prompts.parquet (test-prompts@2026.11.30): 4 of 4 rows kept, "
            "0 longer than 512 tokens") in out
    assert (f"env: gsm8k made on every row of train_data {train}/prompts.parquet; the ground "
            "truth of all 12 rows earns the full reward") in out
    assert (f"env: gsm8k made on every row of val_data {test}/prompts.parquet; the ground "
            "truth of all 4 rows earns the full reward") in out
    assert "rlaunch: handoff check passed; --check-handoffs: SkyRL not started" in out
    assert "rlaunch: handoff check of tiny-gsm8k-grpo@dev: passed" in err
    assert "rlaunch: reusing the local Ray head at " in err
    assert "smoke gate" not in err and "no curves" not in err
    # Nothing trains, nothing is recorded.
    assert not s3_server.filesystem().exists(f"{store}/_ledger/tiny-gsm8k-grpo")


def test_a_template_without_the_ground_truth_is_refused_before_anything_runs(
    scratch: ScratchRepo,
) -> None:
    result = check(scratch, "no-truth")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert (
        "error ART010 train_data.config.ground_truth: train_data.config.ground_truth of "
        "no-truth-prompts@2026.11.30 (builder prompt_parquet): is null, so every row's "
        "reward_spec.ground_truth would be None, and env 'gsm8k' (skyrl-gym 0.4.0) scores every "
        "answer against it: no answer could earn the reward. Set config.ground_truth to "
        "{column, extract}: the source column that holds the answer and how to take it from "
        "there"
    ) in out
    assert "handoff check" not in out


def test_without_an_environment_that_has_the_pinned_runtime_nothing_is_submitted(
    scratch: ScratchRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(scratch.env, "RLAUNCH_SKYRL_PYTHON")
    result = check(scratch, "grpo")
    assert result.returncode == 1, result.stdout + result.stderr
    launcher = scratch.runtime_python()
    assert (
        f"runtime skyrl-0.3.0 pins skyrl==0.3.0, but this launcher's interpreter {launcher} "
        "(RLAUNCH_SKYRL_PYTHON is not set) has no skyrl installed: the job runs the runtime "
        "with that interpreter. Set RLAUNCH_SKYRL_PYTHON to the python of an environment "
        "with skyrl==0.3.0 installed"
    ) in result.stderr
    assert "starting a local Ray head" not in result.stderr


def broken_handoff(scratch: ScratchRepo) -> str:
    """The one problem the check reports for experiments/tiny-gsm8k:no-template."""
    model = staged(scratch, "tiny-base")
    return (
        f"error (tokenizer): the tokenizer of trainer.policy.model.path {model} "
        "(tiny-base@2026.11.30) has no chat template, and PromptDataset applies one to "
        "every prompt (apply_chat_template). Use a model whose tokenizer_config.json has a "
        "chat_template (an instruct/chat model), or add chat_template.jinja to the model "
        "artifact"
    )


def test_an_env_class_prompt_parquet_cannot_feed_is_refused_before_anything_runs(
    scratch: ScratchRepo,
) -> None:
    result = check(scratch, "wrong-env")
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert (
        "error ART010 train_data.config.env_class: train_data.config.env_class of "
        "wrong-env-prompts@2026.11.30 (builder prompt_parquet): 'gsm8k_math' is not an env "
        "whose rows prompt_parquet writes: each skyrl-gym 0.4.0 env reads the ground truth from "
        "its own column of the row (aime reads reward_model; gsm8k reads reward_spec: "
        "GSM8kEnv.__init__ and AIMEEnv.__init__ assert it); set config.env_class to one of "
        "aime, gsm8k, and algorithm.environment to the same"
    ) in out
    assert "handoff check" not in out


def test_a_broken_handoff_fails_with_the_checks_message_naming_the_artifact(
    scratch: ScratchRepo,
) -> None:
    """A failing check through the whole launch: its message, naming the staged artifact, and
    the launch's refusal. Each of the check's messages is the contract tests' (tests/contract/
    test_skyrl_handoff.py, per release: a prompt length that filters every row included), and
    the staged data paths with their identities are the passing check's above."""
    result = check(scratch, "no-template")
    assert result.returncode == 3, result.stdout + result.stderr
    assert broken_handoff(scratch) in result.stdout.splitlines()
    assert ("error: the handoff check refused this launch (exit 1); SkyRL was not started: "
            "fix what it names above") in result.stdout
    assert "rlaunch: handoff check of tiny-gsm8k-no-template@dev: FAILED (FAILED)" in (
        result.stderr)
