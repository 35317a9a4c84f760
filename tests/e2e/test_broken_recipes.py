"""Broken recipes fail `./pants check` with the rule codes they are built to hit.

One `./pants check` of every broken recipe serves the tests that read what it says of one
recipe: each reads that recipe's partition of the output.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import BROKEN_FIXTURES

PantsRunner = Callable[..., "subprocess.CompletedProcess[str]"]

BROKEN_BUILD = "tests/fixtures/broken/BUILD"

# tests/fixtures/broken/BUILD: run -> the error codes preflight reports, each once per finding.
EXPECTED = {
    "tests/fixtures/broken:tp8-on-12-heads": ["GEO016"],
    "tests/fixtures/broken:engines-beyond-allocation": ["ALLOC001"],
    "tests/fixtures/broken:unplaceable-bundle": ["ALLOC002"],
    # 100 x 8 samples = 800 sequences shard over DP 8: no BATCH009 (stride 8 / gcd(8, 8) = 1).
    "tests/fixtures/broken:batch-100-by-64": ["BATCH003", "BATCH006"],
    "tests/fixtures/broken:context-overflow": ["CTX002"],
    "tests/fixtures/broken:kl-twice-keep-none": ["ALGO001", "ALGO004"],
    "tests/fixtures/broken:wandb-anonymous": ["EXEC005", "EXEC005"],
    "tests/fixtures/broken:calendar-on-dev": ["ART006"],
    "tests/fixtures/broken:unknown-runtime": ["RT002"],
    "tests/fixtures/broken:smoke-other-geometry": ["GEO016", "SMOKE002", "SMOKE002"],
    "tests/fixtures/broken:raw-snapshot-data": ["ART008"],
    "tests/fixtures/broken:profiler-on-swap-offload": ["SET002", "SET003"],
    "tests/fixtures/broken:calendar-on-dev-run": ["PIPE001"],
    "tests/fixtures/broken:stage-on-eval": ["PIPE004"],
    # Not broken: two tokenizer pins may hold one tokenizer, which only the files tell (LAUNCH002).
    "tests/fixtures/broken:tokenizer-pinned-apart": [],
}
PINNED_APART = (
    "warning PIPE002 tokenizer, model.run.tokenizer: model is the export of "
    "gsm8k-grpo-qwen2.5-1.5b@2026.11.29, trained with tokenizer qwen2.5-1.5b-instruct@2026.11.01 "
    "(Qwen/Qwen2.5-1.5B-Instruct@989aa7980e4cf806f80c7fef2b1adb7bc71aa306), but this run's "
    "tokenizer is qwen2.5-1.5b@2026.11.01 (Qwen/Qwen2.5-1.5B@"
    "8faed761d45a263340a0528343f099c05c9a4323): two pins, which may hold one tokenizer (the spec "
    "cannot tell). The launch compares their "
    "vocabularies and special tokens in the store (LAUNCH002) and refuses it if an id means "
    "another string"
)


def partitions(output: str) -> dict[str, str]:
    """`Partition #N - <address>:` sections of a check's output: address -> its text."""
    sections = re.split(r"^Partition #\d+ - (\S+):\n", output, flags=re.MULTILINE)
    return dict(zip(sections[1::2], sections[2::2], strict=True))


def error_codes_by_run(output: str) -> dict[str, list[str]]:
    """The error codes of each partition of the check output."""
    return {
        address: sorted(line.split()[1] for line in body.splitlines() if line.startswith("error "))
        for address, body in partitions(output).items()
    }


@pytest.fixture(scope="module")
def checked(pants: PantsRunner) -> subprocess.CompletedProcess[str]:
    """`./pants check` of every broken recipe."""
    return pants(*BROKEN_FIXTURES, "check", "tests/fixtures/broken:")


def partition(output: str, address: str) -> str:
    """The section of `address` in a check's output, its header line excluded."""
    bodies = partitions(output)
    assert address in bodies, f"no partition of {address}: {sorted(bodies)}"
    return bodies[address]


def test_each_broken_recipe_fails_with_its_codes(
    checked: subprocess.CompletedProcess[str],
) -> None:
    assert checked.returncode == 1, checked.stderr
    assert "✕ rlaunch-preflight failed." in checked.stderr
    assert error_codes_by_run(checked.stderr) == EXPECTED
    assert PINNED_APART in checked.stderr.splitlines()
    assert "__rlaunch_specs" not in checked.stderr


def test_the_broken_recipes_are_out_of_a_whole_repo_check(pants: PantsRunner) -> None:
    result = pants("list", "::")
    assert result.returncode == 0, result.stderr
    assert "tests/fixtures" not in result.stdout
    assert "experiments/countdown:launch" in result.stdout.split()
    result = pants(*BROKEN_FIXTURES, "--tag=-broken-fixture", "list", "::")
    assert result.returncode == 0, result.stderr
    assert "tests/fixtures" not in result.stdout


# What every command says of tp8-on-12-heads: the run, and the role plan's key as written.
TP8_TITLE = "tests/fixtures/broken:tp8-on-12-heads (tests/fixtures/broken/BUILD:{run})"
TP8_WHERE = [
    "    in tests/fixtures/broken/BUILD:{plan} (tests/fixtures/broken:engine-tp8): "
    "rollout.tensor_parallel_size",
    "    in experiments/models/qwen2.5-1.5b-instruct/BUILD "
    "(experiments/models/qwen2.5-1.5b-instruct:qwen2.5-1.5b-instruct): facts.num_attention_heads",
]


def _line_of(repo_root: Path, build_file: str, text: str) -> int:
    """The number of the first line of `build_file` that contains `text`."""
    lines = (repo_root / build_file).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def _tp8_lines(repo_root: Path) -> tuple[str, list[str]]:
    run = _line_of(repo_root, BROKEN_BUILD, '"tp8-on-12-heads"')
    plan = _line_of(repo_root, BROKEN_BUILD, 'name="engine-tp8"')
    return TP8_TITLE.format(run=run), [line.format(plan=plan) for line in TP8_WHERE]


def _finding(output: str, code: str) -> list[str]:
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"error {code} "))
    return lines[start + 1 : start + 3]


def test_check_names_the_build_targets_and_fields_as_written(
    checked: subprocess.CompletedProcess[str], repo_root: Path
) -> None:
    output = partition(checked.stderr, "tests/fixtures/broken:tp8-on-12-heads")
    title, where = _tp8_lines(repo_root)
    assert output.startswith(f"{title} (tp8-on-12-heads@2026.11.29): refused, "), output
    assert _finding(output, "GEO016") == where


def test_run_names_the_build_targets_and_fields_as_written(
    pants: PantsRunner, repo_root: Path, tmp_path: Path
) -> None:
    result = pants(
        *BROKEN_FIXTURES, f"--rlaunch-store={tmp_path}", "run",
        "tests/fixtures/broken:tp8-on-12-heads", "--",
        "--dry-run",
    )
    assert result.returncode != 0
    output = result.stdout + result.stderr
    title, where = _tp8_lines(repo_root)
    assert f"\n{title} (tp8-on-12-heads@2026.11.29): refused, " in output
    assert _finding(output, "GEO016") == where
    assert "__rlaunch_specs" not in output


def test_a_setting_finding_names_the_setting_as_the_build_file_writes_it(
    checked: subprocess.CompletedProcess[str], repo_root: Path
) -> None:
    output = partition(checked.stderr, "tests/fixtures/broken:profiler-on-swap-offload")
    line = _line_of(repo_root, BROKEN_BUILD, '_run("profiler-on-swap-offload"')
    assert _finding(output, "SET002") == [
        "    in tests/fixtures/broken/BUILD:"
        f"{line} (tests/fixtures/broken:profiler-on-swap-offload): "
        'settings["generator.inference_engine.gpu_memory_utilization"]',
        "    fix: Set it to a fraction such as 0.85 (SkyRL's default is 0.8).",
    ]


def test_a_calendar_stage_on_a_dev_run_is_refused_with_pipe001(
    checked: subprocess.CompletedProcess[str], repo_root: Path
) -> None:
    output = partition(checked.stderr, "tests/fixtures/broken:calendar-on-dev-run")
    stage = _line_of(repo_root, BROKEN_BUILD, '_run("calendar-on-dev-run"')
    upstream = _line_of(repo_root, BROKEN_BUILD, '_run("smoke-other-geometry"')
    lines = output.splitlines()
    # One error, PIPE001; the warnings are the fixture's data's (BATCH010), not this test's.
    title = (
        f"tests/fixtures/broken:calendar-on-dev-run (tests/fixtures/broken/BUILD:{stage}) "
        "(calendar-on-dev-run@2026.11.29): refused, 1 error, "
    )
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    assert lines[start + 1 : start + 5] == [
        "error PIPE001 version, model.version: calendar-on-dev-run@2026.11.29 is "
        "calendar-versioned (immutable) but reads model, the export of smoke-other-geometry@dev: "
        "a dev run, relaunched and changed at will",
        f"    in tests/fixtures/broken/BUILD:{stage} (tests/fixtures/broken:calendar-on-dev-run): "
        "version",
        f"    in tests/fixtures/broken/BUILD:{upstream} "
        "(tests/fixtures/broken:smoke-other-geometry): version",
        "    fix: Give the run smoke-other-geometry a calendar version (it then runs once and its "
        "export never changes), or give this run a dev version too.",
    ]


def test_a_stage_on_an_eval_run_is_refused_with_pipe004(
    checked: subprocess.CompletedProcess[str], repo_root: Path
) -> None:
    output = partition(checked.stderr, "tests/fixtures/broken:stage-on-eval")
    stage = _line_of(repo_root, BROKEN_BUILD, '_run("stage-on-eval"')
    evaluation = _line_of(repo_root, "experiments/qwen2.5-1.5b-gsm8k/BUILD", 'name="grpo-eval"')
    assert _finding(output, "PIPE004") == [
        f"    in tests/fixtures/broken/BUILD:{stage} (tests/fixtures/broken:stage-on-eval): model",
        f"    in experiments/qwen2.5-1.5b-gsm8k/BUILD:{evaluation} "
        "(experiments/qwen2.5-1.5b-gsm8k:grpo-eval): name",
    ]
    assert ("    fix: Set model to the training run the eval scores "
            "(gsm8k-grpo-qwen2.5-1.5b@2026.11.29, the eval's model) instead of the eval."
            ) in output.splitlines()
