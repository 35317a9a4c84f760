"""Where things live. Every path derives from an identity; none is set by hand.

    {prefix}/{name}/{version}/              an artifact or a run (its root)
    {run_root}/checkpoints/                 checkpoint root (global_step_N/, latest pointer)
    {run_root}/export/                      HF-style export
    {run_root}/attempts/                    one folder per submission attempt (logs, metrics)
    {run_root}/terminal.json                terminal manifest, written last
    {prefix}/_ledger/{name}/{version}.json  launch ledger record
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

STORE_ENV = "RLAUNCH_STORE"
ATTEMPT_ENV = "RLAUNCH_ATTEMPT_ID"
LAUNCH_DIGEST_ENV = "RLAUNCH_LAUNCH_DIGEST"
LATEST_CHECKPOINT_FILE = "latest_ckpt_global_step.txt"
"""In a checkpoint root, the step of the last complete checkpoint (SkyRL's pointer, which the
smoke runtime writes too): the root holds checkpoints to resume when it exists."""
"""In a job's environment: the sha256 of the launch YAML the launch preflighted and recorded;
the job refuses a YAML with another digest (rlaunch.render.output.load_launch)."""
"""Set by every executor in the job's environment: the attempt id (its `attempts/<id>/` folder)."""


def rlaunch_cache() -> Path:
    """`${XDG_CACHE_HOME:-~/.cache}/rlaunch`, absolute: the folder of every cache rlaunch keeps
    on this machine (the store by default, digests, node and remote copies, the local head's
    state, the compiled modules; scripts/lib.sh's RL_CACHE_ROOT)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser().resolve() / "rlaunch"


def default_store_prefix() -> str:
    """`$RLAUNCH_STORE`, else `$XDG_CACHE_HOME/rlaunch/store` (`~/.cache/rlaunch/store`).

    Resolved to an absolute path: what lands in a launch YAML never depends on `~`."""
    configured = os.environ.get(STORE_ENV)
    if configured:
        return configured if "://" in configured else str(Path(configured).expanduser().resolve())
    return str(rlaunch_cache() / "store")


def resolve_store_prefix(option: str | None = None, declared: str | None = None) -> str:
    """The store prefix every command uses (render, launch, preflight, build, ls): the `--store`
    option, else the spec's `execution.store_prefix` (`declared`), else `$RLAUNCH_STORE`, else
    `~/.cache/rlaunch/store`. A local path is made absolute, so that what lands in a launch YAML
    or the ledger never depends on the working directory or `~`; a URL is kept as written."""
    chosen = option or declared
    if not chosen:
        return default_store_prefix()
    return chosen if "://" in chosen else str(Path(chosen).expanduser().resolve())


def join(prefix: str, *parts: str) -> str:
    """Join with `/` whether the prefix is a local path or a URL (gs://, s3://, file://)."""
    return "/".join([prefix.rstrip("/"), *parts])


def artifact_root(prefix: str, name: str, version: str) -> str:
    return join(prefix, name, version)


@dataclass(frozen=True)
class RunPaths:
    run_root: str
    checkpoint_root: str
    export_root: str
    attempts_root: str
    terminal_manifest: str
    ledger_record: str


def run_paths(prefix: str, name: str, version: str) -> RunPaths:
    root = artifact_root(prefix, name, version)
    return RunPaths(
        run_root=root,
        checkpoint_root=join(root, "checkpoints"),
        export_root=join(root, "export"),
        attempts_root=join(root, "attempts"),
        terminal_manifest=join(root, "terminal.json"),
        ledger_record=join(prefix, "_ledger", name, f"{version}.json"),
    )
