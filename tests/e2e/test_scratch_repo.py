"""What needs a copy of the repository (the session's scratch copy): BUILD files that fail
when parsed, and a git commit to select changed targets against."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from pants_scratch import ScratchRepo

OLD_PIN = "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
NEW_PIN = "5fee7c4ed634dc66c6e318c8ac2897b8b9154536"


@pytest.fixture(scope="module")
def scratch(scratch_copy: ScratchRepo) -> ScratchRepo:
    """The session's scratch copy, committed as it is (its pantsd shared with the modules
    before; this module's last test stops it)."""
    return scratch_copy.view()


def test_changing_a_model_pin_selects_every_run_that_uses_it(scratch: ScratchRepo) -> None:
    build = "experiments/models/qwen2.5-1.5b-instruct/BUILD"
    original = (scratch.root / build).read_text()
    scratch.write(build, original.replace(OLD_PIN, NEW_PIN))
    try:
        changed = ("--changed-since=HEAD", "--changed-dependents=transitive")
        result = scratch.pants(*changed, "list")
        assert result.returncode == 0, result.stderr
        # The runs whose policy starts from it (on SkyRL 0.3.0 and 0.4.0), the runs that use it
        # as the KL reference, the pipeline stage that starts from the export of a run that
        # starts from it, and the GPU evals of those exports.
        runs = [
            "experiments/qwen2.5-1.5b-gsm8k:grpo",
            "experiments/qwen2.5-1.5b-gsm8k:grpo-eval",
            "experiments/qwen2.5-1.5b-gsm8k:grpo-eval-smoke",
            "experiments/qwen2.5-1.5b-gsm8k:grpo-skyrl-0.4.0",
            "experiments/qwen2.5-1.5b-gsm8k:grpo-stage2",
            "experiments/qwen2.5-1.5b-gsm8k:grpo-stage2-eval",
            "experiments/qwen2.5-1.5b-gsm8k:grpo-stage2-eval-smoke",
            "experiments/qwen2.5-1.5b-gsm8k:smoke",
            "experiments/qwen2.5-1.5b-gsm8k:smoke-skyrl-0.4.0",
            "experiments/qwen2.5-1.5b-gsm8k:stage2-smoke",
            "experiments/qwen2.5-1.5b-instruct-ref-2x8:grpo",
            "experiments/qwen2.5-1.5b-instruct-ref-2x8:smoke",
        ]
        assert result.stdout.split() == [
            "experiments/models/qwen2.5-1.5b-instruct:qwen2.5-1.5b-instruct", *runs,
        ]
        result = scratch.pants(*changed, "check")
        assert result.returncode == 0, result.stderr
        for number, run in enumerate(runs, start=1):
            assert f"Partition #{number} - {run}:" in result.stderr, run
        assert f"Partition #{len(runs) + 1}" not in result.stderr
    finally:
        scratch.write(build, original)


CHANGED = ("--changed-since=HEAD", "--changed-dependents=transitive")
COUNTDOWN_BUILD = "experiments/countdown/BUILD"
CHAIN_BUILD = "experiments/countdown/chain/BUILD"
# Every target of experiments/countdown/BUILD: Pants 2.17 counts a change to a BUILD file, even
# to a comment, as a change to each target declared in it.
COUNTDOWN_TARGETS = [
    "experiments/countdown:char_tokenizer",
    "experiments/countdown:colocated-1x2",
    "experiments/countdown:countdown_data",
    "experiments/countdown:launch",
    "experiments/countdown:local-sim-1x2",
    "experiments/countdown:sft_model",
    "experiments/countdown:smoke",
    "experiments/countdown:sweep",
    "experiments/countdown:sweep-kl0.001-lr0.0003",
    "experiments/countdown:sweep-kl0.001-lr0.001",
    "experiments/countdown:sweep-kl0.01-lr0.0003",
    "experiments/countdown:sweep-kl0.01-lr0.001",
    "experiments/countdown:sweep-smoke",
]
CHAIN_TARGETS = [
    "experiments/countdown/chain:chain-eval",
    "experiments/countdown/chain:chain-grpo1",
    "experiments/countdown/chain:chain-grpo2",
]


def _preflighted(output: str) -> list[str]:
    """The runs a `check` preflighted, in its partitions' order."""
    return re.findall(r"^Partition #\d+ - (\S+):$", output, flags=re.MULTILINE)


def test_changing_the_sft_config_selects_every_stage_of_the_chain(scratch: ScratchRepo) -> None:
    """The chain has its own BUILD file, so only the graph (each stage reads the SFT model or an
    upstream stage by address) can select it when the SFT model's config changes."""
    original = (scratch.root / COUNTDOWN_BUILD).read_text()
    # Fewer SFT steps, and the new calendar version a changed config needs.
    changed = original.replace('"steps": 600,', '"steps": 300,', 1).replace(
        'version="2026.11.30.1",', 'version="2026.12.01",', 1)
    assert changed.count('"steps": 300,') == 1 and changed.count('"2026.12.01"') == 1
    scratch.write(COUNTDOWN_BUILD, changed)
    try:
        # Without dependents: the countdown BUILD file's own targets, not one chain stage.
        result = scratch.pants("--changed-since=HEAD", "list")
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == COUNTDOWN_TARGETS
        # With them: every stage of the chain too, through the graph; no other experiment.
        result = scratch.pants(*CHANGED, "list")
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == COUNTDOWN_TARGETS + CHAIN_TARGETS
        # Each run of the changed set is preflighted, both GRPO stages among them (the eval
        # stage is an artifact: `check` preflights runs).
        result = scratch.pants(*CHANGED, "check")
        assert result.returncode == 0, result.stderr
        assert _preflighted(result.stderr) == [
            "experiments/countdown:launch",
            "experiments/countdown:smoke",
            "experiments/countdown:sweep-kl0.001-lr0.0003",
            "experiments/countdown:sweep-kl0.001-lr0.001",
            "experiments/countdown:sweep-kl0.01-lr0.0003",
            "experiments/countdown:sweep-kl0.01-lr0.001",
            "experiments/countdown:sweep-smoke",
            "experiments/countdown/chain:chain-grpo1",
            "experiments/countdown/chain:chain-grpo2",
        ]
        assert "✓ rlaunch-preflight succeeded." in result.stderr
        # Stage 1 reads the changed SFT model: its new identity is the stage's model.
        result = scratch.pants("package", "experiments/countdown/chain:chain-grpo1")
        assert result.returncode == 0, result.stderr
        identities = scratch.root / "dist/experiments/countdown/chain/chain-grpo1/identities.txt"
        assert identities.read_text().splitlines()[:2] == [
            "run  countdown-chain-grpo1@dev", "model  sft_model@2026.12.01",
        ]
    finally:
        scratch.write(COUNTDOWN_BUILD, original)


def test_changing_the_chain_selects_the_chain_alone(scratch: ScratchRepo) -> None:
    """The control: a change to the chain's BUILD file selects its stages, never the SFT model
    or anything else they read."""
    original = (scratch.root / CHAIN_BUILD).read_text()
    changed = original.replace("learning_rate=1e-4,", "learning_rate=2e-4,", 1)
    assert changed != original
    scratch.write(CHAIN_BUILD, changed)
    try:
        result = scratch.pants(*CHANGED, "list")
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == CHAIN_TARGETS
        result = scratch.pants(*CHANGED, "check")
        assert result.returncode == 0, result.stderr
        assert _preflighted(result.stderr) == CHAIN_TARGETS[1:]
    finally:
        scratch.write(CHAIN_BUILD, original)


def _role_plan(*, tensor_parallel_size: str, critic: str) -> str:
    """A one-line role plan with the policy's TP and the critic field as given."""
    return (
        'role_plan(strategy="fsdp", policy=dict(num_nodes=1, num_gpus_per_node=8, '
        f"tensor_parallel_size={tensor_parallel_size}, pipeline_parallel_size=1, "
        "context_parallel_size=1, expert_parallel_size=1, expert_tensor_parallel_size=1, "
        f"sequence_parallel_size=1), reference=None, {critic}rollout=dict(num_engines=8, "
        "tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, "
        'expert_parallel_size=1, backend="vllm", weight_sync_backend="nccl"), '
        "placement=dict(colocate_all=True, colocate_policy_ref=True), "
        "batch=dict(train_batch_size=8, policy_mini_batch_size=8, critic_mini_batch_size=None, "
        "micro_train_batch_size_per_gpu=1, micro_forward_batch_size_per_gpu=1, "
        "n_samples_per_prompt=8, eval_batch_size=8))"
    )


# Each case: a BUILD file -> the message Pants stops with when it parses it.
PARSE_ERRORS = {
    "branch-pin": (
        (
            'hf_model(repo_id="Qwen/Qwen2.5-1.5B-Instruct", revision="main", facts=dict('
            "num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=32768,"
            ' num_experts=None, num_hidden_layers=28, hidden_size=1536, intermediate_size=8960,'
            ' vocab_size=151936, head_dim=None, torch_dtype="bfloat16",'
            ' num_parameters=1543714304),'
            ' version="2026.11.01")'
        ),
        (
            "The 'revision' field in target broken/branch-pin:branch-pin must be a 40-character "
            "hex commit sha, but was 'main'."
        ),
    ),
    "no-such-date": (
        'hf_dataset(repo_id="openai/gsm8k", revision="' + "e" * 40 + '", split="train",'
        ' version="2026.02.30")',
        (
            "The 'version' field in target broken/no-such-date:no-such-date must be a calendar "
            "version YYYY.MM.DD or YYYY.MM.DD.N (a real date), or `dev` or `<label>-dev`; "
            "2026-02-30 is not a date, but was '2026.02.30'."
        ),
    ),
    "negative-count": (
        'hf_dataset(repo_id="openai/gsm8k", revision="' + "e" * 40 + '", split="train",'
        ' rows=-1, version="dev")',
        (
            "The 'rows' field in target broken/negative-count:negative-count must be a positive "
            "integer, but was -1."
        ),
    ),
    "bad-sha256": (
        (
            'adopted_artifact(uri="gs://bucket/ckpt", sha256="abc123", kind="model",'
            ' version="2026.11.01")'
        ),
        (
            "The 'sha256' field in target broken/bad-sha256:bad-sha256 must be a 64-character hex "
            "sha256 digest of the content, but was 'abc123'."
        ),
    ),
    "string-tp": (
        _role_plan(tensor_parallel_size='"4"', critic="critic=None, "),
        (
            "The 'policy' field in target broken/string-tp:string-tp must set "
            "'tensor_parallel_size' to an integer, but was '4'."
        ),
    ),
    "silent-critic": (
        _role_plan(tensor_parallel_size="1", critic=""),
        (
            "The 'critic' field in target broken/silent-critic:silent-critic must be written, as "
            "a dict or as None: a role plan has no silent defaults (`critic=None` says there is "
            "none)."
        ),
    ),
    # Extra SkyRL settings: a typo, a wrong type and a key the plan decides.
    "settings-typo": (
        'skyrl_settings(settings={"trainer.eval_intervall": 10})',
        (
            "The 'settings' field in target broken/settings-typo:settings-typo has an unknown "
            "SkyRL setting 'trainer.eval_intervall' (did you mean 'trainer.eval_interval'?): "
            "settings use the dotted names of SkyRL's config fields (docs/spec-format.md, "
            "`settings`)."
        ),
    ),
    "settings-type": (
        'skyrl_settings(settings={"generator.inference_engine.gpu_memory_utilization": "0.9"})',
        (
            "The 'settings' field in target broken/settings-type:settings-type must set "
            "'generator.inference_engine.gpu_memory_utilization' to a number (SkyRL types it as "
            "float), but was '0.9'."
        ),
    ),
    "settings-plan": (
        'skyrl_settings(settings={"trainer.micro_train_batch_size_per_gpu": 2})',
        (
            "The 'settings' field in target broken/settings-plan:settings-plan sets "
            "'trainer.micro_train_batch_size_per_gpu', which the plan decides: set "
            "role_plan.batch.micro_train_batch_size_per_gpu instead (rlaunch renders it into "
            "the launch YAML)."
        ),
    ),
}


@pytest.mark.parametrize("case", sorted(PARSE_ERRORS))
def test_a_malformed_field_fails_when_the_build_file_is_parsed(
    scratch: ScratchRepo, case: str
) -> None:
    build, message = PARSE_ERRORS[case]
    scratch.write(f"broken/{case}/BUILD", build)
    try:
        result = scratch.pants("list", f"broken/{case}:")
        assert result.returncode != 0
        assert message in " ".join(result.stderr.split()), result.stderr
    finally:
        (scratch.root / "broken" / case / "BUILD").unlink()


def test_package_of_a_broken_field_names_its_build_line_target_and_key(
    scratch: ScratchRepo,
) -> None:
    build = "experiments/qwen2.5-1.5b-gsm8k/BUILD"
    original = (scratch.root / build).read_text()
    broken = original.replace("weight_sync_backend=\"nccl\"", "weight_sync_backend=\"nccl2\"", 1)
    assert broken != original
    scratch.write(build, broken)
    try:
        result = scratch.pants("package", "experiments/qwen2.5-1.5b-gsm8k:grpo")
        assert result.returncode != 0
        plan = next(n for n, text in enumerate(broken.splitlines(), 1) if "role_plan(" in text)
        assert (
            f"{build}:{plan}: The 'rollout' field in target "
            "experiments/qwen2.5-1.5b-gsm8k:colocated-1x8 must set 'weight_sync_backend' to one "
            "of 'nccl', 'gloo', but was 'nccl2'."
        ) in result.stderr, result.stderr
    finally:
        scratch.write(build, original)


# A key and a section added to the library's role plan model, as a later issue would add them.
NEW_PLACEMENT_KEY = (
    '    """The reference model shares the policy\'s GPUs."""\n',
    '    colocate_critic: bool\n    """The critic shares the policy\'s GPUs."""\n',
)
NEW_SECTION = (
    '    """Batch sizes."""\n',
    "    balance_sequences: bool\n"
    '    """Balance sequence lengths across the data-parallel ranks."""\n',
)


def test_a_field_added_to_the_library_schema_needs_no_plugin_edit(scratch: ScratchRepo) -> None:
    """Last in the module: it stops the copy's pantsd twice, and a test after it would boot a
    third one (a cold Pants: tens of CPU seconds on a small machine)."""
    model = "src/rlaunch/spec/roleplan.py"
    schema = "pants-plugins/rlaunch_pants/schema.json"
    originals = {path: (scratch.root / path).read_text() for path in (model, schema)}
    # No pantsd while the schema changes: the running one would restart on it (pants.toml's
    # pantsd_invalidation_globs), but only once its file watcher has noticed, which a test must
    # not race. The next ./pants starts one that reads the changed files, both commands share it.
    scratch.stop_pantsd()
    text = originals[model]
    for anchor, added in (NEW_PLACEMENT_KEY, NEW_SECTION):
        assert text.count(anchor) == 1, anchor
        text = text.replace(anchor, anchor + added)
    scratch.write(model, text)
    scratch.write(
        "broken/schema-added/BUILD",
        _role_plan(tensor_parallel_size="1", critic="critic=None, ")
        .replace("colocate_policy_ref=True)", "colocate_policy_ref=True, colocate_critic=False)")
        .replace("role_plan(", 'role_plan(name="plan", balance_sequences=True, '),
    )
    try:
        regenerate = [scratch.runtime_python(), "-m", "rlaunch.buildschema", "--write"]
        done = subprocess.run(
            regenerate, cwd=scratch.root, env={**scratch.env, "PYTHONPATH": "src"},
            capture_output=True, text=True, check=False,
        )
        assert done.returncode == 0, done.stderr

        result = scratch.pants("help", "role_plan")
        assert result.returncode == 0, result.stderr
        assert "        colocate_critic: The critic shares the policy's GPUs\n" in result.stdout
        assert (
            "balance_sequences\n    type: bool\n    required\n\n    Balance sequence lengths "
            "across the data-parallel ranks.\n"
        ) in result.stdout

        result = scratch.pants("peek", "broken/schema-added:plan")
        assert result.returncode == 0, result.stderr
        (peeked,) = json.loads(result.stdout)
        assert peeked["balance_sequences"] is True
        assert peeked["placement"] == {
            "colocate_all": True, "colocate_critic": False, "colocate_policy_ref": True,
        }
    finally:
        # Stopped again before the schema is restored, for the same reason.
        scratch.stop_pantsd()
        for path, original in originals.items():
            scratch.write(path, original)
        (scratch.root / "broken/schema-added/BUILD").unlink()
