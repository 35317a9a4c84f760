"""The SkyRL adapter imports only what a SkyRL environment has: it loads in SkyRL 0.3.0's contract
env without importing any of rlaunch's own dependencies that a SkyRL-only cluster may lack (ray,
torch, click, rich, s3fs, gcsfs: that env has several of them, and none may be imported), the way
it must on a cluster that has only SkyRL installed."""

from __future__ import annotations

import json
import os
import subprocess

from contract.skyrl_env import REPO_ROOT, contract_python

PROBE = """
import json, sys
import rlaunch.runtimes.skyrl, rlaunch.runtimes.staging, rlaunch.runtimes.skyrl_outputs
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_the_adapter_loads_in_skyrls_environment_without_rlaunchs_runtime() -> None:
    python = contract_python()
    done = subprocess.run(
        [python, "-c", PROBE], capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")},
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert {"rlaunch", "pydantic", "yaml", "fsspec"} <= loaded
    assert loaded.isdisjoint({"ray", "torch", "click", "rich", "s3fs", "gcsfs", "pants"})
