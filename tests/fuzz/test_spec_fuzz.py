"""Mutated spec files through every command that reads one: a clear message, never a traceback.

`preflight`, `render` and `status` get the same damaged spec file; `build --list` gets a damaged
artifact file (the countdown model, a built artifact with built dependencies) and the damaged
spec file. Each command must end with exit 0, 1 or 2, name the file when it does not succeed,
and never raise (CliRunner keeps a raised exception in `result.exception`).
"""

from __future__ import annotations

import collections
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from rlaunch.cli import main
from rlaunch.spec.examples import worked_example
from tests.fuzz.mutations import mutated_document
from tests.runtimes.smoke.demo import smoke_spec

SPEC = worked_example("colocated-1x8")
# The countdown model: a built artifact with built dependencies, the richest artifact document.
ARTIFACT = smoke_spec()["model"]
TRIED: collections.Counter = collections.Counter()
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


def _commands(spec: Path, tmp: Path) -> dict[str, list[str]]:
    return {
        "preflight": ["preflight", str(spec)],
        "render": ["render", str(spec), "-o", str(tmp / "launch.yaml")],
        "build --list": ["build", "--list", str(spec)],
        "status": ["status", str(spec), "--store", str(tmp / "store")],
    }


def _write(tmp: Path, stem: str, data: bytes) -> Path:
    path = tmp / (stem + (".json" if data[:1] == b"{" else ".yaml"))
    path.write_bytes(data)
    return path


def assert_clear_outcome(command: str, args: list[str], path: Path, category: str) -> None:
    result = CliRunner().invoke(main, args, catch_exceptions=True)
    where = f"{command} on a {category!r} case"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"{where}: traceback {type(result.exception).__name__}: {str(result.exception)[:200]}"
    )
    assert result.exit_code in (0, 1, 2), f"{where}: exit {result.exit_code}"
    if result.exit_code != 0:
        assert str(path) in result.stderr + result.stdout, (
            f"{where}: the message does not name {path}:\n{result.stderr}{result.stdout}"
        )


@FUZZ
@given(case=mutated_document(SPEC), artifact_case=mutated_document(ARTIFACT))
def test_every_command_survives_a_mutated_spec(case, artifact_case, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    category, data = case
    spec = _write(tmp, "run", data)
    TRIED[f"spec: {category}"] += 1
    for command, args in _commands(spec, tmp).items():
        assert_clear_outcome(command, args, spec, category)
    category, data = artifact_case
    artifact = _write(tmp, "artifact", data)
    TRIED[f"artifact: {category}"] += 1
    assert_clear_outcome("build --list", ["build", "--list", str(artifact)], artifact, category)


def teardown_module() -> None:
    # The count per category, for the record (pytest -s shows it).
    print("\ncases tried:", dict(sorted(TRIED.items())), "total", sum(TRIED.values()))
