"""Run inside the SkyRL contract env (CPython 3.12), not under pytest.

    PYTHONPATH=src python handoff_runner.py <the SkyRL overrides>

Runs `python -m rlaunch.runtimes.skyrl_handoff` with the argv given, after putting the
stand-ins for torch and ray of skyrl_harness.py in place (a real SkyRL environment has both;
`validate_cfg`'s modules import them, nothing the check runs uses them). transformers and
datasets are imported first, so they see this venv as it is: no torch.
"""

from __future__ import annotations

import runpy
import sys

import datasets  # noqa: F401  (imported before the stand-ins: it probes for torch)
import transformers
from skyrl_harness import install_stand_ins

transformers.utils.is_torch_available()  # cached as False before the stand-in appears
install_stand_ins()
# datasets' hasher (datasets/utils/_dill.py) asks `issubclass(type, torch.nn.Module)` once
# torch is in sys.modules: the stand-in needs a class there, as torch.Tensor is one.
sys.modules["torch"].nn = sys.modules["torch.nn"]
sys.modules["torch.nn"].Module = type("Module", (), {})
sys.argv = ["skyrl_handoff", *sys.argv[1:]]
runpy.run_module("rlaunch.runtimes.skyrl_handoff", run_name="__main__", alter_sys=True)
