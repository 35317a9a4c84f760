"""Checkpoint root layout, the `latest` pointer, rotation and the runtime record.

    {checkpoint_root}/runtime.json                    what writes this root: runtime and run
                                                      fingerprints, the run exports it reads
    {checkpoint_root}/global_step_N/policy_rank<r>/   model.safetensors, optimizer.pt, rng.pt
    {checkpoint_root}/global_step_N/trainer_state.json step, data position, metric history
    {checkpoint_root}/latest_ckpt_global_step.txt     "N", written last, atomically

A step directory is assembled under a temporary name and renamed into place; the pointer is
replaced only after that, so a process killed at any moment leaves the pointer on a complete
checkpoint. Directories a killed attempt left behind are overwritten when that step is
reached again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from rlaunch.atomic import write_json_atomically, write_text_atomically
from rlaunch.paths import LATEST_CHECKPOINT_FILE
from rlaunch.runtimes.trained_from import EXPORTS_KEY, RUNTIME_FILE, Exports, stale_export

LATEST_FILE = LATEST_CHECKPOINT_FILE
STATE_FILE = "trainer_state.json"
STEP_DIR = re.compile(r"global_step_(\d+)")


class CheckpointError(RuntimeError):
    """A checkpoint root or directory that this run must not, or cannot, resume from."""


def step_dir(root: Path, step: int) -> Path:
    return root / f"global_step_{step}"


def latest_step(root: Path) -> int | None:
    pointer = root / LATEST_FILE
    if not pointer.is_file():
        return None
    text = pointer.read_text().strip()
    if not text.isdigit():
        raise CheckpointError(f"{pointer} holds {text!r}, not a step number")
    return int(text)


def check_runtime(root: Path, *, runtime_fingerprint: str, compatible: tuple[str, ...]) -> None:
    """Refuse a root whose checkpoints another (undeclared) runtime wrote."""
    record = root / RUNTIME_FILE
    if not record.is_file():
        return
    written_by = json.loads(record.read_text()).get("runtime_fingerprint")
    if written_by == runtime_fingerprint or written_by in compatible:
        return
    has_checkpoints = any(STEP_DIR.fullmatch(p.name) for p in root.iterdir() if p.is_dir())
    if not has_checkpoints:
        return
    raise CheckpointError(
        f"checkpoint root {root} was written by runtime {written_by} (see {record}), this run's "
        f"runtime is {runtime_fingerprint}; resuming across runtimes is refused. Bump the run "
        f"version (a fresh root), or declare the old runtime in resume.compatible_runtimes"
    )


def check_run(root: Path, *, run_fingerprint: str) -> None:
    """Refuse to resume checkpoints that another configuration of the run wrote: a `dev`
    version relaunched with other settings shares the root, and its state would load silently
    into a run it does not belong to."""
    record = root / RUNTIME_FILE
    if not record.is_file():
        return
    written_by = json.loads(record.read_text()).get("run_fingerprint")
    if written_by in (None, run_fingerprint) or latest_step(root) is None:
        return
    raise CheckpointError(
        f"checkpoint root {root} holds checkpoints of run fingerprint {written_by} (see "
        f"{record}), this run's fingerprint is {run_fingerprint}; resuming them would load the "
        f"state of another configuration. Set resume.mode none to start over, or launch the new "
        f"configuration under a new version"
    )


def check_exports(root: Path, *, exports: Exports) -> None:
    """Refuse to resume checkpoints trained from another export of an upstream run than the
    one this run reads (`rlaunch.runtimes.trained_from`)."""
    record = root / RUNTIME_FILE
    if not exports or not record.is_file() or latest_step(root) is None:
        return
    stale = stale_export(str(root), str(record), json.loads(record.read_text()), exports)
    if stale is not None:
        raise CheckpointError(stale)


def record_runtime(root: Path, *, runtime_fingerprint: str, run_fingerprint: str,
                   run_id: str, exports: Exports | None = None) -> None:
    """What writes the root: the runtime, the run's configuration and the content of every
    run export it reads (slot -> identity, content), for `check_runtime`, `check_run` and
    `check_exports` of the next attempt."""
    write_json_atomically(
        root / RUNTIME_FILE,
        {"runtime_fingerprint": runtime_fingerprint, "run_fingerprint": run_fingerprint,
         "run_id": run_id, EXPORTS_KEY: {slot: dict(e) for slot, e in (exports or {}).items()},
         "writer": "rlaunch.runtimes.smoke"},
    )


def staging_dir(root: Path, step: int) -> Path:
    """An empty directory beside the final one, to fill before `commit`."""
    staging = root / f".global_step_{step}.partial"
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    return staging


def commit(root: Path, step: int, staging: Path, state: dict, *, keep: int) -> Path:
    """Write trainer_state.json, move the step into place, move the pointer, then rotate."""
    write_json_atomically(staging / STATE_FILE, state)
    final = step_dir(root, step)
    if final.exists():
        shutil.rmtree(final)
    os.replace(staging, final)
    write_text_atomically(root / LATEST_FILE, f"{step}\n")
    rotate(root, keep=keep)
    return final


def rotate(root: Path, *, keep: int) -> list[int]:
    """Delete the oldest step directories beyond `keep` (-1 keeps all); returns deleted steps."""
    if keep < 0:
        return []
    steps = sorted(int(m.group(1)) for p in root.iterdir()
                   if p.is_dir() and (m := STEP_DIR.fullmatch(p.name)))
    latest = latest_step(root)
    doomed = [s for s in steps[: max(len(steps) - keep, 0)] if s != latest]
    for step in doomed:
        shutil.rmtree(step_dir(root, step))
    return doomed


def clear(root: Path) -> list[int]:
    """Remove the pointer and every step directory (resume mode `none` starts over: left in
    place, an earlier attempt's steps would be rotated and resumed as if they were this run's)."""
    if not root.is_dir():
        return []
    (root / LATEST_FILE).unlink(missing_ok=True)
    removed = []
    for path in sorted(root.iterdir()):
        match = STEP_DIR.fullmatch(path.name.removeprefix(".").removesuffix(".partial"))
        if path.is_dir() and match:
            shutil.rmtree(path)
            if not path.name.startswith("."):
                removed.append(int(match.group(1)))
    return sorted(removed)


def read_state(directory: Path) -> dict:
    path = directory / STATE_FILE
    if not path.is_file():
        raise CheckpointError(
            f"{directory} is not a complete smoke checkpoint (no {STATE_FILE}); point "
            "resume.path at a global_step_N directory"
        )
    return json.loads(path.read_text())
