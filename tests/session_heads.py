"""Session resources that stop once their last user has ended: local Ray heads shared by test
modules (an idle head keeps about 7% of a core busy: its GCS, raylet, dashboard and agents), and
any other resource a fixture registers (stop_after_last_use). tests/conftest.py's
pytest_runtest_teardown calls each registered stop after the last test of the session whose
fixtures include the resource's fixture."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from executors.support import HeadWatch
from rlaunch.executors.local_head import ensure_head
from rlaunch.spec.execution import Allocation

_STOPS = pytest.StashKey[dict[str, Callable[[], None]]]()


def stop_after_last_use(request: pytest.FixtureRequest, name: str, stop: Callable[[], None]
                        ) -> None:
    """Call `stop` once the last test of the session that uses fixture `name` has ended."""
    request.session.stash.setdefault(_STOPS, {})[name] = stop


def stop_unused(item: pytest.Item) -> None:
    """After `item`: stop each registered resource that no later test of the session uses."""
    stops = item.session.stash.get(_STOPS, {})
    used = [name for name in stops if name in getattr(item, "fixturenames", ())]
    if not used:
        return
    items = item.session.items
    later = items[items.index(item) + 1:]
    for name in used:
        if not any(name in getattr(other, "fixturenames", ()) for other in later):
            stops[name]()


@contextmanager
def session_head(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                 name: str, allocation: Allocation, python: str = sys.executable,
                 env: Callable[[Path], Mapping[str, str]] | None = None
                 ) -> Iterator[HeadWatch]:
    """One local Ray head for the session (its HeadWatch; the head's state dir is its
    `state_dir`), started as a launch starts it (by `python`'s Ray, with `env(state_dir)` set
    meanwhile: its jobs inherit the head's environment) and owned by this process: each launch
    reuses it instead of starting and stopping one of its own. It is stopped once the last test
    of the session that uses fixture `name` has ended, or at the end; none of its processes may
    be left."""
    heads = HeadWatch(tmp_path_factory.mktemp(name.replace("_", "-")) / "heads")
    stopped: list[bool] = []

    def stop() -> None:
        if not stopped:
            stopped.append(True)
            heads.finish()

    stop_after_last_use(request, name, stop)
    try:
        with pytest.MonkeyPatch.context() as patch:
            for variable, value in (env(heads.state_dir) if env else {}).items():
                patch.setenv(variable, value)
            ensure_head(allocation, heads.state_dir, lambda message: None, python=python)
        heads.snapshot()
        yield heads
    finally:
        stop()
