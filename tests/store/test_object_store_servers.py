"""The object-store test servers themselves (tests/objectstores.py): reachable by a child process
from their environment alone, and gone after they stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from objectstores import running

# A child process with only the server's environment: what ./pants or a Ray job would have.
CHILD = """
import sys
from rlaunch.store.fs import open_location
location = open_location(sys.argv[1])
print(location.fs.cat_file(location.root + "/hello.txt").decode())
"""


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_a_child_process_reaches_the_server_from_its_environment(
    scheme: str, tmp_path: Path
) -> None:
    with running(scheme, tmp_path) as server:
        prefix = server.prefix()
        server.filesystem().pipe_file(f"{prefix.split('://')[1]}/hello.txt", b"hello")
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("AWS_", "FSSPEC_", "STORAGE_EMULATOR"))
        }
        child = subprocess.run(
            [sys.executable, "-c", CHILD, prefix],
            env={**env, **server.env(), "PYTHONPATH": os.pathsep.join(sys.path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (child.returncode, child.stdout, child.stderr[-2000:]) == (0, "hello\n", "")
        pid = server.process.pid
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


# A test process that starts a server, says its pid, and waits to be killed.
HOLDER = """
import sys, time
from pathlib import Path
from objectstores import running
with running(sys.argv[1], Path(sys.argv[2])) as server:
    print(server.process.pid, flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("scheme", ["s3", "gs"])
def test_a_server_does_not_outlive_a_test_process_killed_with_sigkill(
    scheme: str, tmp_path: Path
) -> None:
    tests = Path(__file__).resolve().parents[1]
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, scheme, str(tmp_path)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), *sys.path])},
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None
        server_pid = int(holder.stdout.readline())
        os.killpg(server_pid, 0)  # running, in a session of its own
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.killpg(server_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(server_pid, signal.SIGKILL)
    pytest.fail(f"the {scheme} server (pid {server_pid}) outlived its killed test process")
