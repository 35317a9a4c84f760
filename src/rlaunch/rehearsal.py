"""What `--rehearse` changes about a launch (docs/rehearsal.md): which runs it can rehearse, the
store it uses, the spec it submits, and the report of what SkyRL wrote.

A rehearsal runs the exact launch YAML through SkyRL's own loop on this machine's CPU
(rlaunch.runtimes.skyrl_cpu replaces the GPU-bound workers and engines). rlaunch.launch calls
these; everything else about the launch (preflight, render, staging, the ledger) is the same
path as a real launch.
"""

from __future__ import annotations

from collections.abc import Callable

from rlaunch.ledger.smoke import read_terminal_manifest
from rlaunch.paths import join, run_paths
from rlaunch.preflight.rules.settings import LORA_RANK
from rlaunch.spec import RunSpec
from rlaunch.spec.catalog import resolve
from rlaunch.store import StoreError
from rlaunch.store.fs import open_location

Say = Callable[[str], None]

REHEARSAL_GATE_REASON = "--rehearse: a rehearsal on this machine's CPU, in the rehearsal store"
"""Why a rehearsal passes the smoke gate (it guards GPU runs in the real store)."""
REHEARSALS = "_rehearsal"
"""The folder of the store that holds rehearsals: their inputs, runs and ledger."""
REHEARSAL_EXECUTOR = "local"
"""The executor a rehearsal runs on: a Ray head on this machine."""
SIMULATED = "sim"
"""The accelerator of a local head's simulated GPUs (EXEC002)."""
REHEARSAL_RELEASE = "0.3.0"
"""The SkyRL release the rehearsal environment holds (3rdparty/skyrl-rehearsal.txt) and whose FSDP
workers rlaunch.runtimes.skyrl_cpu replaces: a run pinned to another is not rehearsed (SkyRL's
loop would be another release's code than the run's)."""
REHEARSAL_WAIVED = frozenset({"VER004"})
"""Findings that guard a real launch's record only, not a rehearsal."""


class RehearsalError(Exception):
    """A rehearsal cannot start; the message says why and what to do."""


def rehearsal_prefix(prefix: str) -> str:
    """The store of the rehearsals of runs stored under `prefix`: `{prefix}/_rehearsal`, a store
    of its own (same scheme, same layout), which no launch, pipeline plan, smoke gate or
    `rlaunch ls` of `prefix` reads. Given a rehearsal store, that store."""
    if prefix.rstrip("/").endswith("/" + REHEARSALS):
        return prefix
    return join(prefix, REHEARSALS)


def not_rehearsed(spec: RunSpec) -> str | None:
    """Why a rehearsal cannot run `spec` (None: it can): it runs SkyRL's loop, and the CPU
    workers of rlaunch.runtimes.skyrl_cpu replace SkyRL's FSDP workers only, syncing full
    weights."""
    if spec.runtime.profile != "skyrl":
        return (f"--rehearse runs SkyRL's own training loop, but {spec.identity} uses the "
                f"{spec.runtime.profile!r} runtime profile (runtime {spec.runtime.name}); "
                "launch it without --rehearse")
    runtime = spec.runtime
    pinned = resolve(runtime.profile, package=runtime.package, commit=runtime.commit)
    if pinned is None or pinned.version != REHEARSAL_RELEASE:
        what = (f"SkyRL {pinned.version}" if pinned is not None else
                f"{runtime.pin_label}, which the runtime catalog does not know")
        return (f"--rehearse runs SkyRL {REHEARSAL_RELEASE}'s training loop (the rehearsal "
                f"environment, 3rdparty/skyrl-rehearsal.txt), but {spec.identity} pins {what}: "
                "the rehearsal would run another release's code than the run. Rehearse a "
                f"variant pinned to skyrl=={REHEARSAL_RELEASE} for its data, config and store "
                "handoffs, and smoke the run itself on GPUs")
    if spec.role_plan.strategy != "fsdp":
        return (f"--rehearse runs SkyRL's FSDP workers' code on CPU, but {spec.identity} trains "
                f"with role_plan.strategy {spec.role_plan.strategy!r}, whose workers need "
                "Megatron-Core on GPUs: a rehearsal would not run its checkpoint and export "
                "code. Rehearse an fsdp variant of the run for its data, config and store "
                "handoffs, and smoke the megatron run on GPUs")
    rank = spec.settings.get(LORA_RANK)
    if isinstance(rank, int) and rank > 0:
        return (f"--rehearse syncs full weights to its CPU engines, but {spec.identity} trains "
                f"LoRA adapters (settings {LORA_RANK} = {rank}), which SkyRL syncs to vLLM "
                "only: not rehearsed. Rehearse the run without LoRA for its data, config and "
                "store handoffs")
    return None


def rehearsal_spec(spec: RunSpec) -> RunSpec:
    """The spec a rehearsal launches: the local executor (a Ray head on this machine with the
    allocation's GPUs simulated: accelerator `sim`, as many GPUs per node), everything else as
    declared."""
    allocation = spec.execution.allocation.model_copy(update={"accelerator": SIMULATED})
    execution = spec.execution.model_copy(
        update={"executor": REHEARSAL_EXECUTOR, "address": None, "cluster": None,
                "allocation": allocation})
    return spec.model_copy(update={"execution": execution})


def forget_rehearsal(spec: RunSpec, prefix: str, say: Say) -> None:
    """A rehearsal starts afresh: the previous rehearsal of the same identity (its run folder
    and ledger record in the rehearsal store `prefix`) is removed first. Raises RehearsalError
    when the store refuses."""
    paths = run_paths(prefix, spec.name, spec.version)
    for uri in (paths.run_root, paths.ledger_record):
        try:
            location = open_location(uri, what="the rehearsal store")
            if location.fs.exists(location.root):
                location.fs.rm(location.root, recursive=True)
                say(f"rlaunch: removed the previous rehearsal's {uri}")
        except (StoreError, OSError) as err:
            raise RehearsalError(f"cannot remove the previous rehearsal's {uri}: {err}") from None


def _list_files(uri: str) -> list[tuple[str, int]]:
    location = open_location(uri, what="the rehearsal's run folder")
    if not location.fs.exists(location.root):
        return []
    base = location.root.rstrip("/") + "/"
    found = location.fs.find(location.root, detail=True)
    return sorted((str(path)[len(base):], int(info.get("size") or 0))
                  for path, info in found.items() if str(path).startswith(base))


def rehearsal_report(spec: RunSpec, prefix: str, say: Say) -> None:
    """What SkyRL wrote in the rehearsal (checkpoints, the pointer, the export, logs) and the
    terminal manifest the adapter wrote."""
    paths = run_paths(prefix, spec.name, spec.version)
    try:
        files = _list_files(paths.run_root)
        manifest = read_terminal_manifest(prefix, spec.name, spec.version)
    except (StoreError, OSError) as err:
        say(f"rlaunch: the rehearsal's files under {paths.run_root} cannot be listed: {err}")
        return
    say(f"rlaunch: rehearsal of {spec.identity}: {len(files)} files under {paths.run_root}")
    for name, size in files:
        say(f"  {name} ({size} bytes)")
    pointer = next((name for name, _ in files
                    if name.endswith("checkpoints/latest_ckpt_global_step.txt")), None)
    if pointer is not None:
        location = open_location(join(paths.run_root, pointer), what="the pointer")
        step = location.fs.cat_file(location.root).decode().strip()
        say(f"rlaunch: SkyRL's latest checkpoint pointer names global_step_{step}")
    if manifest is None:
        say(f"rlaunch: no terminal manifest at {paths.terminal_manifest}")
        return
    say(f"rlaunch: terminal manifest {paths.terminal_manifest}: status {manifest.get('status')}, "
        f"final step {manifest.get('final_step')}, export {manifest.get('export_path')}")
