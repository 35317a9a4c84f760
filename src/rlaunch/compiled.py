"""Preflight's hot modules compiled to C by Cython, used when built for exactly these sources.

A search preflights thousands of candidate plans, and preflight is about 120 small rules over
pydantic models: pure Python, spending a third of its instructions in the interpreter's loop.
`scripts/compile` compiles the modules of COMPILED_PACKAGES and COMPILED_MODULES, unchanged, into
`${XDG_CACHE_HOME:-~/.cache}/rlaunch/compiled/<key>/`, where the key is the hash of those
modules' sources and of the interpreter's version and build; `install()` (run when the `rlaunch`
package is imported) puts a finder first on `sys.meta_path` that loads them from there. The same
code runs either way; a source edited since the build changes the key, and the pure modules run
until `scripts/compile` builds the new ones: a compiled module is never older than its source.
RLAUNCH_PURE_PYTHON=1 turns it off.

`main(["sources" | "directory" | "status"])` prints the sources to compile (`<module> <file>` a
line), the directory for them, or what runs (scripts/compile calls it; `python -m` would run a
second copy of this module beside the one the package imported). This module imports only
rlaunch.paths, which imports only the standard library: the package imports this first."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from rlaunch.paths import rlaunch_cache

COMPILED_PACKAGES = ("rlaunch.preflight.engine", "rlaunch.preflight.estimates",
                     "rlaunch.preflight.rules")
"""Packages whose every module but `__init__` is compiled: the rules and what they call."""
COMPILED_MODULES = ("rlaunch.memo", "rlaunch.spec.io")
"""Single modules compiled: the memos the rules keep, and parse_spec."""
PURE_ENV = "RLAUNCH_PURE_PYTHON"
"""Set to 1 to run the pure modules even when compiled ones are built."""
COMPLETE = ".complete"
"""Written last by scripts/compile into a directory whose modules are all built."""
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
"""This interpreter's extension file suffix (`.cpython-311-x86_64-linux-gnu.so`)."""
SOURCE_ROOT = Path(__file__).resolve().parents[1]
"""The directory holding the `rlaunch` package."""


def sources(root: Path = SOURCE_ROOT) -> list[tuple[str, Path]]:
    """`(module, source file)` of every compiled module under `root`, sorted by module."""
    found = [(name, root.joinpath(*name.split(".")).with_suffix(".py"))
             for name in COMPILED_MODULES]
    for package in COMPILED_PACKAGES:
        for path in sorted(root.joinpath(*package.split(".")).glob("*.py")):
            if path.stem != "__init__":
                found.append((f"{package}.{path.stem}", path))
    return sorted(found)


def key(modules: Sequence[tuple[str, Path]]) -> str:
    """The hash of the modules' names and sources and of this interpreter's version and build
    (`sys.version`: another CPython 3.11 build gets extensions compiled against its own
    headers)."""
    digest = hashlib.sha256(f"{sys.version}{SUFFIX}".encode())
    for name, path in modules:
        digest.update(f"\0{name}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def directory(modules: Sequence[tuple[str, Path]]) -> Path:
    """Where scripts/compile puts the compiled `modules` (RL_CACHE_ROOT/compiled/<key>)."""
    return rlaunch_cache() / "compiled" / key(modules)


def built(modules: Sequence[tuple[str, Path]], where: Path) -> dict[str, Path] | None:
    """Module -> extension file, when `where` holds a complete build of every one; else None."""
    if not (where / COMPLETE).is_file():
        return None
    files = {name: where.joinpath(*name.split(".")).with_name(name.rpartition(".")[2] + SUFFIX)
             for name, _ in modules}
    return files if all(path.is_file() for path in files.values()) else None


class CompiledLoader(importlib.machinery.ExtensionFileLoader):
    """Loads a compiled module from its extension file, or, should the file not load (damaged,
    or built against another libc), the module's pure source in its place: the same code, only
    slower. STATUS then names the module, the loader's error and the fix."""

    def __init__(self, name: str, path: str, source: Path, where: Path) -> None:
        super().__init__(name, path)
        self.source = source
        self.where = where
        self.fallback: importlib.machinery.SourceFileLoader | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        try:
            return super().create_module(spec)
        except ImportError as err:
            global STATUS
            self.fallback = importlib.machinery.SourceFileLoader(self.name, str(self.source))
            UNLOADED.append((self.name, str(err)))
            (first, error), more = UNLOADED[0], len(UNLOADED) - 1
            STATUS = (f"mixed ({first}'s compiled module did not load: {error}"
                      + (f" (and {more} more)" if more else "")
                      + f"; its pure source runs: delete {self.where} and run scripts/compile"
                      " to build it again)")
            return None  # the default module, which exec_module fills from the source

    def exec_module(self, module: ModuleType) -> None:
        if self.fallback is None:
            super().exec_module(module)
            return
        module.__loader__ = self.fallback
        module.__file__ = str(self.source)
        module.__spec__.loader = self.fallback
        module.__spec__.origin = str(self.source)
        self.fallback.exec_module(module)


class CompiledFinder:
    """A meta path finder that loads the compiled modules from their extension files."""

    def __init__(self, files: dict[str, Path], modules: Sequence[tuple[str, Path]],
                 where: Path) -> None:
        self.files = files
        self.sources = dict(modules)
        self.where = where

    def find_spec(self, name: str, path: object = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(name)
        if file is None:
            return None
        loader = CompiledLoader(name, str(file), self.sources[name], self.where)
        return importlib.util.spec_from_file_location(name, file, loader=loader)


UNLOADED: list[tuple[str, str]] = []
"""`(module, the loader's error)` of each compiled module whose file did not load, in order."""
STATUS = "pure Python (not installed yet)"
"""What `install()` found: which modules run, and why (the benchmark and `rlaunch plans` say it)."""


def install() -> str:
    """Put the finder of the compiled modules first on sys.meta_path when they are built for
    these sources; return (and keep in STATUS) what runs. Idempotent."""
    global STATUS
    if any(isinstance(finder, CompiledFinder) for finder in sys.meta_path):
        return STATUS
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        STATUS = f"pure Python ({PURE_ENV} is set)"
        return STATUS
    modules = sources()
    try:
        where = directory(modules)
    except OSError as err:  # a source unreadable: the import of it will say so
        STATUS = f"pure Python (the sources could not be read: {err})"
        return STATUS
    files = built(modules, where)
    if files is None:
        STATUS = (f"pure Python (no compiled modules for these sources in {where}: run"
                  " scripts/compile)")
        return STATUS
    sys.meta_path.insert(0, CompiledFinder(files, modules, where))
    STATUS = f"compiled ({len(files)} modules from {where})"
    return STATUS


def advice() -> str:
    """What would make preflight faster, for a line that says what runs: '' when every module
    runs compiled, or the user turned them off."""
    if STATUS.startswith("mixed ("):
        return STATUS.removeprefix("mixed (").removesuffix(")")
    if "scripts/compile" in STATUS:
        return "scripts/compile runs it up to 1.5 times as fast"
    return ""


def running() -> str:
    """What runs preflight's modules, as imported: `compiled`, `pure Python` or `mixed`."""
    loaded = [isinstance(module.__loader__, importlib.machinery.ExtensionFileLoader)
              for name, _ in sources() if (module := sys.modules.get(name)) is not None]
    if not loaded:
        return "not imported"
    if all(loaded):
        return "compiled"
    return "mixed" if any(loaded) else "pure Python"


def main(argv: Sequence[str]) -> int:
    commands = ("sources", "directory", "status")
    if len(argv) != 1 or argv[0] not in commands:
        print(f"usage: main([{' | '.join(map(repr, commands))}])", file=sys.stderr)
        return 2
    modules = sources()
    if argv[0] == "sources":
        for name, path in modules:
            print(name, path)
    elif argv[0] == "directory":
        print(directory(modules))
    else:
        print(STATUS)
    return 0
