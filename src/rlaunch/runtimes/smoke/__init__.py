"""The smoke runtime: a launch YAML run end to end on CPU, Ray + torch, simulated GPUs.

`python -m rlaunch.runtimes.smoke LAUNCH_YAML` (docs/smoke-runtime.md). It places every role
of the plan on simulated GPUs (one actor each), trains a tiny policy with GRPO on the
countdown task, syncs weights to the rollout engines, checkpoints, resumes, exports an
HF-style directory and writes the terminal manifest last.
"""

import warnings

# The runtime lock has no numpy; torch warns about it on import in every process.
warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
