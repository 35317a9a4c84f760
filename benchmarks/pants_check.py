"""How long `./pants check ::` takes on many runs, against `./pants list ::` on the same targets.

For each N (default 50, 200, 1000) it copies the repository into a scratch directory, writes N
synthetic rl_run targets (10 per BUILD file, on the shared models, datasets and runtimes of
experiments/), and times:

  cold list    ./pants --no-pantsd list ::                     (rule graph built every time)
  cold check   ./pants --no-pantsd --no-local-cache check ::   (and the preflight really runs)
  warm list    ./pants list ::     with pantsd up, median of --repeat runs
  first check  ./pants check ::    with pantsd up, once (the preflight process runs, uncached)
  warm check   ./pants check ::    with pantsd up, median of --repeat runs (the re-check: cached)

The target is a warm check within 1.5x of a warm list at N = 200: re-checking unchanged runs
costs about as much as listing them. Run: `python3 benchmarks/pants_check.py [--sizes 50 200]`.
The pantsd it starts in each scratch copy is stopped at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# The same files the e2e scratch copies take: what ./pants needs to run the backend.
sys.path.insert(0, str(REPO_ROOT / "tests" / "e2e"))
from pants_scratch import COPIED  # noqa: E402

PER_BUILD_FILE = 10

RUN_TEMPLATE = """
rl_run(
    name="run-{index:04d}",
    run_name="synthetic-{index:04d}",
    version="dev",
    seed={index},
    model="experiments/models/qwen2.5-1.5b-instruct",
    tokenizer="experiments/models/qwen2.5-1.5b-instruct",
    train_data="experiments/datasets:gsm8k-train",
    eval_data="experiments/datasets:gsm8k-test",
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


def make_scratch(size: int, parent: Path) -> Path:
    root = parent / f"n{size}"
    for name in COPIED:
        source = REPO_ROOT / name
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=ignore, symlinks=True)
        elif source.exists():
            root.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    for start in range(0, size, PER_BUILD_FILE):
        runs = [
            RUN_TEMPLATE.format(index=index, prompt=256 + 16 * (index % 16))
            for index in range(start, min(start + PER_BUILD_FILE, size))
        ]
        folder = root / "synthetic" / f"group-{start // PER_BUILD_FILE:03d}"
        folder.mkdir(parents=True)
        (folder / "BUILD").write_text("".join(runs), encoding="utf-8")
    return root


def timed(root: Path, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    started = time.monotonic()
    done = subprocess.run(
        [str(root / "pants"), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"./pants {' '.join(args)} failed in {root} ({done.returncode}):\n{done.stderr}")
    return elapsed, done


def median_of(root: Path, repeat: int, *args: str) -> float:
    return statistics.median(timed(root, *args)[0] for _ in range(repeat))


def stop_pantsd(root: Path) -> None:
    for pid_file in root.glob(".pids/*/pantsd/pid"):
        try:
            pid = int(pid_file.read_text().strip())
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"pantsd"):
                os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError):
            continue


def measure(size: int, parent: Path, repeat: int) -> list[float]:
    root = make_scratch(size, parent)
    try:
        cold_list, listed = timed(root, "--no-pantsd", "list", "::")
        runs = sum(1 for line in listed.stdout.split() if ":run-" in line)
        if runs != size:
            sys.exit(f"expected {size} synthetic runs, `list` found {runs}")
        cold_check, _ = timed(root, "--no-pantsd", "--no-local-cache", "check", "::")
        timed(root, "list", "::")  # start pantsd
        warm_list = median_of(root, repeat, "list", "::")
        first_check, _ = timed(root, "check", "::")
        warm_check = median_of(root, repeat, "check", "::")
    finally:
        stop_pantsd(root)
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
    print("target: warm check within 1.5x of warm list at 200 runs")


if __name__ == "__main__":
    main()
