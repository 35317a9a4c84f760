"""The library's rooms hold by structure: who may import whom, and no imports inside functions.

LAYERS lists rlaunch's modules and subpackages from the bottom up. A module may import its own
layer and the layers below it, never one above (no arrow back up: the ledger does not reach into
the executors, the runtimes do not reach into preflight, the executors do not reach into the
launch). An import inside a function is how a cycle gets dodged instead of removed, so it is
refused for rlaunch's own modules; a heavy or optional third-party module (HEAVY) may be imported
lazily, with a comment on or just above the import saying why.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "rlaunch"

LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(names.split())
    for names in (
        # shared helpers, no rlaunch imports above
        "__init__ atomic clock compiled fingerprints interrupts memo paths plugins locks progress"
        " status",
        "head_record head_supervisor",  # a local Ray head's record and processes; its watcher
        "spec",  # the RunSpec schema, version syntax, the runtime catalog
        "tasks",
        "store",
        "models",
        "render",  # RunSpec -> launch YAML; the typed launch document
        "runtimes",  # read a launch YAML
        "ledger",
        "view",  # runs as the ledger and their files record them (ls, show, plot)
        # preflight's folders are rooms of their own: the engine knows no rule, the estimates no
        # finding; the package itself imports (so registers) every rule and launch check
        "preflight.engine",  # Check, World, Finding, the registry, the runner, the report
        "preflight.estimates",  # GPU memory and placement models
        "preflight.rules preflight.launch_checks",  # rules by family; checks only a launch makes
        "preflight",  # the package, `rlaunch rules` and `rlaunch preflight`
        "plans",  # the role plans of a GPU budget that preflight accepts (`rlaunch plans`)
        "builders",
        "executors",
        "rehearsal",  # what --rehearse changes about a launch
        "launch",
        "sweep",  # many launches of one declaration
        "pipeline",  # a run and the runs whose exports it reads, launched upstream first
        "experiment launch_commands buildschema cli __main__",  # front ends
    )
)
HEAVY = frozenset({"ray", "torch", "wandb", "huggingface_hub", "matplotlib", "botocore",
                   "s3transfer", "transformers"})
"""Third-party modules a function may import lazily (start-up time, or optional)."""


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        yield ".".join(parts), path


FOLDERED = frozenset({"preflight"})
"""Subpackages whose folders are rooms of their own (`preflight.engine`, `preflight.rules`...)."""


def room(module: str) -> str:
    """`rlaunch.spec.run` -> `spec`; `rlaunch.preflight.rules.batch` -> `preflight.rules`;
    `rlaunch.preflight.commands` -> `preflight`; `rlaunch` -> `__init__`."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in FOLDERED and (PACKAGE / parts[1] / parts[2]).is_dir():
        return f"{parts[1]}.{parts[2]}"
    return parts[1] if len(parts) > 1 else "__init__"


def layer_of(module: str) -> int:
    name = room(module)
    for index, layer in enumerate(LAYERS):
        if name in layer:
            return index
    raise AssertionError(f"{module}: its room {name!r} is in no layer of LAYERS; add it there")


def imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        raise AssertionError(f"line {node.lineno}: relative import; rlaunch imports absolutely")
    return [node.module or ""]


def test_every_room_has_a_layer() -> None:
    rooms = {room(module) for module, _ in modules()}
    placed = set().union(*LAYERS)
    assert rooms - placed == set()


def test_no_module_imports_a_layer_above_its_own() -> None:
    arrows = []
    for module, path in modules():
        mine = layer_of(module)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in imported(node):
                if target.split(".")[0] != "rlaunch" or room(target) == room(module):
                    continue
                if layer_of(target) > mine:
                    arrows.append(f"{module}:{node.lineno} -> {target}")
    assert arrows == []


def function_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    yield inner


def function_import_problems(module: str, text: str) -> list[str]:
    """An import of an rlaunch (or light) module inside a function; a lazy import of a HEAVY
    module without a comment on its line or the line above."""
    problems = []
    lines = text.splitlines()
    nodes = list(function_imports(ast.parse(text)))
    import_lines = {n for node in nodes for n in range(node.lineno, (node.end_lineno or 0) + 1)}
    for node in nodes:
        # The reason sits on the import's line or above the run of imports it belongs to.
        above = node.lineno - 1
        while above in import_lines:
            above -= 1
        explained = "#" in lines[node.lineno - 1] or (above >= 1 and "#" in lines[above - 1])
        for target in imported(node):
            where = f"{module}:{node.lineno} imports {target}"
            if target.split(".")[0] not in HEAVY:
                problems.append(f"{where} inside a function")
            elif not explained:
                problems.append(f"{where} lazily without a comment saying why")
    return problems


def test_no_import_inside_a_function_except_a_heavy_third_party_module_with_its_reason() -> None:
    problems = []
    for module, path in modules():
        problems += function_import_problems(module, path.read_text())
    assert problems == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def f():\n    from rlaunch.launch import launch\n",
         ["m:2 imports rlaunch.launch inside a function"]),
        ("def f():\n    import yaml\n", ["m:2 imports yaml inside a function"]),
        ("def f():\n    import ray\n", ["m:2 imports ray lazily without a comment saying why"]),
        ("def f():\n    # lazy: slow to import\n    import ray\n", []),
        ("def f():\n    import torch  # lazy: slow to import\n", []),
        ("def f():\n    # lazy: slow\n    import ray\n    from ray import (\n        x,\n    )\n",
         []),
        ("def f():\n    # lazy: slow\n    import ray\n\n    import torch\n",
         ["m:5 imports torch lazily without a comment saying why"]),
        ("import ray\n", []),
    ],
)
def test_the_function_import_check_fires(source: str, expected: list[str]) -> None:
    assert function_import_problems("m", source) == expected


def test_the_layer_order_puts_the_named_back_arrows_above() -> None:
    # The arrows the layering exists to forbid point upwards in LAYERS.
    for low, high in (
        ("ledger", "executors"), ("runtimes", "preflight"), ("executors", "launch"),
        ("preflight.engine", "preflight.rules"), ("preflight.estimates", "preflight.rules"),
    ):
        assert layer_of(f"rlaunch.{low}") < layer_of(f"rlaunch.{high}")
