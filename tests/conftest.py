"""Fixtures shared by every test layer: real object-store servers on 127.0.0.1 (tests/objectstores),
the echo runtime's session head, and the stop of session resources after their last user.

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

from executors.support import HeadWatch, echo_profiles, echo_spec, job_env
from objectstores import ObjectStoreServer, running
from rlaunch.executors.local_head import STATE_DIR_ENV
from rlaunch.spec import catalog, parse_spec
from session_heads import session_head, stop_unused

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


@pytest.fixture(scope="session")
def echo_head(request: pytest.FixtureRequest,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeadWatch]:
    """The local Ray head of the echo runtime's launches in test_experiment and test_launch
    (one after the other in the session): one head start (10-20 CPU s here) for both. Started
    for the echo spec's allocation with a test launcher's environment (job_env: its jobs import
    rlaunch and the echo runtime), stopped after its last user."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(catalog, "PROFILES", echo_profiles())
        allocation = parse_spec(echo_spec(tmp_path_factory.getbasetemp())).execution.allocation
    with session_head(request, tmp_path_factory, "echo_head", allocation,
                      env=lambda heads: job_env(**{STATE_DIR_ENV: str(heads)})) as watch:
        yield watch


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop each session resource registered with session_heads.stop_after_last_use (a
    session head, a scratch copy's pantsd) after the last test that uses it: an idle head keeps
    about 7% of a core busy, tens of CPU seconds over the modules that run after its last user,
    while the suite is CPU-bound."""
    stop_unused(item)
