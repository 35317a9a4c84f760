"""SET017 and MEM002's optimizer dtypes against SkyRL's own conversion: every release's
`coerce_optimizer_dtype_kwargs` (skyrl/backends/skyrl_train/distributed/megatron/
optimizer_dtype.py) runs in its contract env on each key and name, and preflight refuses exactly
what it refuses, and costs what it accepts at the size of the torch dtype it makes."""

from __future__ import annotations

import json
import subprocess

import pytest

from contract.skyrl_env import RELEASES, contract_python, pin_release
from rlaunch.preflight.estimates.gpu_memory import (
    OPTIMIZER_DTYPE_BYTES,
    OPTIMIZER_DTYPES,
    OPTIMIZER_STATE_DTYPES,
    optimizer_dtype,
)
from rlaunch.preflight.rules.memory import optimizer_offload
from rlaunch.preflight.rules.settings import MEGATRON_OPTIMIZER_KWARGS
from tests.preflight.helpers import example, messages

KEYS = (*OPTIMIZER_STATE_DTYPES, "main_grads_dtype", "params_dtype")
NAMES = (*OPTIMIZER_DTYPES, " BF16", "Half ", "FLOAT8", "int4", "fp4", "bf 16", "", "float64")

COERCE = """
import json, sys
from skyrl.backends.skyrl_train.distributed.megatron.optimizer_dtype import (
    coerce_optimizer_dtype_kwargs)
answers = []
for key, name in json.load(sys.stdin):
    try:
        dtype = coerce_optimizer_dtype_kwargs({key: name})[key]
    except ValueError as err:
        answers.append(["refused", str(err)])
    else:
        answers.append([str(dtype), dtype.itemsize])
print(json.dumps(answers))
"""


@pytest.mark.parametrize("release", RELEASES)
def test_preflight_refuses_the_dtypes_skyrl_refuses_and_costs_the_others_at_their_size(
        release: str) -> None:
    cases = [(key, name) for key in KEYS for name in NAMES]
    done = subprocess.run([contract_python(release), "-c", COERCE], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    refused = 0
    for (key, name), (skyrl, size) in zip(cases, answers, strict=True):
        # With the precision-aware optimizer, so Megatron-core's fp32 assertion is not at stake.
        data = pin_release(example("megatron-moe-5x8"), release)
        data["settings"] = {MEGATRON_OPTIMIZER_KWARGS: {
            "use_precision_aware_optimizer": True, key: name}}
        found = messages(data, "SET017")
        if skyrl == "refused":
            refused += 1
            assert len(found) == 1, (key, name, size)
            continue
        assert found == [], (key, name, skyrl)
        assert OPTIMIZER_DTYPE_BYTES[optimizer_dtype(name)] == size, (key, name, skyrl)
        state = optimizer_offload({"use_precision_aware_optimizer": True, key: name})
        if key == "main_params_dtype":
            assert state.master == optimizer_dtype(name)
        elif key in OPTIMIZER_STATE_DTYPES:
            assert optimizer_dtype(name) in state.moments
    # The five made-up names for every key, and main_params_dtype's seven spellings of bf16
    # and fp8 (TE's FusedAdam keeps its master params in fp32 or fp16).
    assert refused == 5 * len(KEYS) + 7
