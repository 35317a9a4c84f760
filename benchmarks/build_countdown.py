"""Build the countdown artifact graph cold (empty store), then warm; print times and builder calls.

    PYTHONPATH=src python benchmarks/build_countdown.py [--sft-steps N] [--store DIR]

Warm means nothing changed: every node must be reused (0 builder calls). The warm build is timed
in-process and through the command line (`python -m rlaunch build FILE`), next to the command
line's own start-up (`python -m rlaunch --help`), so the cost beyond start-up shows. Target: a
warm build well under 1 s beyond start-up. A warm build that calls a builder stops the benchmark.

The smallest size (`--sft-steps 5`) is what the test suite runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlaunch.builders import BuildResult, build_artifact
from rlaunch.builders.countdown import countdown_model_spec
from rlaunch.spec.artifacts import BuiltArtifact


def _quiet(message: str) -> None:
    pass


def _timed_build(artifact: BuiltArtifact, store: str) -> tuple[float, BuildResult]:
    started = time.perf_counter()
    result = build_artifact(artifact, store, log=_quiet)
    return time.perf_counter() - started, result


def _wall(command: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sft-steps", type=int, default=1000, help="SFT steps (demo: 1000)")
    parser.add_argument("--store", help="store directory (default: a fresh temporary one)")
    args = parser.parse_args()

    spec = countdown_model_spec("2026.01.01", sft_steps=args.sft_steps)
    artifact = BuiltArtifact.model_validate(spec)
    with tempfile.TemporaryDirectory(prefix="rlaunch-bench-") as scratch:
        store = args.store or str(Path(scratch) / "store")
        cold_seconds, cold = _timed_build(artifact, store)
        print(f"cold build: {cold_seconds:7.3f}s  builder calls: {len(cold.built)} "
              f"({', '.join(cold.built) or 'none'})")
        for node in cold.nodes:
            print(f"    {node.identity:34} {node.action:6} {node.seconds:7.3f}s")
        warm_seconds, warm = _timed_build(artifact, store)
        if warm.built:
            sys.exit(f"the warm build called builders for {', '.join(warm.built)}: nothing "
                     "changed, so every node should have been reused")
        print(f"warm build: {warm_seconds:7.3f}s  builder calls: {len(warm.built)} "
              f"(in-process, {len(warm.reused)} nodes reused and verified)")

        spec_file = Path(scratch) / "countdown-sft.json"
        spec_file.write_text(json.dumps(spec))
        python = sys.executable
        startup = min(_wall([python, "-m", "rlaunch", "--help"]) for _ in range(3))
        cli_warm = min(
            _wall([python, "-m", "rlaunch", "build", str(spec_file), "--store", store])
            for _ in range(3)
        )
        print(f"cli start-up (rlaunch --help):   {startup:7.3f}s")
        print(f"cli warm build (rlaunch build):  {cli_warm:7.3f}s  "
              f"beyond start-up: {cli_warm - startup:7.3f}s")


if __name__ == "__main__":
    main()
