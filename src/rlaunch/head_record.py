"""A local Ray head's record (`head.json`) and its processes: read, owned, stopped.

The head's supervisor (rlaunch.head_supervisor) needs only this, so it imports nothing else of
rlaunch's but `atomic` (a watcher per head; the executors' imports cost it ~1.8 CPU-s to
start). rlaunch.executors.local_head starts, reuses and replaces heads on top of it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from rlaunch.atomic import write_json_atomically

STATE_FILE = "head.json"
RELEASED_FILE = "released"
"""In the head's temp dir: the launcher kept the head on purpose; its supervisor stands down."""
_STOP_GRACE_S = 1.5


@dataclass(frozen=True)
class HeadRecord:
    """What `head.json` says about the head rlaunch started."""

    pid: int
    """`ray start`'s pid: the leader of the head's session and process group."""
    pgid: int
    session_id: int
    gcs_address: str
    dashboard_url: str
    temp_dir: str
    session_name: str
    num_nodes: int
    gpus_per_node: int
    num_cpus: int
    started_at: str
    started_by_pid: int
    started_by_start: int = 0
    """The launcher's start time (clock ticks after boot, /proc/PID/stat): with its pid, who
    owns the head (a pid alone may be reused). 0 in records written before it was kept."""
    python: str = ""
    """The interpreter whose Ray runs the head ("" in records written before it was kept: the
    launcher's)."""


def read_record(state_dir: Path) -> HeadRecord | None:
    try:
        data = json.loads((state_dir / STATE_FILE).read_text())
        return HeadRecord(**data)
    except (OSError, ValueError, TypeError):
        return None


def write_record(state_dir: Path, record: HeadRecord) -> None:
    write_json_atomically(state_dir / STATE_FILE, asdict(record))


def remove_record(state_dir: Path, record: HeadRecord) -> None:
    current = read_record(state_dir)
    if current is not None and current.session_id == record.session_id:
        (state_dir / STATE_FILE).unlink(missing_ok=True)


def session_pids(session_id: int) -> list[int]:
    """Live (non-zombie) processes of a session, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command: state ppid pgrp session ...
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 3 and fields[0] != "Z" and int(fields[3]) == session_id:
            found.append(int(entry.name))
    return found


def owned_pids(record: HeadRecord) -> list[int]:
    """The session's processes that are really this head's: a pid can be reused after a reboot
    or a crash, so each must mention the head's temp dir or be a Ray process of it."""
    owned = []
    for pid in session_pids(record.session_id):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if record.temp_dir in cmdline or "ray" in cmdline:
            owned.append(pid)
    return owned


def process_start(pid: int) -> int | None:
    """The start time of a live process (clock ticks after boot), None when there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[19])


def head_gone(record: HeadRecord) -> bool:
    """Whether none of the head's processes is left. Cheap while the head runs (its process
    group answers signal 0: Ray's servers stay in `ray start`'s group); /proc is scanned for
    the rest of its session only once the group is empty."""
    try:
        os.killpg(record.pgid, 0)
    except ProcessLookupError:
        return not owned_pids(record)
    except PermissionError:
        pass
    return False


def owner_alive(record: HeadRecord) -> bool:
    """Whether the launcher that started the head still runs."""
    start = process_start(record.started_by_pid)
    return start is not None and record.started_by_start in (0, start)


def is_released(record: HeadRecord) -> bool:
    """Whether the launcher kept the head on purpose (`--keep-head`, `--detach`)."""
    return (Path(record.temp_dir) / RELEASED_FILE).exists()


def release_head(record: HeadRecord) -> None:
    """Let the head outlive its launcher: its supervisor stands down."""
    (Path(record.temp_dir) / RELEASED_FILE).write_text(f"released by pid {os.getpid()}\n")


def stop_head(
    record: HeadRecord,
    state_dir: Path,
    say: Callable[[str], None],
    *,
    keep_logs_in: Path | None = None,
) -> None:
    """Stop exactly the head's session, remove its temp dir and its state file (first moving
    its logs to `keep_logs_in`, when given)."""
    pids = owned_pids(record)
    if pids:
        say(f"rlaunch: stopping the local Ray head (session {record.session_id}, {len(pids)} "
            f"processes)")
    try:
        os.killpg(record.pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_GRACE_S
    while owned_pids(record) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in owned_pids(record):
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + _STOP_GRACE_S
    while owned_pids(record) and time.monotonic() < deadline:
        time.sleep(0.1)
    if keep_logs_in is not None:
        _keep_logs(Path(record.temp_dir), keep_logs_in)
    shutil.rmtree(record.temp_dir, ignore_errors=True)
    remove_record(state_dir, record)


def _keep_logs(temp_dir: Path, target: Path) -> None:
    """`ray start`'s output and the session's logs/ (GCS, raylet, dashboard, agents)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True, exist_ok=True)
    start_log = temp_dir / "ray-start.log"
    if start_log.exists():
        shutil.copyfile(start_log, target / start_log.name)
    for logs in sorted(temp_dir.glob("session_2*/logs")):
        shutil.copytree(logs, target / logs.parent.name, ignore_dangling_symlinks=True,
                        dirs_exist_ok=True)


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass
