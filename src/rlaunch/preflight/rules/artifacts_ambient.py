"""No ambient paths: nothing in a spec may depend on the launching machine's file system."""

from __future__ import annotations

from collections.abc import Iterator
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule

# Checked by their own rules: the store prefix is where the store is (PATH003), the resume path
# must lie in it (ALGO006), and the executor address is a network URL. The Iris cluster may be
# a cluster config file: the launcher reads it to reach the controller, as `iris --config` does;
# nothing of the run is read from it (EXEC002, and the executor when it connects).
# Two SkyRL settings are scratch directories on the worker nodes, which SkyRL requires to be
# local: the profiler's trace directory (`TorchProfilerConfig.validate` refuses a cloud URI) and
# the LoRA adapter hand-off directory. They are written by the job, never read from the launching
# machine.
EXEMPT = frozenset({
    "execution.store_prefix", "resume.path", "execution.address", "execution.cluster",
    "settings.trainer.policy.torch_profiler_config.save_path",
    "settings.trainer.policy.model.lora.lora_sync_path",
})


def _may_hold_text(annotation: Any, visiting: frozenset[type]) -> bool:
    """Whether a field of this type can hold a free-form string (Literals cannot)."""
    if annotation is str:
        return True
    if annotation in (int, float, bool, type(None)):
        return False
    origin = get_origin(annotation)
    if origin is Literal:
        return False
    if origin is Annotated:
        return _may_hold_text(get_args(annotation)[0], visiting)
    if origin in (Union, UnionType):
        return any(_may_hold_text(arg, visiting) for arg in get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        # A model that refers to itself (built artifacts' deps) may hold text through itself.
        return annotation in visiting or bool(_text_fields(annotation, visiting))
    return True  # dicts, lists, Any: look inside


def _text_fields(cls: type[BaseModel], visiting: frozenset[type] = frozenset()) -> tuple[str, ...]:
    known = _TEXT_FIELDS.get(cls)
    if known is None:
        inner = visiting | {cls}
        known = tuple(
            name for name, info in cls.model_fields.items()
            if _may_hold_text(info.annotation, inner)
        )
        if not visiting:
            _TEXT_FIELDS[cls] = known
    return known


# Per model class, the fields that may hold text: computed once, so the scan below visits only
# those (it runs on every spec, and most of a spec is numbers).
_TEXT_FIELDS: dict[type[BaseModel], tuple[str, ...]] = {}


SUSPECT_PREFIXES = ("/", "~", "file://")


def _scan(value: Any, path: str, hits: list[tuple[str, str]]) -> None:
    """Append `(path, string)` for every string in `value` that may be an ambient path."""
    if isinstance(value, str):
        if value.startswith(SUSPECT_PREFIXES) or "$" in value:
            hits.append((path, value))
    elif isinstance(value, BaseModel):
        for name in _text_fields(type(value)):
            child = getattr(value, name)
            if child is None:
                continue
            if isinstance(child, str):
                if child.startswith(SUSPECT_PREFIXES) or "$" in child:
                    hits.append((f"{path}.{name}" if path else name, child))
            elif isinstance(child, (BaseModel, dict, list, tuple)) and child:
                _scan(child, f"{path}.{name}" if path else name, hits)
    elif isinstance(value, dict):
        for key, child in value.items():
            _scan(child, f"{path}.{key}", hits)
    elif isinstance(value, (list, tuple)):
        for index, child in enumerate(value):
            _scan(child, f"{path}.{index}", hits)


def _local_store(prefix: str | None) -> str | None:
    if prefix is None:
        return None
    if prefix.startswith("file://"):
        prefix = prefix[len("file://"):]
    return prefix.rstrip("/") + "/" if prefix.startswith("/") else None


def ambient_reason(value: str, local_store: str | None, prefix: str | None) -> str | None:
    """Why a string is an ambient path, or None when it is not one."""
    if "$" in value:
        return "it expands an environment variable"
    if value.startswith("~"):
        return "it is relative to a home directory"
    local = value[len("file://"):] if value.startswith("file://") else value
    if not local.startswith("/"):
        return None
    if local_store is not None and local.startswith(local_store):
        return None
    if local.startswith("/home/"):
        return "it is in a home directory"
    if prefix is None:
        return "it is a local path, and execution.store_prefix is null"
    return f"it is a local path outside the store {prefix}"


@rule(
    "ART007",
    "No ambient paths anywhere in the spec (/home/..., ~, $VAR, local paths outside the store).",
    example=Example(edits={"model.repo_id": "/home/me/models/qwen2.5-1.5b"}),
    reads_plan=False,
)
def no_ambient_paths(check: Check) -> Iterator[Finding]:
    prefix = check.spec.execution.store_prefix
    local_store = _local_store(prefix)
    found: list[tuple[str, str]] = []
    _scan(check.spec, "", found)
    for path, value in found:
        if path in EXEMPT:
            continue
        reason = ambient_reason(value, local_store, prefix)
        if reason is None:
            continue
        fix = ("Register what it points at as an artifact (adopted by URI and sha256, or"
               " built) and refer to it by identity.")
        if path.startswith("settings."):
            setting = path[len("settings."):]
            fix = ("Register what it points at as an artifact of kind dataset (adopted by URI "
                   "and sha256, or built), put it in environment_data and move the setting to "
                   f"environment_data_setting: {setting!r}; the launcher stages the artifact "
                   "onto every node and sets the setting to its folder.")
        yield error("ART007", (path,), f"{path} {value!r} is an ambient path: {reason}", fix)
