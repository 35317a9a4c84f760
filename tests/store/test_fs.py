"""Store prefixes: local directories and fsspec URLs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rlaunch.store import StoreError
from rlaunch.store.fs import open_location


def test_local_paths_and_file_urls_become_absolute_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert open_location("rel/store").root == str(tmp_path / "rel" / "store")
    location = open_location(f"file://{tmp_path}/s")
    assert (location.root, location.is_local) == (str(tmp_path / "s"), True)


@pytest.mark.skipif(importlib.util.find_spec("gcsfs") is not None, reason="gcsfs is installed")
def test_gs_without_gcsfs_names_the_package_to_install() -> None:
    with pytest.raises(StoreError) as raised:
        open_location("gs://bucket/rlaunch")
    assert str(raised.value).startswith(
        "store prefix 'gs://bucket/rlaunch' needs the `gcsfs` package, which is not installed "
        "in this runtime; install it (pip install gcsfs)"
    )


@pytest.mark.skipif(importlib.util.find_spec("s3fs") is not None, reason="s3fs is installed")
def test_s3_without_s3fs_names_the_package_to_install() -> None:
    with pytest.raises(StoreError, match=r"needs the `s3fs` package"):
        open_location("s3://bucket/rlaunch")


def test_an_empty_prefix_is_refused() -> None:
    with pytest.raises(StoreError, match="the store prefix is empty"):
        open_location("")
