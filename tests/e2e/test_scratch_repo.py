"""What needs its own copy of the repository: BUILD files that fail when parsed, and a git
commit to select changed targets against."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pants_scratch import ScratchRepo

OLD_PIN = "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
NEW_PIN = "5fee7c4ed634dc66c6e318c8ac2897b8b9154536"


@pytest.fixture(scope="module")
def scratch(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScratchRepo]:
    repo = ScratchRepo(repo_root, tmp_path_factory.mktemp("repo"))
    repo.commit_all("experiments as they are")
    yield repo
    repo.close()


def test_changing_a_model_pin_selects_every_run_that_uses_it(scratch: ScratchRepo) -> None:
    build = "experiments/models/qwen2.5-1.5b-instruct/BUILD"
    original = (scratch.root / build).read_text()
    scratch.write(build, original.replace(OLD_PIN, NEW_PIN))
    try:
        changed = ("--changed-since=HEAD", "--changed-dependents=transitive")
        result = scratch.pants(*changed, "list")
        assert result.returncode == 0, result.stderr
        # The runs whose policy starts from it, and the runs that use it as the KL reference.
        assert result.stdout.split() == [
            "experiments/models/qwen2.5-1.5b-instruct:qwen2.5-1.5b-instruct",
            "experiments/qwen2.5-1.5b-gsm8k:grpo",
            "experiments/qwen2.5-1.5b-gsm8k:smoke",
            "experiments/qwen2.5-1.5b-instruct-ref-2x8:grpo",
            "experiments/qwen2.5-1.5b-instruct-ref-2x8:smoke",
        ]
        result = scratch.pants(*changed, "check")
        assert result.returncode == 0, result.stderr
        assert "Partition #1 - experiments/qwen2.5-1.5b-gsm8k:grpo:" in result.stderr
        assert "Partition #2 - experiments/qwen2.5-1.5b-gsm8k:smoke:" in result.stderr
        assert "Partition #3 - experiments/qwen2.5-1.5b-instruct-ref-2x8:grpo:" in result.stderr
        assert "Partition #4 - experiments/qwen2.5-1.5b-instruct-ref-2x8:smoke:" in result.stderr
        assert "Partition #5" not in result.stderr
    finally:
        scratch.write(build, original)


# Each case: a BUILD file -> the message Pants stops with when it parses it.
PARSE_ERRORS = {
    "branch-pin": (
        (
            'hf_model(repo_id="Qwen/Qwen2.5-1.5B-Instruct", revision="main", attention_heads=12,'
            ' kv_heads=2, context_length=32768, version="2026.11.01")'
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
    "zero-tp": (
        (
            'role_plan(strategy="fsdp", policy=dict(nodes=1, gpus_per_node=8, tp=0, pp=1, cp=1,'
            " ep=1, etp=1, sp=1), reference=None, critic=None, rollout=dict(engines=8, tp=1, pp=1,"
            ' dp=1, ep=1, backend="vllm", weight_sync_backend="nccl"), colocate_all=True,'
            " colocate_policy_ref=True, batch=dict(train_batch_size=8, policy_mini_batch_size=8,"
            " critic_mini_batch_size=None, micro_train_batch_size_per_gpu=1,"
            " micro_forward_batch_size_per_gpu=1, n_samples_per_prompt=8, eval_batch_size=8))"
        ),
        (
            "The 'policy' field in target broken/zero-tp:zero-tp must set 'tp' to a positive "
            "integer, but was 0."
        ),
    ),
    "silent-critic": (
        (
            'role_plan(strategy="fsdp", policy=dict(nodes=1, gpus_per_node=8, tp=1, pp=1, cp=1,'
            " ep=1, etp=1, sp=1), reference=None, rollout=dict(engines=8, tp=1, pp=1,"
            ' dp=1, ep=1, backend="vllm", weight_sync_backend="nccl"), colocate_all=True,'
            " colocate_policy_ref=True, batch=dict(train_batch_size=8, policy_mini_batch_size=8,"
            " critic_mini_batch_size=None, micro_train_batch_size_per_gpu=1,"
            " micro_forward_batch_size_per_gpu=1, n_samples_per_prompt=8, eval_batch_size=8))"
        ),
        (
            "The 'critic' field in target broken/silent-critic:silent-critic must be written, as "
            "a dict or as None: a role plan has no silent defaults (`critic=None` says there is "
            "none)."
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
