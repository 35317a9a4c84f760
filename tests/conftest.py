"""Fixtures shared by every test layer: real object-store servers on 127.0.0.1 (tests/objectstores).

`s3_server` / `gcs_server` start one server per test session (on first use) and stop it, by its
process group, at the end. `s3_store` / `gcs_store` give a test a fresh bucket's prefix with this
process pointed at the server (environment and fsspec config), restored afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis.configuration import set_hypothesis_home_dir

from objectstores import ObjectStoreServer, running

# Hypothesis keeps its example database and caches in ./.hypothesis unless told otherwise; the
# checkout holds no cache (scripts/test names a folder under the user's cache).
set_hypothesis_home_dir(Path(os.environ.get(
    "RLAUNCH_TEST_CACHE", Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    / "rlaunch" / "test")) / "hypothesis")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStoreServer]:
    with running("s3", tmp_path_factory.mktemp("s3-server")) as server:
        yield server


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStoreServer]:
    with running("gs", tmp_path_factory.mktemp("gcs-server")) as server:
        yield server


@pytest.fixture
def s3_store(s3_server: ObjectStoreServer) -> Iterator[str]:
    """`s3://<fresh bucket>/store`, reachable from this process for the test's duration."""
    prefix = s3_server.prefix()
    with s3_server.applied():
        yield prefix


@pytest.fixture
def gcs_store(gcs_server: ObjectStoreServer) -> Iterator[str]:
    """`gs://<fresh bucket>/store`, reachable from this process for the test's duration."""
    prefix = gcs_server.prefix()
    with gcs_server.applied():
        yield prefix


@pytest.fixture(params=["s3", "gs"])
def object_store(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each object store in turn: a fresh bucket's prefix, this process pointed at its server."""
    server: ObjectStoreServer = request.getfixturevalue(
        "s3_server" if request.param == "s3" else "gcs_server"
    )
    prefix = server.prefix()
    with server.applied():
        yield prefix
