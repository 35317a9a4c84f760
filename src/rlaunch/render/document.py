"""RunSpec -> the launch document (a plain dict, keys in the documented order).

Every dict is built in the order docs/launch-yaml.md lists its keys, so a YAML dumper that keeps
insertion order writes the same bytes for the same inputs. The only free-form mappings (a built
artifact's `config`) are sorted recursively, because a spec's own file sorts them on the way out
and a render must not depend on the key order a person happened to type.
"""

from __future__ import annotations

from typing import Any

from rlaunch.paths import artifact_root, run_paths
from rlaunch.render.skyrl import skyrl_subtree
from rlaunch.spec import (
    AdoptedArtifact,
    HFDataset,
    HFModel,
    RunExport,
    RunSpec,
    fingerprint,
    identity,
)
from rlaunch.spec.artifacts import AnyArtifact
from rlaunch.spec.syntax import COMMIT

LAUNCH_SCHEMA_VERSION = 1
"""Bumped on any change a reader must know about (renamed, removed or re-meant keys)."""

SECTIONS = (
    "schema_version", "run", "runtime", "execution", "artifacts", "inputs", "resume", "skyrl",
)
"""Top-level keys of a launch document, in order."""

INPUT_SLOTS = ("model", "tokenizer", "reference_model", "critic_model", "train_data", "eval_data",
               "environment_data")
"""RunSpec artifact slots, in the order they appear under `inputs` (unset slots are left out)."""


class RenderError(ValueError):
    """An argument of a render (not the spec: preflight judges that) is unusable."""


def normalize_store_prefix(store_prefix: str) -> str:
    """The prefix as it is recorded: no trailing `/` (a bare `/` stays `/`)."""
    if not isinstance(store_prefix, str) or not store_prefix.strip():
        raise RenderError(
            f"store prefix: must be a non-empty path or URL (got {store_prefix!r}); pass "
            "--store, set execution.store_prefix in the spec, or $RLAUNCH_STORE"
        )
    return store_prefix.rstrip("/") or "/"


def check_launcher_commit(launcher_commit: str | None) -> str | None:
    if launcher_commit is None or COMMIT.fullmatch(launcher_commit):
        return launcher_commit
    raise RenderError(
        f"launcher commit: must be a 40-hex lowercase git commit sha or omitted "
        f"(got {launcher_commit!r}); use `git rev-parse HEAD` of the launcher checkout"
    )


def _sorted_mapping(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted_mapping(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted_mapping(item) for item in value]
    return value


def _source(artifact: AnyArtifact) -> dict[str, Any]:
    if isinstance(artifact, HFModel):
        return {"repo_id": artifact.repo_id, "revision": artifact.revision}
    if isinstance(artifact, HFDataset):
        # The snapshot is the whole repo; the runtime needs the config to load the right subset.
        return {
            "repo_id": artifact.repo_id,
            "revision": artifact.revision,
            "config": artifact.config,
        }
    if isinstance(artifact, AdoptedArtifact):
        return {"uri": artifact.uri, "sha256": artifact.sha256}
    if isinstance(artifact, RunExport):
        return {"run": identity(artifact), "run_fingerprint": artifact.run.fingerprint}
    return {"builder": artifact.builder, "config": _sorted_mapping(artifact.config)}


def input_uri(artifact: AnyArtifact, store_prefix: str) -> str:
    """Where an input lives in the store: its artifact root, or for a run's export the run's
    export folder (the launcher records it there as an artifact before the consumer runs)."""
    if isinstance(artifact, RunExport):
        return run_paths(store_prefix, artifact.name, artifact.version).export_root
    return artifact_root(store_prefix, artifact.name, artifact.version)


def input_entry(artifact: AnyArtifact, store_prefix: str) -> dict[str, Any]:
    """One `inputs.<slot>` entry: where the materialized artifact lives and what it is."""
    return {
        "identity": identity(artifact),
        "kind": artifact.kind,
        "type": artifact.type,
        "fingerprint": fingerprint(artifact),
        "uri": input_uri(artifact, store_prefix),
        "source": _source(artifact),
    }


def _run(spec: RunSpec) -> dict[str, Any]:
    return {
        "id": spec.identity,
        "name": spec.name,
        "version": spec.version,
        "seed": spec.seed,
        "fingerprint": spec.fingerprint,
    }


def _runtime(spec: RunSpec, launcher_commit: str | None) -> dict[str, Any]:
    pin = spec.runtime
    return {
        "name": pin.name,
        "profile": pin.profile,
        "package": pin.package,
        "git": None if pin.git is None else {"repo": pin.git.repo, "commit": pin.git.commit},
        "entrypoint": pin.entrypoint,
        "required_fixes": list(pin.required_fixes),
        "fingerprint": spec.runtime_fingerprint,
        "launcher_commit": launcher_commit,
    }


def _execution(spec: RunSpec) -> dict[str, Any]:
    execution = spec.execution
    allocation = execution.allocation
    wandb = execution.wandb
    return {
        "executor": execution.executor,
        "address": execution.address,
        "cluster": execution.cluster,
        "priority": execution.priority,
        "max_retries": execution.max_retries,
        "timeout_minutes": execution.timeout_minutes,
        "allocation": {
            "num_nodes": allocation.num_nodes,
            "gpus_per_node": allocation.gpus_per_node,
            "accelerator": allocation.accelerator,
            "cpus_per_node": allocation.cpus_per_node,
            "memory_gb_per_node": allocation.memory_gb_per_node,
            "disk_gb_per_node": allocation.disk_gb_per_node,
        },
        # Names only, sorted and unique: the executor forwards these variables from the
        # submitting environment; their values never enter a file.
        "env": sorted(set(execution.credentials)),
        "wandb": None if wandb is None else {"entity": wandb.entity, "project": wandb.project},
    }


def _artifacts(spec: RunSpec, store_prefix: str) -> dict[str, Any]:
    paths = run_paths(store_prefix, spec.name, spec.version)
    return {
        "store_prefix": store_prefix,
        "run_root": paths.run_root,
        "checkpoint_root": paths.checkpoint_root,
        "export_root": paths.export_root,
        "attempts_root": paths.attempts_root,
        "terminal_manifest": paths.terminal_manifest,
    }


def _inputs(spec: RunSpec, store_prefix: str) -> dict[str, Any]:
    slots = spec.slots()
    return {slot: input_entry(slots[slot], store_prefix) for slot in INPUT_SLOTS if slot in slots}


def _resume(spec: RunSpec) -> dict[str, Any]:
    return {
        "mode": spec.resume.mode,
        "path": spec.resume.path,
        "compatible_runtimes": list(spec.resume.compatible_runtimes),
    }


def launch_document(
    spec: RunSpec, *, store_prefix: str, launcher_commit: str | None
) -> dict[str, Any]:
    """The launch document of `spec` as plain data (what `render_launch` writes as YAML).

    It renders whatever the spec says: judging the spec is preflight's job (`rlaunch preflight`,
    and `launch` refuses a spec with findings). Only the arguments are checked here.
    """
    prefix = normalize_store_prefix(store_prefix)
    commit = check_launcher_commit(launcher_commit)
    artifacts = _artifacts(spec, prefix)
    inputs = _inputs(spec, prefix)
    return {
        "schema_version": LAUNCH_SCHEMA_VERSION,
        "run": _run(spec),
        "runtime": _runtime(spec, commit),
        "execution": _execution(spec),
        "artifacts": artifacts,
        "inputs": inputs,
        "resume": _resume(spec),
        "skyrl": skyrl_subtree(spec, inputs=inputs, artifacts=artifacts,
                               release=spec.skyrl_release),
    }
