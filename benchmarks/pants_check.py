"""How long `./pants check ::` takes on many runs, against `./pants list ::` on the same targets.

For each N (default 50, 200, 1000) it makes a scratch copy of the repository (tests/e2e/
pants_scratch.py: what ./pants needs), writes N synthetic rl_run targets (10 per BUILD file, on
the shared models, built prompt datasets and runtimes of experiments/), and times:

  cold list    ./pants --no-pantsd list ::                     (rule graph built every time)
  cold check   ./pants --no-pantsd --no-local-cache check ::   (and the preflight really runs)
  warm list    ./pants list ::     with pantsd up, median of --repeat runs
  first check  ./pants check ::    with pantsd up, once (the preflight process runs, uncached)
  warm check   ./pants check ::    with pantsd up, median of --repeat runs (the re-check: cached)

The synthetic runs are the GSM8K GRPO run of experiments/qwen2.5-1.5b-gsm8k with a prompt length
of their own, so each passes `check` with one finding: the warning BATCH010 (GSM8K train's 7473
rows leave 49 out of every epoch at train_batch_size 256). The cold check's report is read and
the benchmark stops, naming the run, if any synthetic run gets other findings.

The target is a warm check within 1.5x of a warm list at N = 200: re-checking unchanged runs
costs about as much as listing them. The pantsd it starts in each scratch copy is stopped at the
end.

    python3 benchmarks/pants_check.py [--sizes 50 200 1000] [--repeat 3]

The smallest size (`--sizes 10 --repeat 1`) is what the test suite runs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# The e2e tests' scratch copy: the files ./pants needs, and a close() that stops its pantsd.
sys.path.insert(0, str(REPO_ROOT / "tests" / "e2e"))
from pants_scratch import ScratchRepo  # noqa: E402

PER_BUILD_FILE = 10
EXPECTED_FINDINGS = Counter({("warning", "BATCH010"): 1})
"""What `check` finds in each synthetic run (see the docstring)."""
RUN_SUMMARY = re.compile(r"^synthetic/\S+ \(.*\): (ok|refused), \d+ errors?, \d+ warnings?$", re.M)
FINDING = re.compile(r"^(error|warning) ([A-Z]+\d+) ", re.M)

RUN_TEMPLATE = """
rl_run(
    name="run-{index:04d}",
    run_name="synthetic-{index:04d}",
    version="dev",
    seed={index},
    model="experiments/models/qwen2.5-1.5b-instruct",
    tokenizer="experiments/models/qwen2.5-1.5b-instruct",
    train_data="experiments/datasets:gsm8k-train-prompts",
    eval_data="experiments/datasets:gsm8k-test-prompts",
    runtime="experiments/runtimes:skyrl-0.3.0",
    role_plan="experiments/qwen2.5-1.5b-gsm8k:colocated-1x8",
    execution="experiments/qwen2.5-1.5b-gsm8k:h100-1x8",
    lengths=dict(max_prompt_length={prompt}, max_generate_length=1024, max_input_length={prompt},
                 max_turns=1),
    algorithm=dict(
        advantage_estimator="grpo",
        kl=dict(use_kl_loss=True, use_kl_in_reward=False, kl_loss_coef=0.001,
                kl_estimator_type="k3"),
        learning_rate=1e-6, epochs=1, max_training_steps=None, temperature=1.0,
        clip_ratio=0.2, fully_async=False, environment="gsm8k",
    ),
    logger="wandb",
    checkpoint=dict(ckpt_interval=10, max_ckpts_to_keep=3, hf_save_interval=-1,
                    export_final=True),
    resume=dict(mode="latest", path=None, compatible_runtimes=[]),
)
"""


def make_scratch(size: int, parent: Path) -> ScratchRepo:
    root = parent / f"n{size}"
    root.mkdir()
    scratch = ScratchRepo(REPO_ROOT, root)
    for start in range(0, size, PER_BUILD_FILE):
        runs = [
            RUN_TEMPLATE.format(index=index, prompt=256 + 16 * (index % 16))
            for index in range(start, min(start + PER_BUILD_FILE, size))
        ]
        scratch.write(f"synthetic/group-{start // PER_BUILD_FILE:03d}/BUILD", "".join(runs))
    return scratch


def timed(scratch: ScratchRepo, *args: str,
          synthetic_runs: int | None = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Seconds `./pants ARGS` took, and its result; with `synthetic_runs`, a `check` whose
    report must hold that many synthetic runs, each with EXPECTED_FINDINGS."""
    started = time.monotonic()
    done = scratch.pants(*args)
    elapsed = time.monotonic() - started
    if synthetic_runs is not None:
        check_findings(done.stderr, synthetic_runs)
    if done.returncode != 0:
        sys.exit(f"./pants {' '.join(args)} failed in {scratch.root} ({done.returncode}):\n"
                 f"{done.stderr}")
    return elapsed, done


def median_of(scratch: ScratchRepo, repeat: int, *args: str) -> float:
    return statistics.median(timed(scratch, *args)[0] for _ in range(repeat))


def check_findings(report: str, size: int) -> None:
    """Stop unless `check` reported each of the `size` synthetic runs with EXPECTED_FINDINGS."""
    partitions = [part for part in report.split("\nPartition #")[1:]
                  if part.split("\n", 1)[0].split(" - ", 1)[-1].startswith("synthetic/")]
    if len(partitions) != size:
        sys.exit(f"expected `check` to report {size} synthetic runs, it reported "
                 f"{len(partitions)}:\n{report}")
    for part in partitions:
        found = Counter(FINDING.findall(part))
        if found != EXPECTED_FINDINGS or not RUN_SUMMARY.search(part):
            sys.exit("a synthetic run's findings are not the expected "
                     f"{describe(EXPECTED_FINDINGS)} alone:\nPartition #{part}")


def describe(findings: Counter[tuple[str, str]]) -> str:
    return ", ".join(f"{count} {severity} {code}" for (severity, code), count in findings.items())


def measure(size: int, parent: Path, repeat: int) -> list[float]:
    scratch = make_scratch(size, parent)
    try:
        cold_list, listed = timed(scratch, "--no-pantsd", "list", "::")
        runs = sum(1 for line in listed.stdout.split() if ":run-" in line)
        if runs != size:
            sys.exit(f"expected {size} synthetic runs, `list` found {runs}")
        cold_check, _ = timed(scratch, "--no-pantsd", "--no-local-cache", "check", "::",
                              synthetic_runs=size)
        timed(scratch, "list", "::")  # start pantsd
        warm_list = median_of(scratch, repeat, "list", "::")
        first_check, _ = timed(scratch, "check", "::")
        warm_check = median_of(scratch, repeat, "check", "::")
    finally:
        scratch.close()
    return [cold_list, cold_check, warm_list, first_check, warm_check]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per warm measurement")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies")
    options = parser.parse_args()

    parent = Path(tempfile.mkdtemp(prefix="rlaunch-pants-bench-"))
    header = (
        "runs",
        "cold list",
        "cold check",
        "warm list",
        "first check",
        "warm check",
        "warm check/list",
    )
    print(" | ".join(f"{title:>11}" for title in header))
    try:
        for size in options.sizes:
            row = measure(size, parent, options.repeat)
            cells = [f"{size:>11}"] + [f"{seconds:>10.2f}s" for seconds in row]
            cells.append(f"{row[4] / row[2]:>10.2f}x")
            print(" | ".join(cells), flush=True)
    finally:
        if not options.keep:
            shutil.rmtree(parent, ignore_errors=True)
    print(f"check found in each synthetic run: {describe(EXPECTED_FINDINGS)} (as expected)")
    print("target: warm check within 1.5x of warm list at 200 runs")


if __name__ == "__main__":
    main()
