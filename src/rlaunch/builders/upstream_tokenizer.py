"""The tokenizer an upstream run trained with, as the store holds it (for LAUNCH002).

A stage that reads another run's export as a model is compared with the tokenizer that run
trained with. An export usually carries it where rlaunch reads a payload's tokenizer (its root,
or `tokenizer/`: `rlaunch.store.tokenizers.tokenizer_folder`): the smoke runtime writes
`tokenizer.json` beside the weights (`rlaunch.models.tiny.save_pretrained`), and SkyRL 0.3.0
saves the tokenizer with the weights into `global_step_N/policy/` (`RayPPOTrainer.save_models`,
skyrl/train/trainer.py), the folder the export is recorded as (`rlaunch.builders.run_export`),
so those files are compared directly. For an export without tokenizer files, the comparison
reads the upstream run's own tokenizer artifact (`export.run.tokenizer`, its identity and
fingerprint), which the upstream's launch materialized: from the store when it holds that
identity with that fingerprint, else built (or downloaded) again like any input, unless the
launch reads another artifact of that identity (the export then counts as one without
tokenizer files: LAUNCH002 warns that nothing was compared).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rlaunch.builders.base import AnyArtifact, Log
from rlaunch.builders.graph import materialize_artifacts
from rlaunch.builders.rules import graph_order
from rlaunch.preflight.launch_checks.tokenizer_gate import MODEL_SLOTS, tokenizer_source
from rlaunch.spec import RunSpec
from rlaunch.spec.artifacts import RunExport, fingerprint, identity
from rlaunch.store import ArtifactStore
from rlaunch.store.tokenizers import contents_key


def reads_a_run(artifact: AnyArtifact) -> bool:
    """Whether the artifact's graph reads a run's export (it cannot be built before that run)."""
    return any(isinstance(node, RunExport) for node in graph_order([artifact]))


def stored_payload(store: ArtifactStore, artifact: AnyArtifact, log: Log) -> Path | None:
    """The local folder of `artifact` as the store holds it (its files verified), or None when
    the store does not hold it with the artifact's fingerprint."""
    if reads_a_run(artifact):
        return None
    record = store.read_record(artifact.name, artifact.version)
    if record is None or record.fingerprint != fingerprint(artifact):
        return None
    return store.local_path(record, log=log)


def tokenizer_payload(store: ArtifactStore, artifact: AnyArtifact, log: Log,
                      spec: RunSpec) -> Path | None:
    """The tokenizer as the store holds it, else materialized (built or downloaded) now; None
    when `spec` (the run being launched) reads another artifact of the same identity: a dev
    identity holds one fingerprint at a time, and building this one would replace that input."""
    stored = stored_payload(store, artifact, log)
    if stored is not None:
        return stored
    theirs = {identity(node): fingerprint(node) for _, node in spec.artifacts()}
    if theirs.get(identity(artifact), fingerprint(artifact)) != fingerprint(artifact):
        return None
    return materialize_artifacts({"tokenizer": artifact}, store, log=log)["tokenizer"]


def upstream_slots(spec: RunSpec) -> list[tuple[str, RunExport]]:
    """The model slots of `spec` that read a run's export trained with another tokenizer pin
    than the run's, whose tokenizer is an input rather than another run's output."""
    mine = tokenizer_source(spec.tokenizer)
    exports = ((slot, getattr(spec, slot)) for slot in MODEL_SLOTS)
    return [(slot, export) for slot, export in exports
            if isinstance(export, RunExport) and tokenizer_source(export) != mine
            and not reads_a_run(export.run.tokenizer)]


def upstream_tokenizer_payloads(spec: RunSpec, store: ArtifactStore | str,
                                payloads: Mapping[str, Path], log: Log) -> dict[str, Path]:
    """`slot -> folder` for each of `upstream_slots` whose export has no tokenizer files (in
    `payloads`, the materialized inputs): the folder of the tokenizer that run trained with."""
    opened = store if isinstance(store, ArtifactStore) else ArtifactStore(store)
    found = {}
    for slot, export in upstream_slots(spec):
        if contents_key(payloads[slot]) is not None:
            continue
        payload = tokenizer_payload(opened, export.run.tokenizer, log, spec)
        if payload is not None:
            found[slot] = payload
    return found
