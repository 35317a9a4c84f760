"""The object-store test servers themselves (tests/objectstores.py): reachable by a child process
from their environment alone, and gone after they stop."""

from __future__ import annotations

import os
import subprocess
import sys
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
