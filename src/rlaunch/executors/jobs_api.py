"""The Ray Jobs API, as both Ray executors use it: probe, check resources, submit, follow, stop.

Only the dashboard's HTTP API is used (no `ray.init` from the launcher): the launcher may run
a different Python than the cluster, and a Jobs API address is all a user is given. Ray's own
client has no request timeout, so every first contact goes through `probe` with one.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import queue
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from http.client import HTTPException
from typing import Any

from rlaunch.executors.base import ExecutorError
from rlaunch.interrupts import interrupts_deferred
from rlaunch.spec.execution import Allocation
from rlaunch.status import AttemptStatus

GPU_RESOURCE = "GPU"
"""The Ray resource a plan's GPUs are counted in (simulated GPUs on the local head too)."""

_AGENT_RETRY_S = 90.0
"""How long a submission waits for a just-started head's job agent. The agent registers after
the head answers; on a loaded 2-core machine that was seen to take over 30 s."""
_IDLE_POLL_S = 0.5
_LOG_POLL_S = 2.0
"""How often a job whose log stream ended before the job did has its full log read."""


def _auth_headers() -> dict[str, str]:
    """The token header Ray's own client would send (only when RAY_AUTH_MODE=token here)."""
    try:  # lazy: Ray is slow to import, and this private module is not in every Ray release
        from ray._private.authentication.http_token_authentication import (
            get_auth_headers_if_auth_enabled,
        )
    except ImportError:
        return {}
    return dict(get_auth_headers_if_auth_enabled({}))


def _get_json(url: str, timeout_s: float) -> Any:
    request = urllib.request.Request(url, headers=_auth_headers())
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        return json.loads(response.read().decode())


def _auth_hint(address: str, err: urllib.error.HTTPError) -> str | None:
    if err.code not in (401, 403):
        return None
    return (
        f"the Ray cluster at {address} refused rlaunch's request (HTTP {err.code}, "
        f"{'no token' if err.code == 401 else 'wrong token'}): it uses token authentication; "
        f"set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH) in the launching "
        f"environment (`ray get-auth-token` on the cluster prints it)"
    )


def how_to_check(address: str) -> str:
    return (
        f"check that the cluster is up and its dashboard answers: `curl {address}/api/version` "
        f"must print the Ray version (for a remote cluster, forward the dashboard port, e.g. "
        f"`ssh -L 8265:127.0.0.1:8265 <head>`, and use http://127.0.0.1:8265)"
    )


def probe(address: str, timeout_s: float) -> dict[str, Any]:
    """The Jobs API's `/api/version` answer, or an error naming the address and the timeout."""
    if not address.startswith(("http://", "https://")):
        raise ExecutorError(
            f"execution.address {address!r} is not a Ray Jobs API URL; use the dashboard "
            f"address, e.g. http://127.0.0.1:8265"
        )
    try:
        answer = _get_json(f"{address.rstrip('/')}/api/version", timeout_s)
    except urllib.error.HTTPError as err:
        hint = _auth_hint(address, err)
        raise ExecutorError(
            hint or f"{address}/api/version answered HTTP {err.code}; " + how_to_check(address)
        ) from None
    except (urllib.error.URLError, TimeoutError, OSError, ValueError, HTTPException) as err:
        reason = getattr(err, "reason", err)
        raise ExecutorError(
            f"the Ray Jobs API at {address} did not answer within {timeout_s:g} s ({reason}); "
            + how_to_check(address)
        ) from None
    if not isinstance(answer, dict) or "ray_version" not in answer:
        raise ExecutorError(
            f"{address} answered /api/version without a ray_version: it is not a Ray dashboard; "
            + how_to_check(address)
        )
    return answer


def alive_nodes(address: str, timeout_s: float) -> list[dict[str, Any]]:
    """Alive nodes with their total resources, from the dashboard's state API."""
    url = f"{address.rstrip('/')}/api/v0/nodes?limit=10000"
    try:
        answer = _get_json(url, timeout_s)
        nodes = answer["data"]["result"]["result"]
    except (urllib.error.URLError, TimeoutError, OSError, ValueError, HTTPException) as err:
        raise ExecutorError(
            f"cannot list the nodes of the Ray cluster at {address} ({err}); "
            + how_to_check(address)
        ) from None
    except (KeyError, TypeError):
        raise ExecutorError(
            f"the Ray cluster at {address} answered {url} in an unknown format; is it Ray >= 2.0?"
        ) from None
    return [node for node in nodes if node.get("state") == "ALIVE"]


def check_resources(
    address: str, nodes: list[dict[str, Any]], allocation: Allocation
) -> None:
    """Refuse a plan the cluster cannot hold: too few nodes with `gpus_per_node` GPUs each."""
    want_nodes = allocation.num_nodes
    want_gpus = allocation.gpus_per_node
    fitting = [n for n in nodes if n.get("resources_total", {}).get(GPU_RESOURCE, 0) >= want_gpus]
    if len(fitting) >= want_nodes:
        return
    total = sum(n.get("resources_total", {}).get(GPU_RESOURCE, 0) for n in nodes)
    per_node = sorted(
        (int(n.get("resources_total", {}).get(GPU_RESOURCE, 0)) for n in nodes), reverse=True
    )
    raise ExecutorError(
        f"the Ray cluster at {address} cannot hold execution.allocation: the plan needs "
        f"{want_nodes} node(s) x {want_gpus} {GPU_RESOURCE} = {want_nodes * want_gpus}, the "
        f"cluster has {len(nodes)} alive node(s) with {GPU_RESOURCE} per node {per_node} "
        f"(total {total:g}), of which {len(fitting)} have {want_gpus} or more. Use a cluster "
        f"that has them (check with `ray status` on its head) or change execution.allocation "
        f"and the role plan together"
    )


def put_package(address: str, uri: str, data: bytes, timeout_s: float) -> None:
    """Store `data` in the cluster's GCS under the package URI `uri` (`gcs://NAME`) through
    the Jobs API's package endpoint, as Ray's client uploads a working_dir: first a GET, which
    gives the URI a temporary reference (so Ray drops the entry when that expires unless a job
    holds it), then the PUT. Errors name the address, never the data."""
    url = f"{address.rstrip('/')}/api/packages/gcs/{uri.removeprefix('gcs://')}"
    try:
        try:
            urllib.request.urlopen(  # noqa: S310
                urllib.request.Request(url, headers=_auth_headers()), timeout=timeout_s
            ).close()
        except urllib.error.HTTPError as err:
            if err.code != 404:  # 404: not there yet, the reference is taken all the same
                raise
        request = urllib.request.Request(url, data=data, method="PUT", headers=_auth_headers())
        urllib.request.urlopen(request, timeout=timeout_s).close()  # noqa: S310
    except urllib.error.HTTPError as err:
        raise ExecutorError(
            _auth_hint(address, err)
            or f"the Ray Jobs API at {address} refused to store {uri} (HTTP {err.code}); "
            + how_to_check(address)
        ) from None
    except (urllib.error.URLError, TimeoutError, OSError, HTTPException) as err:
        raise ExecutorError(
            f"cannot store {uri} through the Ray Jobs API at {address} "
            f"({getattr(err, 'reason', err)}); " + how_to_check(address)
        ) from None


@functools.lru_cache(maxsize=8)
def _client(address: str) -> Any:
    from ray.job_submission import JobSubmissionClient  # Ray is slow to import: only when used

    # Ray's client logs every closed log stream at INFO on stderr: noise in a launch's output.
    logging.getLogger("ray.dashboard.modules.job.sdk").setLevel(logging.WARNING)

    try:
        return JobSubmissionClient(address)
    except (ConnectionError, RuntimeError) as err:
        raise ExecutorError(f"cannot use the Ray Jobs API at {address}: {err}") from None


def submit(
    address: str,
    *,
    entrypoint: str,
    submission_id: str,
    env_vars: Mapping[str, str],
    working_dir: str | None = None,
    py_modules: list[str] | None = None,
    metadata: Mapping[str, str] | None = None,
) -> str:
    """Submit; retries while a just-started head has no job agent yet. `py_modules`: local
    package folders Ray uploads with the job and puts on the path of its entrypoint and tasks."""
    client = _client(address)
    runtime_env: dict[str, Any] = {"env_vars": dict(env_vars)}
    if working_dir is not None:
        runtime_env["working_dir"] = working_dir
    if py_modules:
        runtime_env["py_modules"] = list(py_modules)
    deadline = time.monotonic() + _AGENT_RETRY_S
    while True:
        try:
            # A first Ctrl-C waits for Ray's answer: a job it made is then recorded and
            # stopped, never left running unseen (rlaunch.interrupts).
            with interrupts_deferred():
                return client.submit_job(
                    entrypoint=entrypoint,
                    submission_id=submission_id,
                    runtime_env=runtime_env,
                    metadata=dict(metadata or {}),
                )
        except (RuntimeError, OSError) as err:
            # The message can echo the request; never let it carry the runtime env out.
            text = str(err)
            if "agent" in text.lower() and time.monotonic() < deadline:
                time.sleep(1.0)
                continue
            first_line = text.splitlines()[0][:300] if text else type(err).__name__
            for value in env_vars.values():
                if value:
                    first_line = first_line.replace(value, "***")
            waited = ""
            if "agent" in text.lower():
                waited = f" (after {_AGENT_RETRY_S:.0f} s waiting for the head's job agent)"
            raise ExecutorError(
                f"the Ray Jobs API at {address} refused job {submission_id}: {first_line}{waited}"
            ) from None


def status(address: str, submission_id: str) -> AttemptStatus:
    try:
        value = _client(address).get_job_status(submission_id)
    except (RuntimeError, OSError) as err:
        raise ExecutorError(
            f"cannot read the status of job {submission_id} at {address}: {err}"
        ) from None
    return AttemptStatus.of_job(str(value))


def logs(address: str, submission_id: str, follow: bool) -> Iterator[str]:
    """The job's output; with `follow`, chunks as they come until the job is terminal."""
    client = _client(address)
    if not follow:
        try:
            yield client.get_job_logs(submission_id)
        except (RuntimeError, OSError) as err:
            raise ExecutorError(f"cannot read the logs of job {submission_id}: {err}") from None
        return
    yield from _follow(client, address, submission_id)


_END = object()


def _follow(client: Any, address: str, submission_id: str) -> Iterator[str]:
    """Ray's log stream, read on a thread of its own. The stream's end does not prove the
    output complete: Ray closes it some seconds after the job ends, but also at once when the
    head loses its socket to the node's agent, or when the job's supervisor had not started
    yet. So while no output comes the job's status is polled, and once it is terminal the
    rest of the output is taken from the full log; after a stream that ended early, the full
    log is read every `_LOG_POLL_S` until the job ends."""
    chunks: queue.Queue[Any] = queue.Queue()

    def pump() -> None:
        async def tail() -> None:
            async for chunk in client.tail_job_logs(submission_id):
                chunks.put(chunk)

        try:
            asyncio.run(tail())
            chunks.put(_END)
        except BaseException as err:  # noqa: BLE001 - handed to the reading thread
            chunks.put(err)

    threading.Thread(target=pump, name=f"rlaunch-logs-{submission_id}", daemon=True).start()
    emitted = 0
    streaming = True
    while True:
        item = None
        if streaming:
            try:
                item = chunks.get(timeout=_IDLE_POLL_S)
            except queue.Empty:
                pass
        else:
            time.sleep(_LOG_POLL_S)
        if isinstance(item, BaseException):
            raise ExecutorError(
                f"lost the log stream of job {submission_id} at {address}: {item}"
            ) from None
        if isinstance(item, str):
            emitted += len(item)
            yield item
            continue
        if item is _END:
            streaming = False
        terminal = status(address, submission_id).is_terminal()
        if streaming and not terminal:
            continue
        # Terminal, or a stream that ended early: the full log has the rest, so far.
        try:
            rest = client.get_job_logs(submission_id)[emitted:]
        except (RuntimeError, OSError) as err:
            raise ExecutorError(f"cannot read the logs of job {submission_id}: {err}") from None
        if rest:
            emitted += len(rest)
            yield rest
        if terminal:
            return


def stop(address: str, submission_id: str) -> None:
    try:
        _client(address).stop_job(submission_id)
    except (RuntimeError, OSError) as err:
        raise ExecutorError(f"cannot stop job {submission_id} at {address}: {err}") from None


def wait_terminal(address: str, submission_id: str, timeout_s: float) -> AttemptStatus:
    """Poll until the job is terminal or the timeout passes (returns the last status)."""
    deadline = time.monotonic() + timeout_s
    current = status(address, submission_id)
    while not current.is_terminal() and time.monotonic() < deadline:
        time.sleep(0.5)
        current = status(address, submission_id)
    return current
