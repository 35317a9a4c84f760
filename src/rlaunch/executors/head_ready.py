"""Waiting for a just-started local Ray head to be ready, within one deadline.

`ray start` exiting 0 only says that it spawned the head's processes: on a loaded machine the
raylet, the head node's job agent and the dashboard's Jobs API answer tens of seconds later (and
a submission before that fails). So a head is ready when, in order:

1. `ray start` exited 0;
2. the head node's dashboard agent (which runs the jobs) answers `/api/healthz` on its port with
   its raylet and the GCS healthy;
3. the dashboard's Jobs API answers `/api/version` with the head's session name.

One deadline covers all three: `RLAUNCH_HEAD_START_TIMEOUT` seconds (default 120).
"""

from __future__ import annotations

import http.client
import math
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rlaunch.executors.base import ExecutorError
from rlaunch.executors.jobs_api import probe

START_TIMEOUT_ENV = "RLAUNCH_HEAD_START_TIMEOUT"
DEFAULT_START_TIMEOUT_S = 120.0
_PROGRESS_EVERY_S = 15.0
_POLL_S = 0.3
_REQUEST_TIMEOUT_S = 5.0


def start_timeout_s() -> float:
    """The head start deadline in seconds, from `RLAUNCH_HEAD_START_TIMEOUT` (default 120)."""
    raw = os.environ.get(START_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_START_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ExecutorError(
            f"{START_TIMEOUT_ENV}={raw!r} is not a positive number of seconds; set it to e.g. "
            f"300 (a slow or loaded machine) or unset it (default "
            f"{DEFAULT_START_TIMEOUT_S:g} s)"
        )
    return value


class HeadNotReady(ExecutorError):
    """The head did not become ready; `waited_for` names the step it was stuck at."""

    def __init__(self, message: str, waited_for: str, exit_code: int | None) -> None:
        super().__init__(message)
        self.waited_for = waited_for
        self.exit_code = exit_code


class HeadStartCancelled(HeadNotReady):
    """The launcher stopped waiting (it will not submit): the head is to be stopped, no fault."""


@dataclass(frozen=True)
class HeadEndpoints:
    agent_url: str
    """The head node's dashboard agent (job agent), `http://127.0.0.1:<agent listen port>`."""
    dashboard_url: str


def _agent_healthy(agent_url: str) -> None:
    url = f"{agent_url}/api/healthz"
    try:
        with urllib.request.urlopen(url, timeout=_REQUEST_TIMEOUT_S) as response:  # noqa: S310
            response.read()
    except urllib.error.HTTPError as err:
        body = err.read().decode(errors="replace").strip().replace("\n", ", ")
        raise ExecutorError(f"{url} answered HTTP {err.code} ({body[:200]})") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise ExecutorError(f"{url}: {getattr(err, 'reason', err)}") from None


def wait_ready(
    process: subprocess.Popen[Any],
    endpoints: HeadEndpoints,
    *,
    timeout_s: float,
    head_alive: Callable[[], bool],
    say: Callable[[str], None],
    cancelled: Callable[[], bool] = lambda: False,
) -> dict[str, Any]:
    """The dashboard's `/api/version` answer once the head is ready; raises HeadNotReady
    naming the step it waited for (and the last answer it got) otherwise, HeadStartCancelled
    as soon as `cancelled()` is true."""
    started = time.monotonic()
    deadline = started + timeout_s
    next_progress = started + _PROGRESS_EVERY_S
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("`ray start` to exit", lambda: None),
        (f"the head's job agent to report its raylet and the GCS healthy "
         f"({endpoints.agent_url}/api/healthz)", lambda: _agent_healthy(endpoints.agent_url)),
        (f"the Jobs API to answer ({endpoints.dashboard_url}/api/version)",
         lambda: probe(endpoints.dashboard_url, timeout_s=_REQUEST_TIMEOUT_S)),
    ]
    step = 0
    last_error = ""
    exit_code: int | None = None
    while True:
        waited_for = steps[step][0]
        if cancelled():
            raise HeadStartCancelled(
                f"the launch stopped waiting for the local Ray head (at: {waited_for})",
                waited_for, exit_code,
            )
        now = time.monotonic()
        if now >= deadline:
            detail = f" (last answer: {last_error})" if last_error else ""
            raise HeadNotReady(
                f"the local Ray head was not ready within {timeout_s:g} s "
                f"({START_TIMEOUT_ENV}): still waiting for {waited_for}{detail}",
                waited_for, exit_code,
            )
        if now >= next_progress:
            say(f"rlaunch: still waiting for the local Ray head ({now - started:.0f} s of "
                f"{timeout_s:g} s): {waited_for}")
            next_progress = now + _PROGRESS_EVERY_S
        if step == 0:
            exit_code = process.poll()
            if exit_code is None:
                time.sleep(_POLL_S)
                continue
            if exit_code != 0:
                raise HeadNotReady(
                    f"the local Ray head did not start: `ray start` exited with code "
                    f"{exit_code}", waited_for, exit_code,
                )
            step += 1
            continue
        if not head_alive():
            raise HeadNotReady(
                f"the local Ray head's processes exited while rlaunch waited for {waited_for}",
                waited_for, exit_code,
            )
        try:
            answer = steps[step][1]()
        except ExecutorError as err:
            last_error = str(err).split("; check that", 1)[0]
            time.sleep(_POLL_S)
            continue
        last_error = ""
        if step == len(steps) - 1:
            say(f"rlaunch: the local Ray head is ready after {time.monotonic() - started:.0f} s "
                f"({endpoints.dashboard_url})")
            return dict(answer)
        step += 1
