"""A tiny runtime for rlaunch's own tests: `python -m rlaunch_echo_runtime LAUNCH_YAML`.

It reads the launch YAML like a real runtime (the typed `LaunchDocument`), prints what it found
(credentials only as presence, length and a short digest, never the value), and then, by the
run's name:
- `*fail*`: exits 1;
- `*wait*`: waits for `{run_root}/release` to exist (at most 120 s) before succeeding, with a
  step line before and after (`step 1/2 | ...`, the smoke runtime's format);
- otherwise succeeds.
On success it writes `runtime.json` into the checkpoint root and the terminal manifest, as a real
runtime does, so that the ledger's smoke recording can be exercised end to end.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import rlaunch
from rlaunch.render import load_launch


def main(path: str) -> int:
    launch = load_launch(path)
    run, execution, artifacts = launch.run, launch.execution, launch.artifacts
    allocation = execution.allocation
    print(f"echo-runtime: run {run.id} fingerprint {run.fingerprint}", flush=True)
    print(f"echo-runtime: executor {execution.executor} allocation "
          f"{allocation.num_nodes}x{allocation.gpus_per_node} {allocation.accelerator}")
    print(f"echo-runtime: attempt {os.environ.get('RLAUNCH_ATTEMPT_ID')}")
    print(f"echo-runtime: cwd-relative yaml {path}")
    print(f"echo-runtime: rlaunch from {Path(rlaunch.__file__).parent}")
    for name in execution.env:
        value = os.environ.get(name)
        if value is None:
            print(f"echo-runtime: credential {name} missing")
        else:
            digest = hashlib.sha256(value.encode()).hexdigest()[:12]
            print(f"echo-runtime: credential {name} present, {len(value)} chars, sha256 {digest}")
    if "fail" in run.name:
        print("echo-runtime: failing as asked", flush=True)
        return 1
    if "wait" in run.name:
        release = Path(artifacts.run_root) / "release"
        # Step lines as the smoke runtime prints them: a follower shows them as a bar.
        print("step 1/2 | echo-runtime: before the release", flush=True)
        print(f"echo-runtime: waiting for {release}", flush=True)
        deadline = time.monotonic() + 120
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        print("step 2/2 | echo-runtime: released", flush=True)
    checkpoints = Path(artifacts.checkpoint_root)
    checkpoints.mkdir(parents=True, exist_ok=True)
    (checkpoints / "runtime.json").write_text(
        json.dumps({"runtime_fingerprint": launch.runtime.fingerprint}) + "\n"
    )
    Path(artifacts.terminal_manifest).write_text(json.dumps({"run": run.id}) + "\n")
    print("echo-runtime: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
