"""Stands in for SkyRL's entrypoint in the adapter's supervision tests (no GPU here to run the
real one): from the overrides it gets, it writes what SkyRL 0.3.0 writes at the end of a run,
through fsspec as SkyRL does (`skyrl/backends/skyrl_train/utils/io/io.py`):
`{trainer.ckpt_path}/latest_ckpt_global_step.txt` and the HF export
`{trainer.export_path}/global_step_N/policy/`; it prints a W&B run line like wandb's.
`STAND_IN_STEPS` is the last step (default 2); `STAND_IN_EXPORTS` the steps exported (default:
the last one; SkyRL exports every `hf_save_interval` steps and at the end,
`RayPPOTrainer.train`); `STAND_IN_MODEL_FILES` a folder whose files every export holds beside
its weights, as `save_hf_model` saves the model's config and the tokenizer with them (default:
a one-line config.json).

`STAND_IN_MODE=wait` instead writes `STAND_IN_READY` and waits for a signal, then exits with
128 + its number; `STAND_IN_MODE=fail` exits 3 at once.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import fsspec


def override(name: str) -> str:
    for arg in sys.argv[1:]:
        key, _, value = arg.partition("=")
        if key == name:
            return json.loads(value)
    raise SystemExit(f"no override {name}")


def main() -> int:
    mode = os.environ.get("STAND_IN_MODE", "succeed")
    if mode == "fail":
        return 3
    if mode == "wait":
        def stop(signum: int, frame: object) -> None:
            print(f"stand-in: got signal {signum}", flush=True)
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, stop)
        Path(os.environ["STAND_IN_READY"]).write_text(str(os.getpid()))
        time.sleep(120)
        return 1
    step = int(os.environ.get("STAND_IN_STEPS", "2"))
    model_files = os.environ.get("STAND_IN_MODEL_FILES")
    for exported in os.environ.get("STAND_IN_EXPORTS", str(step)).split():
        export = f"{override('trainer.export_path')}/global_step_{exported}/policy"
        with fsspec.open(f"{export}/model.safetensors", "wb") as handle:
            handle.write(b"weights of step %d" % int(exported))
        files = sorted(Path(model_files).iterdir()) if model_files else []
        for path in files:
            with fsspec.open(f"{export}/{path.name}", "wb") as handle:
                handle.write(path.read_bytes())
        if not files:
            with fsspec.open(f"{export}/config.json", "w") as handle:
                handle.write('{"model_type": "stand-in"}')
    with fsspec.open(f"{override('trainer.ckpt_path')}/latest_ckpt_global_step.txt", "w") as f:
        f.write(str(step))
    print("wandb: View run at https://wandb.ai/team/proj/runs/abc123", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
