"""What a checkpoint root's checkpoints were trained from, and the resume check on it.

A run's fingerprint follows the fingerprint of every run whose export it reads, not what that
run exported: a dev upstream launched again under the same fingerprint rewrites its export in
place. A stage that resumes its checkpoints (`resume.mode latest`) would then go on training
weights that came from the previous export. So each runtime records, in its checkpoint root's
`runtime.json` (`run_exports`), the content of every run export the run reads (slot ->
identity, content), and refuses to resume when it differs from what the run reads now.

The content of an export is the sha256 of the `sha256sum`-style manifest of its files, as the
launcher recorded them (`export/_record.json`, verified against the files before the run reads
them): contents are compared, not attempts, so an upstream relaunch that exported the same bytes
still resumes. Used by the smoke runtime (`rlaunch.runtimes.smoke.checkpoint`, on its local
root) and the SkyRL adapter (`rlaunch.runtimes.skyrl`, through fsspec: SkyRL 0.3.0's
`RayPPOTrainer.load_checkpoints` in `skyrl/train/trainer.py` loads whatever
`latest_ckpt_global_step.txt` names, so the adapter checks before it starts SkyRL).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rlaunch.atomic import write_text_atomically
from rlaunch.paths import LATEST_CHECKPOINT_FILE, join
from rlaunch.render import LaunchDocument
from rlaunch.runtimes.staging import StageInput, read_record
from rlaunch.store import ArtifactRecord, FileEntry, StoreError, manifest_sha256
from rlaunch.store.fs import open_location

RUNTIME_FILE = "runtime.json"
EXPORTS_KEY = "run_exports"
RUN_EXPORT = "run_export"
"""The `type` of an `inputs.<slot>` entry that is another run's export."""

Exports = Mapping[str, Mapping[str, str]]
"""slot -> {"identity": name@version, "content": "sha256:..."}."""


def export_content(record: ArtifactRecord) -> str:
    """The content of an export, from its record: `sha256:` + the manifest's digest."""
    return files_content(record.files)


def files_content(files: list[FileEntry]) -> str:
    """The content of an export whose files are `files`: `sha256:` + their manifest's digest."""
    return f"sha256:{manifest_sha256(files)}"


def stale_export(root: str, record_path: str, recorded: Mapping[str, Any],
                 exports: Exports) -> str | None:
    """Why the checkpoints in `root` may not be resumed by a run that reads `exports`, or None.
    `recorded` is the root's runtime record (`record_path`), read by the caller."""
    trained_from = recorded.get(EXPORTS_KEY) or {}
    for slot, export in exports.items():
        before = (trained_from.get(slot) or {}).get("content")
        if before == export["content"]:
            continue
        what = (f"records no content for the export of {export['identity']} (inputs.{slot}) it "
                f"was trained from" if before is None else
                f"holds checkpoints trained from the export of {export['identity']} with "
                f"content {before} (inputs.{slot})")
        return (
            f"checkpoint root {root} {what} (see {record_path}), this run reads that export "
            f"with content {export['content']}: the upstream run was launched again since and "
            f"exported other weights; resuming would go on training from the previous ones. "
            f"Set resume.mode none to start over from the new export, or launch this run "
            f"under a new version"
        )
    return None


class StaleCheckpoints(Exception):
    """Resuming the checkpoint root would train on from another export of an upstream run."""


def launch_exports(launch: LaunchDocument) -> dict[str, dict[str, str]]:
    """Per slot of the launch YAML that reads another run's export: its identity and content,
    from its record in the store."""
    return {
        slot: {"identity": entry.identity, "content": export_content(read_record(
            StageInput(slot, entry.identity, entry.fingerprint, entry.uri)))}
        for slot, entry in launch.inputs.items() if entry.type == RUN_EXPORT
    }


def check_root(launch: LaunchDocument, exports: Exports) -> None:
    """`stale_export` on the launch's checkpoint root (any fsspec URI), when it resumes
    (`resume.mode latest`), holds a checkpoint and a runtime record; StaleCheckpoints if so."""
    if launch.resume.mode != "latest" or not exports:
        return
    uri = launch.artifacts.checkpoint_root
    location = open_location(uri, what="artifacts.checkpoint_root")
    record = join(location.root, RUNTIME_FILE)
    if not (location.fs.exists(join(location.root, LATEST_CHECKPOINT_FILE))
            and location.fs.exists(record)):
        return
    try:
        recorded = json.loads(location.fs.cat_file(record))
    except ValueError:
        raise StoreError(f"{join(uri, RUNTIME_FILE)} is not a runtime record (JSON); it was not "
                         f"written by an rlaunch runtime: point resume at a fresh root") from None
    stale = stale_export(uri, join(uri, RUNTIME_FILE), recorded, exports)
    if stale is not None:
        raise StaleCheckpoints(stale)


def record_root(launch: LaunchDocument, exports: Exports, writer: str) -> None:
    """Write the launch's checkpoint root's runtime record: what writes the root (runtime and
    run fingerprints) and the run exports it trains from, for the next attempt's checks."""
    location = open_location(launch.artifacts.checkpoint_root, what="artifacts.checkpoint_root")
    document = {"runtime_fingerprint": launch.runtime.fingerprint,
                "run_fingerprint": launch.run.fingerprint, "run_id": launch.run.id,
                EXPORTS_KEY: {slot: dict(export) for slot, export in exports.items()},
                "writer": writer}
    text = json.dumps(document, indent=2) + "\n"
    if location.is_local:
        write_text_atomically(join(location.root, RUNTIME_FILE), text)
    else:
        location.fs.pipe_file(join(location.root, RUNTIME_FILE), text.encode())
