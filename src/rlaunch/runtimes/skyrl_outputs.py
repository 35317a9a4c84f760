"""What a finished SkyRL run leaves, read back through the store, and its terminal manifest.

SkyRL 0.3.0 writes object-store paths itself, through fsspec
(`skyrl/backends/skyrl_train/utils/io/io.py`: `is_cloud_path` for s3://, gs://, gcs://):
- checkpoints: `RayPPOTrainer.save_checkpoints` (`skyrl/train/trainer.py`) writes
  `{trainer.ckpt_path}/global_step_N/` and, last, `{ckpt_path}/latest_ckpt_global_step.txt`
  with `io.open_file`;
- exports: `RayPPOTrainer.save_models` writes HF weights to
  `{trainer.export_path}/global_step_N/policy` (the FSDP strategy's `save_hf_model` saves into
  `io.local_work_dir(output_dir)`, which uploads a cloud path when the block ends).
The launch YAML points both at the run's own store paths (`artifacts.checkpoint_root`,
`artifacts.export_root`), so nothing is uploaded after; the adapter reads them back here.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from rlaunch.atomic import write_text_atomically
from rlaunch.paths import LATEST_CHECKPOINT_FILE, join
from rlaunch.render import LaunchDocument
from rlaunch.store.fs import open_location

MANIFEST_SCHEMA_VERSION = 1
LATEST_FILE = LATEST_CHECKPOINT_FILE
_STEP_DIR = re.compile(r"^global_step_(\d+)$")


class OutputError(Exception):
    """SkyRL exited 0 but what it should have written is not there."""


def _last_step(launch: LaunchDocument) -> tuple[int, str]:
    """The last step SkyRL saved, from its latest-checkpoint pointer, else its export folders."""
    ckpt_root = launch.artifacts.checkpoint_root
    location = open_location(ckpt_root, what="artifacts.checkpoint_root")
    latest = join(location.root, LATEST_FILE)
    if location.fs.exists(latest):
        text = location.fs.cat_file(latest).decode().strip()
        if text.isdigit():
            return int(text), join(ckpt_root, LATEST_FILE)
    export = open_location(launch.artifacts.export_root, what="artifacts.export_root")
    steps = []
    if export.fs.exists(export.root):
        for path in export.fs.ls(export.root, detail=False):
            match = _STEP_DIR.match(str(path).rstrip("/").rsplit("/", 1)[-1])
            if match:
                steps.append(int(match[1]))
    if not steps:
        raise OutputError(
            f"SkyRL exited 0 but wrote no checkpoint pointer ({join(ckpt_root, LATEST_FILE)}) "
            f"and no export (global_step_N under {launch.artifacts.export_root}); set "
            "checkpoint.ckpt_interval or checkpoint.hf_save_interval so the run saves its result"
        )
    return max(steps), launch.artifacts.export_root


def export_digests(uri: str) -> dict[str, Any]:
    """sha256 of every file under `uri`, and the directory digest (rlaunch.store.records'
    `sha256sum` manifest form)."""
    location = open_location(uri, what="export")
    base = location.root.rstrip("/") + "/"
    files: dict[str, str] = {}
    for path in sorted(location.fs.find(location.root)):
        relative = str(path)[len(base):] if str(path).startswith(base) else str(path)
        digest = hashlib.sha256()
        with location.fs.open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        files[relative] = digest.hexdigest()
    lines = "".join(f"{sha}  {path}\n" for path, sha in sorted(files.items(),
                                                                key=lambda kv: kv[0].encode()))
    weights = "".join(f"{sha}  {path}\n" for path, sha in sorted(files.items())
                      if path.endswith(".safetensors"))
    return {
        "files": files,
        "export_sha256": hashlib.sha256(lines.encode()).hexdigest(),
        "weights_sha256": hashlib.sha256(weights.encode()).hexdigest() if weights else None,
    }


def terminal_manifest(launch: LaunchDocument, *, attempt_id: str,
                      wandb_url: str | None) -> dict[str, Any]:
    step, source = _last_step(launch)
    export_path = join(launch.artifacts.export_root, f"global_step_{step}", "policy")
    location = open_location(export_path, what="export")
    if not location.fs.exists(location.root):
        raise OutputError(
            f"SkyRL exited 0 at step {step} ({source}) but wrote no export at {export_path}; set "
            "checkpoint.hf_save_interval so the last step is exported"
        )
    return manifest_of(launch, attempt_id=attempt_id, wandb_url=wandb_url, final_step=step,
                       export_path=export_path)


def manifest_of(launch: LaunchDocument, *, attempt_id: str, wandb_url: str | None,
                final_step: int | None, export_path: str) -> dict[str, Any]:
    """The terminal manifest of a run whose result is the folder `export_path` (an eval stage
    has no step: `final_step` None)."""
    digests = export_digests(export_path)
    return {
        "schema_version": MANIFEST_SCHEMA_VERSION,
        "status": "succeeded",
        "run_id": launch.run.id,
        "fingerprint": launch.run.fingerprint,
        "runtime_fingerprint": launch.runtime.fingerprint,
        "runtime": "skyrl",
        "attempt_id": attempt_id,
        "final_step": final_step,
        "export_path": export_path,
        "weights_sha256": digests["weights_sha256"],
        "export_sha256": digests["export_sha256"],
        "export_files": digests["files"],
        "wandb_url": wandb_url,
    }


def write_manifest(uri: str, manifest: dict[str, Any]) -> None:
    """Written last, whole: atomically on a local store; one object put on an object store."""
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    location = open_location(uri, what="artifacts.terminal_manifest")
    if location.is_local:
        write_text_atomically(location.root, text)
    else:
        location.fs.pipe_file(location.root, text.encode())
