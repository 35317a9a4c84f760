"""Launch documents for executor tests: the echo spec rendered exactly as `launch` renders it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from executors.support import echo_spec, install_echo_profile
from rlaunch.render import LaunchDocument, loads_launch, render_launch, write_atomically
from rlaunch.spec import parse_spec
from rlaunch.spec.execution import Allocation


def rendered(tmp: Path, **spec_options: Any) -> tuple[Path, LaunchDocument]:
    """Write the echo spec's launch YAML under `tmp`; returns its path and document."""
    install_echo_profile()
    store = tmp / "store"
    spec = parse_spec(echo_spec(store, **spec_options))
    text = render_launch(spec, store_prefix=str(store), launcher_commit=None)
    path = write_atomically(tmp / "dist" / spec.name / "launch.yaml", text)
    return path, loads_launch(text, str(path))


def edited(launch: LaunchDocument, **allocation: int) -> LaunchDocument:
    """The same document with `execution.allocation` fields changed (checked again)."""
    data = launch.to_dict()
    data["execution"]["allocation"].update(allocation)
    return LaunchDocument.parse(data, launch.source)


def allocation(num_nodes: int = 1, gpus_per_node: int = 1, cpus_per_node: int = 2
               ) -> Allocation:
    return Allocation(num_nodes=num_nodes, gpus_per_node=gpus_per_node, accelerator="sim",
                             cpus_per_node=cpus_per_node, memory_gb_per_node=1,
                             disk_gb_per_node=1)


def release(store: Path, name: str, version: str = "dev") -> None:
    """Let a waiting echo job (`*wait*` run name) finish."""
    path = store / name / version / "release"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
