"""The smoke runtime: a launch YAML run end to end on CPU, Ray + torch, simulated GPUs.

`python -m rlaunch.runtimes.smoke LAUNCH_YAML` (docs/smoke-runtime.md). It places every role
of the plan on simulated GPUs (one actor each), trains a tiny policy with GRPO on the
countdown task, syncs weights to the rollout engines, checkpoints, resumes, exports an
HF-style directory and writes the terminal manifest last.
"""

import os
import warnings

# The runtime lock has no numpy; torch warns about it on import in every process.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

# Without a cluster to join (no RAY_ADDRESS) the runtime starts a private Ray
# (rlaunch.runtimes.smoke.cluster.connect), which serves this process only. With this setting 0
# Ray keeps every server on 127.0.0.1 (else it listens on the machine's address and on all
# interfaces too); Ray reads it when it is imported, so it is set here, before anything imports
# Ray.
if not os.environ.get("RAY_ADDRESS"):
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
