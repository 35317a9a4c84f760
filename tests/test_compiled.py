"""Preflight's modules compiled by Cython (scripts/compile, rlaunch.compiled): they find exactly
what the pure modules find, they run only for the sources they were built from, and a build that
did not finish is never used."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlaunch import compiled
from rlaunch.preflight import all_rules

REPO = Path(__file__).resolve().parents[1]
FINDINGS = REPO / "tests" / "compiled_findings.py"
SHOW = ("import rlaunch.preflight; from rlaunch import compiled;"
        " print(compiled.running()); print(compiled.STATUS)")


@pytest.fixture(scope="module")
def build() -> Path:
    """The compiled modules of this checkout's sources: built by scripts/compile (scripts/test
    builds them before the layers start, so this finds them)."""
    done = subprocess.run([str(REPO / "scripts" / "compile")], capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


def run(*args: str, pythonpath: str, **env: str) -> list[str]:
    environ = {key: value for key, value in os.environ.items() if key != compiled.PURE_ENV}
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600,
                          check=False, env={**environ, "PYTHONPATH": pythonpath,
                                            "PYTHONDONTWRITEBYTECODE": "1", **env})
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


FINDINGS_PATH = f"{REPO / 'src'}:{REPO / 'benchmarks'}"


@pytest.fixture(scope="module")
def fast(build: Path) -> list[str]:
    """tests/compiled_findings.py's lines on 300 random plans, run on the compiled modules (its
    random plans are seeded: a run on fewer prints the first of these)."""
    return run(str(FINDINGS), "300", pythonpath=FINDINGS_PATH)


def test_compiled_modules_find_exactly_what_the_pure_ones_find(fast: list[str]) -> None:
    """Every finding, message and fix included, on every rule's example (each rule's error path,
    at world scope), the worked examples and 300 random plans."""
    pure = run(str(FINDINGS), "300", pythonpath=FINDINGS_PATH, **{compiled.PURE_ENV: "1"})
    assert (fast[0], pure[0]) == ("compiled", "pure Python")
    assert len(fast) == len(pure) == 1 + len(all_rules()) + 6 + 300
    assert fast[1:] == pure[1:]
    assert sum(line != "[]" for line in fast[1:]) > 300  # most specs have findings


def test_an_edited_source_runs_pure_until_it_is_compiled_again(
    build: Path, tmp_path: Path
) -> None:
    shutil.copytree(REPO / "src" / "rlaunch", tmp_path / "rlaunch",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # The very same sources elsewhere: their hash, so the same build.
    assert run("-c", SHOW, pythonpath=str(tmp_path)) == [
        "compiled", f"compiled ({len(compiled.sources())} modules from {build})"]
    rule_module = tmp_path / "rlaunch" / "preflight" / "rules" / "batch.py"
    rule_module.write_text(rule_module.read_text() + "\n# edited\n")
    edited = compiled.directory(compiled.sources(tmp_path))
    assert edited != build
    assert run("-c", SHOW, pythonpath=str(tmp_path)) == [
        "pure Python",
        f"pure Python (no compiled modules for these sources in {edited}: run scripts/compile)"]


def test_rlaunch_pure_python_turns_the_build_off(build: Path) -> None:
    assert run("-c", SHOW, pythonpath=str(REPO / "src"), **{compiled.PURE_ENV: "1"}) == [
        "pure Python", "pure Python (RLAUNCH_PURE_PYTHON is set)"]


def test_a_build_without_its_marker_or_a_module_is_not_used(build: Path, tmp_path: Path) -> None:
    modules = compiled.sources()
    copy = tmp_path / "build"
    shutil.copytree(build, copy)
    assert compiled.built(modules, copy) is not None
    (copy / compiled.COMPLETE).unlink()  # a build that was stopped before its end
    assert compiled.built(modules, copy) is None
    (copy / compiled.COMPLETE).touch()
    next(copy.rglob(f"runner{compiled.SUFFIX}")).unlink()
    assert compiled.built(modules, copy) is None


def test_a_compiled_module_that_does_not_load_runs_its_pure_source(
    build: Path, fast: list[str], tmp_path: Path
) -> None:
    """A damaged extension file (here two, cut short, as a full disk or a bad copy leaves them)
    is no bare ImportError: its module runs from its source, preflight finds what it finds
    compiled, and the status names the first module, the loader's error, how many more, and
    the fix."""
    cache = tmp_path / "cache"
    copy = cache / "rlaunch" / "compiled" / build.name
    shutil.copytree(build, copy)
    damaged, other = (next(copy.rglob(f"{name}{compiled.SUFFIX}")) for name in ("batch", "memory"))
    for file in (damaged, other):
        file.write_bytes(file.read_bytes()[:64])
    with pytest.raises(OSError) as refused:  # what the dynamic loader says of the file
        ctypes.CDLL(str(damaged))
    shown = run("-c", SHOW, pythonpath=FINDINGS_PATH, XDG_CACHE_HOME=str(cache))
    assert shown[0] == "mixed"
    assert shown[1] == (
        f"mixed (rlaunch.preflight.rules.batch's compiled module did not load: {refused.value}"
        f" (and 1 more); its pure source runs: delete {copy} and run scripts/compile to build it"
        " again)")
    mixed = run(str(FINDINGS), "20", pythonpath=FINDINGS_PATH, XDG_CACHE_HOME=str(cache))
    assert (mixed[0], fast[0]) == ("mixed", "compiled")
    assert len(mixed) == 1 + len(all_rules()) + 6 + 20
    assert mixed[1:] == fast[1:len(mixed)]
