"""Fixtures for end-to-end tests that run the real ./pants (with pantsd, for speed)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest
from pants_scratch import ScratchRepo

from contract.skyrl_env import rehearsal_python
from rlaunch.spec.execution import Allocation
from session_heads import session_head, stop_after_last_use

REPO_ROOT = Path(__file__).resolve().parents[2]
MAKE_TINY_MODEL = REPO_ROOT / "tests" / "contract" / "make_tiny_model.py"
BROKEN_FIXTURES = ('--pants-ignore=-["/tests/fixtures/broken/"]',)
"""Options that make Pants see tests/fixtures/broken/ (pants.toml ignores it, so that `::` is
clean). The repo's pantsd serves them: Pants 2.17 takes another ignore list per run, without
restarting the daemon (the next run without it sees `::` clean again; test_broken_recipes
asserts both), where a --no-pantsd run would boot a whole Pants (~8 CPU s) each time."""

# Pants 2.17 keeps pantsd's metadata in <buildroot>/.pids/<hash>/pantsd/ (pants_subprocessdir).
PANTSD_PID_GLOB = ".pids/*/pantsd/pid"

PantsRunner = Callable[..., "subprocess.CompletedProcess[str]"]


def _is_pantsd(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        # pantsd retitles itself "pantsd [<buildroot>]": guards against a reused pid.
        return Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"pantsd")
    except OSError:
        return True  # No /proc (macOS): a live pid from pantsd's own pid file is all we have.


def live_pantsd_pids() -> set[int]:
    pids = set()
    for pid_file in REPO_ROOT.glob(PANTSD_PID_GLOB):
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            continue
        if _is_pantsd(pid):
            pids.add(pid)
    return pids


def _stop(pid: int, timeout_seconds: float = 20.0) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if not _is_pantsd(pid):
            return
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.fixture(scope="session", autouse=True)
def stop_pantsd_started_by_tests() -> Iterator[None]:
    """Leave pantsd as found: stop at session end only a pantsd that was not running before."""
    running_before = live_pantsd_pids()
    yield
    for pid in live_pantsd_pids() - running_before:
        _stop(pid)


def pants_env(overrides: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """The caller's environment as a user's shell would have it for ./pants, with overrides
    (None removes a variable). PYTHONPATH is dropped: the test layers set it for the runtime."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for name, value in (overrides or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def pants() -> PantsRunner:
    """pants(*args, env={NAME: value or None}) runs ./pants in the repo root and returns the
    CompletedProcess; env overrides the caller's environment (None removes a variable)."""

    def run(
        *args: str, env: Mapping[str, str | None] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(REPO_ROOT / "pants"), *args],
            cwd=REPO_ROOT,
            env=pants_env(env),
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    return run


@pytest.fixture
def distdir() -> Iterator[str]:
    """A dist directory of the test's own, relative to the build root (where Pants wants it)."""
    relpath = f"dist/e2e-{uuid.uuid4().hex[:8]}"
    yield relpath
    shutil.rmtree(REPO_ROOT / relpath, ignore_errors=True)


@pytest.fixture(scope="session")
def countdown_inputs(
    pants: PantsRunner, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The countdown experiments' inputs (data, tokenizer, the SFT model: ~30 s of training),
    built once for the session by `./pants run experiments/countdown:sft_model` into an empty
    store: (that store, the command's result)."""
    store = tmp_path_factory.mktemp("countdown-inputs") / "store"
    result = pants("run", "experiments/countdown:sft_model", env={"RLAUNCH_STORE": str(store)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return store, result


@pytest.fixture
def countdown_store(
    countdown_inputs: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> Path:
    """A store of the test's own holding a copy of the countdown inputs: a launch reuses them
    (same identity, same fingerprint, files verified) instead of building them again."""
    return Path(shutil.copytree(countdown_inputs[0], tmp_path / "store"))



@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of tests/contract/make_tiny_model.py's model (a 2-layer Qwen2 chat model with
    seeded random weights: the same bytes on every run), made once for the session in the
    SkyRL rehearsal env (~10 CPU s) for the modules that serve it or evaluate it, which only
    read it."""
    folder = tmp_path_factory.mktemp("tiny-model") / "model"
    done = subprocess.run([rehearsal_python(), str(MAKE_TINY_MODEL), str(folder)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return folder

# experiments/countdown:local-sim-1x2's allocation, as its BUILD declares it.
COUNTDOWN_ALLOCATION = Allocation(num_nodes=1, gpus_per_node=2, accelerator="sim",
                                  cpus_per_node=2, memory_gb_per_node=8, disk_gb_per_node=10)
# experiments/tiny-gsm8k:local-1x2's allocation, as its BUILD declares it (and the BUILD
# test_skyrl_check_handoffs.py writes): 6 CPUs, for SkyRL's entrypoint task, each GPU's
# colocation bundle and its checkpoint cleanup task.
SKYRL_ALLOCATION = Allocation(num_nodes=1, gpus_per_node=2, accelerator="sim", cpus_per_node=6,
                              memory_gb_per_node=8, disk_gb_per_node=10)

COUNTDOWN_HEAD = "countdown_head"
SKYRL_HEAD = "skyrl_head"
SCRATCH_COPY = "scratch_copy"
_SESSION_HEADS = (COUNTDOWN_HEAD, SKYRL_HEAD)


@pytest.fixture(scope="session")
def countdown_head(request: pytest.FixtureRequest,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The countdown launches' head (a launch that starts its own head is test_sweep's)."""
    with session_head(request, tmp_path_factory, COUNTDOWN_HEAD, COUNTDOWN_ALLOCATION) as heads:
        yield heads.state_dir


@pytest.fixture(scope="session")
def skyrl_head(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The head of the modules that run SkyRL 0.3.0's own code on it (test_rehearsal,
    test_skyrl_check_handoffs, test_skyrl_eval_only), started by the SkyRL rehearsal env's Ray
    (the interpreter their jobs run on) for SKYRL_ALLOCATION: one head start for the three."""
    with session_head(request, tmp_path_factory, SKYRL_HEAD, SKYRL_ALLOCATION,
                      rehearsal_python()) as heads:
        yield heads.state_dir


@pytest.fixture(scope="session")
def scratch_copy(request: pytest.FixtureRequest, repo_root: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScratchRepo]:
    """One scratch copy of the repository, committed as it is, for the modules that edit a copy
    or run SkyRL's code through its ./pants (test_hostile_build, test_iris, test_plans_build,
    test_rehearsal, test_skyrl_check_handoffs, test_scratch_repo): one pantsd boot (33-55 CPU s
    here) for all of them instead of one each. Each module works on a `view` (an environment of
    its own) and leaves the files as it found them (commits it made aside); test_scratch_repo's
    last test stops the pantsd (so it comes last). The copy's pantsd is stopped after the last
    test that uses it (tests/session_heads.py)."""
    repo = ScratchRepo(repo_root, tmp_path_factory.mktemp("scratch-copy"))
    repo.commit_all("the repository as it is")
    stop_after_last_use(request, SCRATCH_COPY, repo.close)
    try:
        yield repo
    finally:
        repo.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules that use one session head run one after the other, where the first of them
    is (the others keep their order): a head idles between its users otherwise, ~14 CPU s a
    minute for the SkyRL env's, while the modules between them run (test_scratch_repo's ~3
    minutes between test_rehearsal and test_skyrl_check_handoffs; four modules between
    test_main_command and test_pipeline). The scratch copy's users keep their places: its idle
    pantsd costs little."""
    modules: dict[Path, int] = {}
    heads: dict[Path, set[str]] = {}
    for item in items:
        modules.setdefault(item.path, len(modules))
        heads.setdefault(item.path, set()).update(
            name for name in _SESSION_HEADS if name in getattr(item, "fixturenames", ()))
    first: dict[str, int] = {}
    for path, index in modules.items():
        for name in sorted(heads[path]):
            first.setdefault(name, index)
    rank = {path: min([index, *(first[name] for name in heads[path])])
            for path, index in modules.items()}
    items.sort(key=lambda item: (rank[item.path], modules[item.path]))
