"""Store prefixes: local directories and fsspec URLs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import fsspec
import pytest
from fsspec.registry import known_implementations

from rlaunch.store import StoreError
from rlaunch.store.fs import open_location


def test_local_paths_and_file_urls_become_absolute_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert open_location("rel/store").root == str(tmp_path / "rel" / "store")
    location = open_location(f"file://{tmp_path}/s")
    assert (location.root, location.is_local) == (str(tmp_path / "s"), True)


SRC = Path(__file__).resolve().parents[2] / "src"
SITE_PACKAGES = Path(fsspec.__file__).resolve().parents[1]
"""The runtime's site-packages (gcsfs and s3fs are in its lock)."""


def runtime_without(package: str, tmp_path: Path) -> Path:
    """A site-packages that is the runtime's own minus `package` (and its dist-info): every
    other entry is a symlink to the real one."""
    view = tmp_path / f"site-packages-without-{package}"
    view.mkdir()
    for entry in SITE_PACKAGES.iterdir():
        if entry.name != package and not entry.name.startswith(f"{package}-"):
            (view / entry.name).symlink_to(entry)
    return view


def open_without(package: str, prefix: str, tmp_path: Path) -> str:
    """What `open_location(prefix)` raises in a Python where `package` is not installed: the
    project's interpreter without its site-packages (-S), given the view above and src/."""
    program = (
        "import sys\n"
        "from rlaunch.store import StoreError\n"
        "from rlaunch.store.fs import open_location\n"
        "try:\n"
        f"    open_location({prefix!r})\n"
        "except StoreError as err:\n"
        "    print(err)\n"
        "else:\n"
        "    sys.exit('no StoreError')\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{runtime_without(package, tmp_path)}"}
    done = subprocess.run(
        [sys.executable, "-S", "-c", program], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    ("prefix", "package", "protocol"),
    [("gs://bucket/rlaunch", "gcsfs", "gs"), ("s3://bucket/rlaunch", "s3fs", "s3")],
)
def test_an_object_store_without_its_fsspec_backend_names_the_package_to_install(
    prefix: str, package: str, protocol: str, tmp_path: Path
) -> None:
    assert importlib.util.find_spec(package) is not None  # here it is installed...
    fsspec_says = known_implementations[protocol]["err"]
    assert open_without(package, prefix, tmp_path) == (  # ...there it is not
        f"store prefix {prefix!r} needs the `{package}` package, which is not installed in this"
        f" runtime; install it (pip install {package}) or use a local directory ({fsspec_says})"
    )


def test_an_empty_prefix_is_refused() -> None:
    with pytest.raises(StoreError, match="the store prefix is empty"):
        open_location("")
