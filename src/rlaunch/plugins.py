"""Plugin discovery: executors (`rlaunch.executors`) and builders (`rlaunch.builders`).

Third-party plugins register Python entry points in those groups. rlaunch's own plugins are
declared the same way in pyproject.toml, and also listed here, because the project runs from
its source tree (PYTHONPATH=src) where no installed metadata exists. An entry point of the same
name overrides a built-in.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

EXECUTOR_GROUP = "rlaunch.executors"
BUILDER_GROUP = "rlaunch.builders"

BUILTIN: dict[str, dict[str, str]] = {
    "rlaunch.executors": {
        "local": "rlaunch.executors.local:LocalExecutor",
        "ray": "rlaunch.executors.ray_cluster:RayClusterExecutor",
        "iris": "rlaunch.executors.iris:IrisExecutor",
        "dry-run": "rlaunch.executors.dry_run:DryRunExecutor",
    },
    "rlaunch.builders": {
        "hf_snapshot": "rlaunch.builders.hf_snapshot:HFSnapshotBuilder",
        "adopt": "rlaunch.builders.adopt:AdoptBuilder",
        "countdown_data": "rlaunch.builders.countdown:CountdownDataBuilder",
        "char_tokenizer": "rlaunch.builders.countdown:CharTokenizerBuilder",
        "sft_model": "rlaunch.builders.countdown_sft:SFTModelBuilder",
        "greedy_eval": "rlaunch.builders.countdown_eval:GreedyEvalBuilder",
        "prompt_parquet": "rlaunch.builders.prompts:PromptParquetBuilder",
    },
}


class PluginError(LookupError):
    pass


def registered(group: str) -> dict[str, str]:
    """Name -> `module:attribute` for every plugin of a group."""
    found = dict(BUILTIN.get(group, {}))
    for entry in entry_points(group=group):
        found[entry.name] = entry.value
    return found


@lru_cache(maxsize=None)
def registered_names(group: str) -> tuple[str, ...]:
    """The sorted plugin names of a group, looked up once per process (entry-point discovery
    scans installed metadata)."""
    return tuple(sorted(registered(group)))


def load(group: str, name: str) -> Any:
    """Import and return the plugin object; a clear error lists the registered names."""
    table = registered(group)
    target = table.get(name)
    if target is None:
        known = ", ".join(sorted(table)) or "none"
        raise PluginError(f"no plugin {name!r} in group {group!r}; registered: {known}")
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attribute)
