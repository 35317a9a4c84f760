"""Benchmark: the default countdown smoke experiment, end to end, on this machine.

Renders a launch YAML for 1 node x 2 simulated GPUs, colocated; makes a tiny SFT'd model and
the countdown data at the paths it names, with their build records (tests/runtimes/smoke/demo.py:
build_inputs); runs `python -m rlaunch.runtimes.smoke` on it (which starts its own local Ray);
prints: wall time to the first step, seconds per step, mean reward of the first and last five
steps, greedy eval reward before and after.

    PYTHONPATH=src $(scripts/runtime) benchmarks/smoke_run.py [--steps 60] [--sft-steps 600]
        [--keep]

The smallest size (`--steps 2 --sft-steps 5`) is what the test suite runs (the run's private Ray
takes most of its time).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
sys.path.insert(0, str(SRC))
# The smoke run's inputs are made by the runtime tests' fixture (tests/runtimes/smoke/demo.py).
sys.path.insert(0, str(REPO / "tests" / "runtimes"))

from smoke.demo import build_inputs, render_smoke, smoke_spec  # noqa: E402

DEFAULT_EXPERIMENT = dict(
    nodes=1, gpus_per_node=2, colocate_all=True, train_batch_size=32, policy_mini_batch_size=16,
    micro_train_batch_size_per_gpu=32, micro_forward_batch_size_per_gpu=128,
    n_samples_per_prompt=8, eval_batch_size=256, learning_rate=3e-4, ckpt_interval=20,
    max_ckpts_to_keep=2,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--sft-steps", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", action="store_true", help="keep the temporary store")
    args = parser.parse_args()

    store = Path(tempfile.mkdtemp(prefix="rlaunch-smoke-bench-"))
    try:
        spec = smoke_spec(seed=args.seed, max_training_steps=args.steps, **DEFAULT_EXPERIMENT)
        text, document = render_smoke(spec, str(store))
        launch = store / "launch.yaml"
        launch.write_text(text)
        began = time.monotonic()
        build_inputs(document, seed=args.seed, sft_steps=args.sft_steps)
        print(f"inputs (countdown data, tokenizer, TinyLM SFT'd for {args.sft_steps} steps) made"
              f" in {time.monotonic() - began:.1f} s", flush=True)

        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
        env["RLAUNCH_ATTEMPT_ID"] = "bench"
        began = time.monotonic()
        first_step_at = None
        process = subprocess.Popen(
            [sys.executable, "-m", "rlaunch.runtimes.smoke", str(launch)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )
        for line in process.stdout:
            print(line, end="", flush=True)
            if first_step_at is None and line.startswith("step 1/"):
                first_step_at = time.monotonic() - began
        status = process.wait()
        wall = time.monotonic() - began
        if status != 0:
            print(f"smoke run failed with exit status {status}", file=sys.stderr)
            return status
        manifest = json.loads(Path(document["artifacts"]["terminal_manifest"]).read_text())
        summary = manifest["metrics"]
        print("\n== smoke_run benchmark (1 node x 2 simulated GPUs, colocated) ==")
        print(f"steps                      {manifest['final_step']}")
        print(f"wall time to first step    {first_step_at:.1f} s (process start -> step 1 line)")
        print(f"seconds per step           {summary['seconds_per_step']:.2f} s")
        print(f"reward, first 5 steps      {summary['reward_mean_first5']:.3f} "
              f"(solved {summary['solved_first5']:.2f})")
        print(f"reward, last 5 steps       {summary['reward_mean_last5']:.3f} "
              f"(solved {summary['solved_last5']:.2f})")
        evals = summary.get("eval", {})
        if "initial" in evals and "final" in evals:
            print(f"greedy eval reward         {evals['initial']['reward_mean']:.3f} -> "
                  f"{evals['final']['reward_mean']:.3f} ({evals['final']['prompts']} prompts)")
        print(f"runtime wall time          {wall:.1f} s")
        return 0
    finally:
        if args.keep:
            print(f"store kept at {store}")
        else:
            shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
