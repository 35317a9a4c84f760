"""Shared by the executor, ledger and launch tests: the `echo` runtime profile, a spec that
passes preflight for it, a clean git checkout, and process accounting for Ray heads."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any

from rlaunch.builders.countdown import countdown_model_spec
from rlaunch.executors.local_head import STATE_DIR_ENV, HeadRecord, read_record, stop_head
from rlaunch.spec import catalog

TESTS = Path(__file__).resolve().parents[1]
SRC = TESTS.parent / "src"
ECHO_DIR = Path(__file__).resolve().parent / "echo"
ECHO_CLI = ECHO_DIR / "echo_cli.py"
ECHO_ENTRYPOINT = "rlaunch_echo_runtime"
ARTIFACT_VERSION = "2026.11.01"

ECHO_PROFILE = catalog.RuntimeProfile(
    name="echo",
    summary="tests only: prints what it read from the launch YAML",
    package="rlaunch",
    releases=MappingProxyType(
        {"0.1.0": catalog.RuntimeRelease("0.1.0", (ECHO_ENTRYPOINT,), frozenset())}
    ),
    commits=MappingProxyType({}),
    strategies=frozenset({"fsdp", "megatron"}),
    rollout_backends=frozenset({"vllm"}),
    weight_sync_backends=frozenset({"nccl", "gloo"}),
    environments=None,
    estimators=None,
    simulated=True,
    adapter=None,
)

ECHO_RUNTIME = {
    "name": "echo-0.1.0",
    "profile": "echo",
    "package": "rlaunch==0.1.0",
    "git": None,
    "entrypoint": ECHO_ENTRYPOINT,
    "required_fixes": [],
}


def echo_profiles() -> MappingProxyType:
    return MappingProxyType({**catalog.PROFILES, "echo": ECHO_PROFILE})


def install_echo_profile() -> None:
    """For a test process: the catalog has no test profile, so the tests add one."""
    catalog.PROFILES = echo_profiles()


def echo_spec(
    store: Path | str,
    *,
    name: str = "echo-run",
    version: str = "dev",
    executor: str = "local",
    address: str | None = None,
    credentials: list[str] | None = None,
    smoke_of: str | None = None,
    seed: int = 7,
) -> dict[str, Any]:
    """A 1 node x 1 simulated GPU run of the echo runtime on tiny countdown artifacts."""
    model = countdown_model_spec(ARTIFACT_VERSION, train_rows=64, eval_rows=16, sft_steps=0)
    data = copy.deepcopy(model["deps"]["data"])
    role_plan = {
        "strategy": "fsdp",
        "policy": {
            "num_nodes": 1, "num_gpus_per_node": 1, "tensor_parallel_size": 1,
            "pipeline_parallel_size": 1, "context_parallel_size": 1, "expert_parallel_size": 1,
            "expert_tensor_parallel_size": 1, "sequence_parallel_size": 1,
        },
        "reference": {
            "colocated_with_policy": True, "num_nodes": 1, "num_gpus_per_node": 1,
            "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "context_parallel_size": 1,
            "expert_parallel_size": 1, "expert_tensor_parallel_size": 1,
            "sequence_parallel_size": 1,
        },
        "critic": None,
        "rollout": {
            "num_engines": 1, "tensor_parallel_size": 1, "pipeline_parallel_size": 1,
            "data_parallel_size": 1, "expert_parallel_size": 1, "backend": "vllm",
            "weight_sync_backend": "gloo",
        },
        "placement": {"colocate_all": True, "colocate_policy_ref": True},
        "batch": {
            "train_batch_size": 4, "policy_mini_batch_size": 4, "critic_mini_batch_size": None,
            "micro_train_batch_size_per_gpu": 2, "micro_forward_batch_size_per_gpu": 2,
            "n_samples_per_prompt": 2, "eval_batch_size": 4,
        },
    }
    allocation = {
        "num_nodes": 1, "gpus_per_node": 1,
        "accelerator": "sim" if executor in ("local", "dry-run") else "H100",
        "cpus_per_node": 2, "memory_gb_per_node": 4, "disk_gb_per_node": 10,
    }
    spec: dict[str, Any] = {
        "schema_version": 1,
        "name": name,
        "version": version,
        "seed": seed,
        "model": model,
        "tokenizer": model,
        "reference_model": None,
        "critic_model": None,
        "train_data": data,
        "eval_data": data,
        "runtime": dict(ECHO_RUNTIME),
        "role_plan": role_plan,
        "lengths": {"max_prompt_length": 16, "max_generate_length": 16, "max_input_length": 16,
                    "max_turns": 1},
        "algorithm": {
            "advantage_estimator": "grpo",
            "kl": {"use_kl_loss": True, "use_kl_in_reward": False, "kl_loss_coef": 0.001,
                   "kl_estimator_type": "k3"},
            "learning_rate": 1e-3, "epochs": 1, "max_training_steps": 1, "temperature": 1.0,
            "clip_ratio": 0.2, "fully_async": False, "environment": "countdown",
        },
        "logger": "console",
        "checkpoint": {"ckpt_interval": 1, "max_ckpts_to_keep": 1, "hf_save_interval": -1,
                       "export_final": True},
        "resume": {"mode": "latest", "path": None, "compatible_runtimes": []},
        "execution": {
            "executor": executor, "address": address,
            "cluster": "test-cluster" if executor == "iris" else None,
            "allocation": allocation, "priority": "normal", "max_retries": 0,
            "timeout_minutes": 10, "credentials": list(credentials or []), "wandb": None,
            "store_prefix": str(store),
        },
        "smoke_of": None,
    }
    if smoke_of is not None:
        full_name, _, full_version = smoke_of.partition("@")
        spec["smoke_of"] = {
            "name": full_name, "version": full_version,
            "role_plan": copy.deepcopy(role_plan), "runtime": dict(ECHO_RUNTIME),
            "allocation": dict(allocation),
            "handoff_kinds": {"model": "model", "tokenizer": "model", "train_data": "dataset",
                              "eval_data": "dataset"},
        }
    return spec


def shared_store(basetemp: Path) -> Path:
    """One store for the test session's launches: its input artifacts are built once."""
    return basetemp / "echo-store"


def echo_cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    """`rlaunch ARGS` in a process of its own (with the echo runtime profile), with Ctrl-C's
    default disposition: a suite started in the background of a script inherits SIGINT ignored,
    and Python then installs no KeyboardInterrupt handler."""
    return subprocess.Popen(
        [sys.executable, str(ECHO_CLI), *args], cwd=cwd, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_default_sigint,  # noqa: PLW1509 (a signal disposition, no lock is taken)
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def job_env(**extra: str) -> dict[str, str]:
    """The environment of a test launcher: rlaunch's sources and the echo runtime importable."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(ECHO_DIR)])}
    env.update(extra)
    return env


def clean_git_repo(path: Path) -> Path:
    """A git checkout with one commit and nothing uncommitted: calendar versions launch from it."""
    path.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "launcher"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return path


# -- processes ------------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, session) of a process, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[3])


def process_tree(session_ids: set[int]) -> set[int]:
    """Every live process in the given sessions, and all their descendants in other sessions
    (Ray starts each job's driver in a session of its own)."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None and stat[0] != "Z":
                table[int(entry.name)] = stat
    found = {pid for pid, (_, _, sid) in table.items() if sid in session_ids}
    grew = True
    while grew:
        children = {pid for pid, (_, ppid, _) in table.items() if ppid in found} - found
        found |= children
        grew = bool(children)
    return found


def alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if (stat := _stat(pid)) is not None and stat[0] != "Z"}


def wait_gone(pids: set[int], timeout_s: float = 15.0) -> set[int]:
    deadline = time.monotonic() + timeout_s
    left = alive(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = alive(pids)
    return left


def kill_leftovers(pids: set[int]) -> None:
    """Last resort after a failed assertion, for processes these tests started (by pid)."""
    for pid in alive(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def listening_addresses(pids: set[int]) -> set[str]:
    """`ip:port` of every TCP socket in LISTEN state owned by one of `pids` (from /proc)."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                try:
                    target = os.readlink(fd)
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:
                continue
            address_hex, port_hex = local.split(":")
            found.add(f"{_ip(address_hex)}:{int(port_hex, 16)}")
    return found


def _ip(address_hex: str) -> str:
    raw = bytes.fromhex(address_hex)
    # /proc/net prints each 32-bit word in host (little-endian) order.
    words = [raw[i : i + 4][::-1] for i in range(0, len(raw), 4)]
    packed = b"".join(words)
    if len(packed) == 4:
        return ".".join(str(b) for b in packed)
    if packed[:12] == b"\0" * 10 + b"\xff\xff":
        return ".".join(str(b) for b in packed[12:])
    return ":".join(packed[i : i + 2].hex() for i in range(0, 16, 2))


def ray_processes() -> dict[int, str]:
    """Live processes that look like Ray's (by command line), with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        stat = _stat(int(entry.name))
        if stat is not None and stat[0] != "Z" and ("ray" in cmdline or "rlh-" in cmdline):
            found[int(entry.name)] = cmdline
    return found


class HeadWatch:
    """The Ray heads a test module's code starts in `state_dir`: every process they ever had is
    remembered, and at the end the last head is stopped and none of them may be left. The Ray
    processes running before the module are compared by pid with those after it: any new one
    that is ours (in a head's process tree, or naming a head's temp dir) fails the module.
    Other people's Ray processes on this machine are left alone."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self.seen: set[int] = set()
        self.sessions: set[int] = set()
        self.temp_dirs: set[str] = set()
        self.before = set(ray_processes())

    def snapshot(self) -> None:
        record = read_record(self.state_dir)
        if record is not None:
            self.sessions.add(record.session_id)
            self.temp_dirs.add(record.temp_dir)
        self.seen |= process_tree(self.sessions)

    def finish(self) -> None:
        self.snapshot()
        record = read_record(self.state_dir)
        if record is not None:
            stop_head(record, self.state_dir, lambda message: None)
        left = wait_gone(self.seen)
        deadline = time.monotonic() + 10
        while True:
            after = ray_processes()
            marked = {pid for pid in set(after) - self.before
                      if any(temp in after[pid] for temp in self.temp_dirs)}
            if not marked or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        kill_leftovers(left | marked)
        assert not left, f"processes of the tests' Ray heads outlived them: {sorted(left)}"
        assert not marked, f"Ray processes of the tests' heads outlived them: {sorted(marked)}"


def launcher(args: list[str], root: Path, log: Path, stderr: int | None = None
             ) -> subprocess.Popen:
    """`rlaunch ARGS` in a process group of its own (to be killed whole), with its own head
    state dir `root/heads`; stdout (and stderr, unless it goes to the descriptor `stderr`,
    which the launcher then holds alone) appended to `log`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RAY_ADDRESS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PYTHONPATH"] = str(SRC)
    env[STATE_DIR_ENV] = str(root / "heads")
    with open(log, "a") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "rlaunch", *args], cwd=root, env=env, stdout=out,
            stderr=subprocess.STDOUT if stderr is None else stderr, start_new_session=True)
    if stderr is not None:
        os.close(stderr)
    return process


def finished(process: subprocess.Popen, log: Path, timeout_s: float = 600) -> str:
    """The log, once the launcher exited 0 (its tail in the failure otherwise)."""
    assert process.wait(timeout=timeout_s) == 0, log.read_text()[-4000:]
    return log.read_text()


def kill_group_once(process: subprocess.Popen, ready: Path, log: Path, root: Path,
                    seen: set[int], timeout_s: float = 300, bounded_s: float = 30.0
                    ) -> HeadRecord:
    """Once `ready` exists, SIGKILL the whole process group of a `launcher` (state dir
    `root/heads`) and wait until every process of the Ray head it started is gone (its
    supervisor stops it). `seen` gets the head's processes, for the caller to kill if an
    assertion fails; returns the head's record."""
    deadline = time.monotonic() + timeout_s
    while not ready.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.poll() is None, log.read_text()[-4000:]
    head = read_record(root / "heads")
    # The head's processes before the kill: its supervisor starts stopping them within 0.5 s
    # of it, and some may be gone before a second look.
    if head is not None:
        seen |= process_tree({head.session_id})
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert head is not None, "the launcher's head has no record"
    seen |= process_tree({head.session_id})
    assert len(seen) > 5, f"the head has too few processes: {sorted(seen)}"
    left = wait_gone(seen, bounded_s)
    assert not left, f"Ray processes outlived their killed launcher: {sorted(left)}"
    assert not [pid for pid, cmd in ray_processes().items() if head.temp_dir in cmd]
    return head
