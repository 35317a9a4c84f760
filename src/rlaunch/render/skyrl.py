"""The `skyrl` subtree: a RunSpec in SkyRL 0.3.0's own config field names.

Field names are exactly those of SkyRL 0.3.0's `SkyRLTrainConfig` (shared reference
`skyrl-0.3.0-config-fields.txt`); tests/contract proves that SkyRL's own loader and
`validate_cfg` accept what this writes. Only fields the RunSpec decides are written (the rows of
the mapping table, `rlaunch.spec.skyrl_mapping`, and the run's extra `settings` at their dotted
names): everything else keeps SkyRL's default, so the subtree says exactly what the spec says.

A role the plan leaves out mirrors the policy's footprint (nodes, GPUs per node), which keeps
SkyRL's arithmetic on integers it never acts upon (no reference when neither KL flag is set; no
critic while `critic.model.path` is null). A role the plan has writes its own footprint, colocated
or not: SkyRL sizes its workers from it (preflight GEO014 proves a colocated one matches the
policy as SkyRL requires). The reference also writes its own parallel sizes into `trainer.ref`;
only an absent reference mirrors the policy's.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from rlaunch.spec import RunSpec
from rlaunch.spec.skyrl_mapping import SKYRL_RELEASE, RenderInputs, data_slots, rows
from rlaunch.tasks.prompts import data_file


def _data_path(entry: dict[str, Any], slot: str) -> str:
    """The prompt file of a dataset input, for SkyRL's PromptDataset (which reads a path ending
    .parquet/.json/.jsonl and takes anything else for a Hub dataset name); the artifact's folder
    when its builder writes no runtime-format file."""
    name = data_file(entry["source"].get("builder"), slot)
    return entry["uri"] if name is None else f"{entry['uri']}/{name}"


def _place(subtree: dict[str, Any], name: str, value: Any) -> None:
    """Put `value` at a dotted name, making its sections as they are first needed (so the
    subtree's order is the order names are placed in)."""
    *sections, leaf = name.split(".")
    node = subtree
    for section in sections:
        node = node.setdefault(section, {})
    node[leaf] = value


def skyrl_subtree(
    spec: RunSpec, *, inputs: dict[str, Any], artifacts: dict[str, Any],
    release: str = SKYRL_RELEASE,
) -> dict[str, Any]:
    """The SkyRL config subtree: every row of the mapping table (rlaunch.spec.skyrl_mapping)
    that has a value, in the table's order; `inputs` and `artifacts` are the document's own
    sections, so every path in it is the one written there. The run's `settings` come last,
    each at its dotted name: the RunSpec proved each is a field of the pinned release that the
    plan does not decide, so none replaces a rendered value; then `environment_data_setting`,
    given the URI of `environment_data`."""
    data_paths = {slot: _data_path(inputs[slot], slot) for slot in data_slots(release)
                  if slot in inputs}
    source = RenderInputs(spec=spec, inputs=inputs, artifacts=artifacts, data_paths=data_paths)
    subtree: dict[str, Any] = {}
    for row in rows(release):
        if row.value is not None:
            _place(subtree, row.skyrl, row.value(source))
    for name, value in spec.settings.items():
        _place(subtree, name, copy.deepcopy(value))
    # The environment's data: its store URI here, the staged folder on the nodes (the runtime
    # adapter stages every input and rewrites its URI to the folder, rlaunch.runtimes.staging).
    if spec.environment_data_setting is not None and "environment_data" in inputs:
        _place(subtree, spec.environment_data_setting, inputs["environment_data"]["uri"])
    return subtree


def _override_value(value: Any) -> str:
    # SkyRL's CLI parser (OmegaConf.from_cli) reads each value as YAML. JSON strings are YAML
    # double-quoted scalars, so a path with `:` or `,` stays one string; floats go through
    # PyYAML so that `1e-06` comes out as `1.0e-06`, which YAML 1.1 reads as a float.
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return yaml.safe_dump(value).splitlines()[0]
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ",".join(_override_value(item) for item in value) + "]"
    raise TypeError(f"no SkyRL command-line form for {type(value).__name__}: {value!r}")


def skyrl_cli_args(subtree: dict[str, Any], prefix: str = "") -> list[str]:
    """`key.path=value` arguments for SkyRL's entrypoint (`SkyRLTrainConfig.from_cli_overrides`,
    which `skyrl.train.entrypoints.main_base` calls on `sys.argv[1:]`), one per leaf, in the
    subtree's order. The skyrl runtime passes these; they carry the subtree, nothing more."""
    args: list[str] = []
    for key, value in subtree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            args.extend(skyrl_cli_args(value, f"{path}."))
        else:
            args.append(f"{path}={_override_value(value)}")
    return args
