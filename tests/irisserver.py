"""A real local Iris controller for tests: Iris's own `iris --config FILE cluster start`.

The controller runs in a process of its own (a new session, so it and the task processes it
starts are stopped together), in process with its autoscaler and thread workers, on 127.0.0.1
at the port its config names, with:
- HOME inside the test's folder (the controller writes a login token under `~/.iris/`) and
  TMPDIR a short folder of its own under /tmp, removed at the end: the controller keeps its
  database, log store and task working directories there, and a task's private Ray its unix
  sockets, whose paths must stay under 108 characters;
- PYTHONPATH naming rlaunch's sources (and whatever the test adds): local tasks run in the
  controller's own environment (the worker unpacks the workspace bundle into its cache, but no
  `uv sync` runs), so that is what the job finds importable;
- one change to Iris, made here and only here: the controller refuses clients built more than
  FRESHNESS_WINDOW (14 days) before today (iris/cluster/controller/service.py), and the
  published marin-iris builds are older than this machine's clock, so the test controller
  accepts builds up to ten years old.

Iris's local process runtime reads a task's output with select() and a buffered readline
(ProcessContainer._stream_logs), so lines a task writes together can wait in that buffer until
it writes again or ends: a test never waits for a line from a task that then goes quiet.

The config declares a CPU scale group and a fake GPU one: slices of 2 VMs with 8 "H100" each
and the `leafgroup` attribute Iris coschedules multi-replica GPU jobs by (the GPUs are counted,
never used: thread workers have none).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CONTROLLER_MAIN = """
import sys
from datetime import timedelta

import iris.cluster.controller.service as service

# TEST ONLY (tests/irisserver.py): accept the published client builds, which are older than
# the 14-day freshness window allows on this machine's clock.
service.FRESHNESS_WINDOW = timedelta(days=3650)

from iris.cli.main import iris

iris(sys.argv[1:], prog_name="iris")
"""

CONFIG = """\
platform:
  local: {{}}
controller:
  local:
    port: {port}
worker_provider: {{}}
scale_groups:
  cpu:
    num_vms: 1
    resources: {{cpu: 4, ram: 8GB, disk: 20GB, device_type: cpu, device_variant: cpu,
                capacity_type: on-demand}}
    buffer_slices: 0
    max_slices: 2
    slice_template: {{num_vms: 1, local: {{}}}}
  h100:
    num_vms: 2
    resources: {{cpu: 4, ram: 8GB, disk: 20GB, device_type: gpu, device_variant: H100,
                device_count: 8, capacity_type: on-demand}}
    buffer_slices: 0
    max_slices: 1
    slice_template: {{num_vms: 2, local: {{}}}}
    worker: {{attributes: {{leafgroup: fake-leaf-a}}}}
"""

STARTED = "Controller started at "
_START_TIMEOUT_S = 180.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Controller:
    url: str
    config: Path
    process: subprocess.Popen
    log: Path
    home: Path
    tmp: Path

    def stop(self) -> None:
        """SIGTERM to its session (Iris closes the cluster on it), SIGKILL after 30 s; then its
        temp folder goes."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def start_controller(folder: Path, *, pythonpath: list[Path]) -> Controller:
    """Start a local Iris controller under `folder`; returns once it answers."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = folder / "local.yaml"
    config.write_text(CONFIG.format(port=port))
    home, tmp = folder / "home", Path(tempfile.mkdtemp(prefix="iris-", dir="/tmp"))
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "LANG": "C.UTF-8",
        "PYTHONPATH": os.pathsep.join(str(path) for path in pythonpath),
    }
    log = folder / "controller.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", CONTROLLER_MAIN, "--config", str(config), "cluster", "start"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )
    controller = Controller(f"http://127.0.0.1:{port}", config, process, log, home, tmp)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while STARTED + controller.url not in controller.output():
        if process.poll() is not None or time.monotonic() > deadline:
            controller.stop()
            raise RuntimeError(
                f"the local Iris controller did not start (exit {process.poll()}); its log:\n"
                + controller.output()[-3000:]
            )
        time.sleep(0.2)
    return controller
