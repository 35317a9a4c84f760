"""The local executor's own Ray head: started on 127.0.0.1, recorded, reused, stopped by us only.

Lifecycle (docs/launching.md, "The local Ray head"):
- `ensure_head` reuses the head recorded in `{state_dir}/head.json` when it is alive (its
  session still has processes and its dashboard answers with the recorded session name) and
  was started for the same allocation and by the same interpreter (whose Ray the job joins);
  otherwise it replaces it (refusing while jobs run on it).
- The head is `ray start --head` in a new session (`start_new_session`), with every server bound
  to 127.0.0.1 on free ports, simulated GPUs (`--num-gpus`) matching the allocation, and its own
  short `--temp-dir` (Ray's unix socket paths must stay under 108 characters).
- `stop_head` stops exactly that session: SIGTERM to its process group, then to any process
  still in the session, SIGKILL after a grace period. Never Ray's own stop command, which
  would stop every Ray on the machine.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path

from rlaunch.clock import utc_now
from rlaunch.executors.base import ExecutorError
from rlaunch.executors.head_ready import (
    START_TIMEOUT_ENV,
    HeadEndpoints,
    HeadNotReady,
    HeadStartCancelled,
    start_timeout_s,
    wait_ready,
)
from rlaunch.executors.jobs_api import probe
from rlaunch.head_record import (
    HeadRecord,
    head_gone,
    is_released,
    owned_pids,
    owner_alive,
    process_start,
    read_record,
    stop_head,
    write_record,
)
from rlaunch.locks import exclusive
from rlaunch.paths import rlaunch_cache
from rlaunch.progress import progress
from rlaunch.spec.execution import Allocation

STATE_DIR_ENV = "RLAUNCH_LOCAL_HEAD_DIR"
FAILED_START_LOGS = "failed-start-logs"
"""Under the state dir: the logs of the last head that did not become ready (its temp dir goes)."""
DASHBOARD_STARTUP_ENV = "RAY_DASHBOARD_STARTUP_TIMEOUT_S"
"""How long `ray start` waits for its dashboard before it exits 1, "Failed to start the
dashboard" (Ray 2.60.0 ray/_private/ray_constants.py: 60 s by default)."""
DASHBOARD_MODULE_ENV = "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT"
"""How long the dashboard waits for each of its module processes before it gives up, "Module
MetricsHead failed to start" (Ray 2.56.0 and 2.60.0 ray/dashboard/consts.py: 30 s by default;
2.56 spawns each module, a few CPU-seconds of imports apiece)."""
FIRST_ATTEMPT_LOGS = "first-attempt"
"""Under FAILED_START_LOGS, when the head's second start failed too: the first start's logs."""
RAY_START_TIMED_OUT = "The current node timed out during startup"
"""What `ray start` prints before it exits 1 when the head's raylet has not registered with the
GCS within a fixed 30 s (Ray 2.60.0, ray/_private/node.py, Node.__init__:
`raylet_start_wait_time_s = 30`; no setting changes it). A loaded machine hits it now and
then, so `start_head` starts the head once more on it, and only on it."""
# A loaded machine answers slowly; a live head taken for dead would be replaced under its jobs.
_LIVENESS_TIMEOUT_S = 10.0
# What the head's processes inherit from the launcher. Jobs inherit the head's environment, so
# a launcher's credentials must not leak into it: they reach a job only via its runtime env.
_INHERITED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
_PORT_FLAGS = (
    "port",
    "dashboard-port",
    "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port",
    "runtime-env-agent-port",
    "ray-client-server-port",
    "metrics-export-port",
    "node-manager-port",
    "object-manager-port",
)
_OBJECT_STORE_BYTES = 512 * 1024 * 1024
# The supervisors this process started (kept so that they are not reaped while they run).
_SUPERVISORS: list[subprocess.Popen] = []


def head_cpus(allocation: Allocation) -> int:
    return allocation.total_cpus


def fits(record: HeadRecord, allocation: Allocation, python: str = sys.executable) -> bool:
    """Whether the head was started for `allocation` by `python` (whose Ray the job joins)."""
    return (
        record.num_nodes == allocation.num_nodes
        and record.gpus_per_node == allocation.gpus_per_node
        and record.num_cpus == head_cpus(allocation)
        and (record.python or sys.executable) == python
    )


def default_state_dir() -> Path:
    configured = os.environ.get(STATE_DIR_ENV)
    if configured:
        return Path(configured).expanduser().resolve()
    return rlaunch_cache() / "local-head"


def _start_supervisor(state_dir: Path, record: HeadRecord) -> None:
    """The head's watcher (rlaunch.head_supervisor), in a session of its own so that
    whatever kills the launcher leaves it running to stop the head."""
    env = {**_head_env(), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    with open(Path(record.temp_dir) / "supervisor.log", "w") as log:
        _SUPERVISORS.append(subprocess.Popen(
            [sys.executable, "-m", "rlaunch.head_supervisor", str(state_dir),
             str(record.session_id)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, cwd=record.temp_dir,
        ))


def is_alive(record: HeadRecord) -> bool:
    if not owned_pids(record):
        return False
    try:
        answer = probe(record.dashboard_url, timeout_s=_LIVENESS_TIMEOUT_S)
    except ExecutorError:
        return False
    return answer.get("session_name") == record.session_name


def running_jobs(record: HeadRecord) -> list[str] | None:
    """Submission ids of the head's PENDING/RUNNING jobs; None when the head did not say."""
    try:
        url = f"{record.dashboard_url}/api/jobs/"
        with urllib.request.urlopen(url, timeout=_LIVENESS_TIMEOUT_S) as response:  # noqa: S310
            jobs = json.loads(response.read().decode())
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException):
        return None
    return [
        str(job.get("submission_id") or job.get("job_id"))
        for job in jobs
        if job.get("status") in ("PENDING", "RUNNING")
    ]


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _short_temp_dir() -> str:
    # Ray appends session_<date>_<time>_<us>_<pid>/sockets/plasma_store (~70 characters).
    base = os.environ.get("TMPDIR", "/tmp")
    if len(base) > 24 or not os.path.isdir(base):
        base = "/tmp"
    return tempfile.mkdtemp(prefix="rlh-", dir=base)


def head_command(
    allocation: Allocation, ports: dict[str, int], temp_dir: str, python: str = sys.executable
) -> list[str]:
    command = [
        python, "-m", "ray.scripts.scripts", "start", "--head",
        "--node-ip-address", "127.0.0.1",
        "--dashboard-host", "127.0.0.1",
        "--include-dashboard", "true",
        "--num-cpus", str(head_cpus(allocation)),
        "--num-gpus", str(allocation.total_gpus),
        "--object-store-memory", str(_OBJECT_STORE_BYTES),
        "--temp-dir", temp_dir,
        "--disable-usage-stats",
    ]
    for flag, port in ports.items():
        command += [f"--{flag}", str(port)]
    return command


def _head_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in _INHERITED_ENV if name in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith("RAY_")})
    # With Ray "clusters" disabled, the node IP is the loopback address and every Ray server
    # (GCS, raylet, agents, client server) binds 127.0.0.1 instead of the machine's address.
    env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # Ray turns token auth on by itself when ~/.ray/auth_token exists; the head only listens on
    # 127.0.0.1, and rlaunch's clients (and the job's own ray.init) must not depend on that file.
    env["RAY_AUTH_MODE"] = "disabled"
    # When the first driver connects, the raylet starts as many Python workers as the head has
    # CPUs for that driver's job (Ray's prestart_worker_first_driver). On a head rlaunch starts
    # that is the first launch's adapter, which runs one staging task per node, and a worker
    # serves one job only: the rest sat idle until the head stopped, each having imported Ray
    # (~3 CPU-s) and polling. Workers start when a task or actor needs one instead.
    env.setdefault("RAY_prestart_worker_first_driver", "0")
    return env


def start_head(
    allocation: Allocation,
    state_dir: Path,
    say: Callable[[str], None],
    *,
    cancelled: Callable[[], bool] | None = None,
    python: str = sys.executable,
) -> HeadRecord:
    """Start a head and wait until it is ready. `cancelled`: the caller waits in the background
    (LocalExecutor.prepare) and may stop waiting: no spinner then (the foreground shows its
    own), and once `cancelled()` is true the head is stopped and HeadStartCancelled raised.

    A head that does not become ready is stopped, its logs kept in `FAILED_START_LOGS`. When
    `ray start` itself gave up with RAY_START_TIMED_OUT, and only then, the head is started once
    more (fresh ports, temp dir, record, supervisor and deadline); if that fails too, the
    first attempt's logs are moved to `FAILED_START_LOGS/first-attempt`."""
    timeout_s = start_timeout_s()
    kept = state_dir / FAILED_START_LOGS
    try:
        return _start_once(allocation, state_dir, say, timeout_s, cancelled, python)
    except _StartFailed as failed:
        if not failed.ray_start_timed_out:
            raise _start_error(failed, kept, "") from None
    say(f'rlaunch: `ray start` gave up: "{RAY_START_TIMED_OUT}" (Ray waits a fixed 30 s for the '
        f"head's raylet to register with the GCS); starting the head once more on fresh ports "
        f"(the first attempt's logs are kept in {kept})")
    try:
        return _start_once(allocation, state_dir, say, timeout_s, cancelled, python,
                           earlier_logs=kept)
    except _StartFailed as failed:
        raise _start_error(
            failed, kept, f' on its second attempt (the first ended with `ray start`\'s '
            f'"{RAY_START_TIMED_OUT}"; its logs are in {kept / FIRST_ATTEMPT_LOGS})'
        ) from None


class _StartFailed(Exception):
    """One start of the head failed; the head is stopped and its logs are kept."""

    def __init__(self, error: HeadNotReady, output: str) -> None:
        super().__init__(str(error))
        self.error = error
        self.output = output
        self.ray_start_timed_out = (
            error.exit_code not in (None, 0) and RAY_START_TIMED_OUT in output
        )


def _start_error(failed: _StartFailed, kept: Path, attempt: str) -> ExecutorError:
    return ExecutorError(
        f"{failed.error}{attempt}. The head's logs (`ray start`'s output ray-start.log, and the "
        f"session's gcs_server, raylet, dashboard and dashboard_agent logs) are kept in {kept}; "
        f"the head was stopped. On a slow or loaded machine, raise {START_TIMEOUT_ENV} "
        f"(seconds). `ray start`'s output ends with:\n{failed.output[-2000:]}"
    )


def _start_once(
    allocation: Allocation,
    state_dir: Path,
    say: Callable[[str], None],
    timeout_s: float,
    cancelled: Callable[[], bool] | None,
    python: str,
    *,
    earlier_logs: Path | None = None,
) -> HeadRecord:
    """One `ray start`, waited for. If the head does not become ready it is stopped, its logs
    kept in `FAILED_START_LOGS` (with those found in `earlier_logs` moved under them, to
    `first-attempt`), and _StartFailed raised."""
    temp_dir = _short_temp_dir()
    ports = dict(zip(_PORT_FLAGS, _free_ports(len(_PORT_FLAGS))))
    command = head_command(allocation, ports, temp_dir, python)
    gpus = allocation.total_gpus
    say(f"rlaunch: starting a local Ray head on 127.0.0.1 ({gpus} simulated GPUs, "
        f"{head_cpus(allocation)} CPUs, temp dir {temp_dir})")
    log_path = Path(temp_dir) / "ray-start.log"
    env = _head_env()
    # Ray's own waits inside `ray start` (60 s and 30 s by default) run out first on a loaded
    # machine, while the head's deadline still runs: give them ours, unless they are set.
    for wait in (DASHBOARD_STARTUP_ENV, DASHBOARD_MODULE_ENV):
        env.setdefault(wait, str(math.ceil(timeout_s)))
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, cwd=temp_dir,
        )
    record = HeadRecord(
        pid=process.pid, pgid=process.pid, session_id=process.pid,
        gcs_address=f"127.0.0.1:{ports['port']}",
        dashboard_url=f"http://127.0.0.1:{ports['dashboard-port']}",
        temp_dir=temp_dir, session_name="", num_nodes=allocation.num_nodes,
        gpus_per_node=allocation.gpus_per_node, num_cpus=head_cpus(allocation),
        started_at=utc_now(), started_by_pid=os.getpid(),
        started_by_start=process_start(os.getpid()) or 0, python=python,
    )
    # Written before waiting: if this launcher dies now, its supervisor stops the head.
    write_record(state_dir, record)
    _start_supervisor(state_dir, record)
    endpoints = HeadEndpoints(
        agent_url=f"http://127.0.0.1:{ports['dashboard-agent-listen-port']}",
        dashboard_url=record.dashboard_url,
    )
    try:
        with (progress("waiting for the local Ray head") if cancelled is None
              else nullcontext()):
            answer = wait_ready(process, endpoints, timeout_s=timeout_s, say=say,
                                head_alive=lambda: not head_gone(record),
                                cancelled=cancelled or (lambda: False))
    except (HeadNotReady, KeyboardInterrupt) as err:
        output = log_path.read_text(errors="replace") if log_path.exists() else ""
        if isinstance(err, (KeyboardInterrupt, HeadStartCancelled)):
            stop_head(record, state_dir, say)
            raise
        kept = state_dir / FAILED_START_LOGS
        earlier = kept.with_name(f"{FAILED_START_LOGS}.{FIRST_ATTEMPT_LOGS}")
        if earlier_logs is not None:
            shutil.rmtree(earlier, ignore_errors=True)
            earlier_logs.rename(earlier)
        stop_head(record, state_dir, say, keep_logs_in=kept)
        if earlier_logs is not None:
            earlier.rename(kept / FIRST_ATTEMPT_LOGS)
        raise _StartFailed(err, output) from None
    record = HeadRecord(**{**asdict(record), "session_name": str(answer.get("session_name"))})
    write_record(state_dir, record)
    return record


def ensure_head(
    allocation: Allocation,
    state_dir: Path,
    say: Callable[[str], None],
    *,
    cancelled: Callable[[], bool] | None = None,
    python: str = sys.executable,
) -> tuple[HeadRecord, bool]:
    """The head to submit to, and whether it was started now (by this call). `cancelled`: see
    `start_head`. `python`: the interpreter whose Ray runs it (a head of another is
    replaced, as one of another allocation is)."""
    # Launches that start at once share one head: the check-and-start is serialized.
    with exclusive(state_dir / "head.lock"):
        record = read_record(state_dir)
        if record is not None and not is_released(record) and not owner_alive(record):
            # Its supervisor should have stopped it; check at every reuse all the same.
            say(f"rlaunch: the local Ray head at {record.dashboard_url} belongs to launcher pid "
                f"{record.started_by_pid}, which is gone; stopping it")
            stop_head(record, state_dir, say)
            record = None
        if record is not None:
            if is_alive(record):
                if fits(record, allocation, python):
                    say(f"rlaunch: reusing the local Ray head at {record.dashboard_url}")
                    return record, False
                busy = running_jobs(record)
                if busy is None:
                    raise ExecutorError(
                        f"the local Ray head at {record.dashboard_url} was started for another "
                        f"allocation, and it did not list its jobs within "
                        f"{_LIVENESS_TIMEOUT_S:g} s, so it is not replaced under them; launch "
                        f"again when the machine is less busy, or stop it (`rlaunch stop "
                        f"TARGET --head`)"
                    )
                if busy:
                    raise ExecutorError(
                        f"the local Ray head at {record.dashboard_url} was started for "
                        f"{record.num_nodes} node(s) x {record.gpus_per_node} GPUs and "
                        f"{record.num_cpus} CPUs, and job(s) {', '.join(busy)} still run on it; "
                        f"this launch needs {allocation.num_nodes} x "
                        f"{allocation.gpus_per_node} GPUs and {head_cpus(allocation)} CPUs. "
                        f"Wait for them or stop them (`rlaunch stop`), then launch again"
                    )
                say("rlaunch: the local Ray head was started for another allocation or Ray "
                    "environment; replacing it")
            stop_head(record, state_dir, say)
        return start_head(allocation, state_dir, say, cancelled=cancelled, python=python), True


def stop_if_started_since(
    previous: HeadRecord | None, state_dir: Path, say: Callable[[str], None]
) -> None:
    """Stop the recorded head if it is not `previous` (it was started since) and is idle: for a
    caller that launched several runs with `keep_head` so that they share one head."""
    record = read_record(state_dir)
    if record is None or (previous is not None and record.session_id == previous.session_id):
        return
    if is_alive(record) and running_jobs(record) == []:
        stop_head(record, state_dir, say)
