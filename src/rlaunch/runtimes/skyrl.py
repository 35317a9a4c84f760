"""The `skyrl` runtime adapter:
`python -m rlaunch.runtimes.skyrl LAUNCH_YAML [--check-handoffs | --rehearse]`.

Everything between the launch YAML and SkyRL's first line (docs/skyrl-runtime.md):
1. stage every input (`inputs.<slot>`) from the store into the node cache, on every alive node of
   the Ray cluster when the job runs on one (rlaunch.runtimes.staging, staging_ray); with
   `resume.mode latest`, refuse a checkpoint root trained from another export of an upstream
   run than the one staged (rlaunch.runtimes.trained_from);
2. rewrite the `skyrl` subtree's store paths to the staged folders, and print each rewrite;
3. run SkyRL's own handoff check (`python -m rlaunch.runtimes.skyrl_handoff <overrides>`) on
   them; with `--check-handoffs` stop there; with `--rehearse`, first shrink the model, bound
   the rows and hand SkyRL's loop to CPU workers and engines (rlaunch.runtimes.skyrl_rehearse,
   docs/rehearsal.md; an eval stage's entrypoint is run by rlaunch.runtimes.skyrl_cpu);
4. run SkyRL's entrypoint as a child with exactly those overrides, forwarding SIGINT, SIGTERM
   and SIGHUP, and keep its exit status;
5. before SkyRL starts, record in `{ckpt_path}/runtime.json` what the root is trained from; after
   success, write the terminal manifest (rlaunch.runtimes.skyrl_outputs).

An eval stage (runtime entrypoint `skyrl.train.entrypoints.main_generate`, SkyRL's eval-only
entrypoint) differs in two places (rlaunch.runtimes.skyrl_eval): `trainer.export_path` points at
a node-local folder, because SkyRL dumps the eval's per-sample results there with pathlib; and
after success the adapter turns that dump into the report (`report.json`, `samples.jsonl`) in
the run's export root, which the terminal manifest then names.

W&B: SkyRL 0.3.0's `Tracking` (`skyrl/train/utils/tracking.py`) calls
`wandb.init(project=trainer.project_name, name=trainer.run_name, tags=trainer.tags)` and passes
no entity; wandb reads it from `WANDB_ENTITY`. `Tracking` runs in SkyRL's Ray task
`skyrl_entrypoint`, whose environment is not the driver's (SkyRL's `initialize_ray` forwards a
fixed list that lacks WANDB_ENTITY and a store's credentials): on a Ray cluster the entity, the
project and the named credentials reach every worker process of the run through
rlaunch.runtimes.worker_env, in no file and no Ray log. The run URL wandb prints is kept in the
manifest.

Exit status: SkyRL's own; 2 when the launch YAML, staging, the checkpoint root or the handoff
check refuse (SkyRL not started); 1 when SkyRL exited 0 but its outputs are missing.

Imports only what a SkyRL environment has (pydantic, pyyaml, fsspec, filelock; ray when staging
on a cluster).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from rlaunch.paths import ATTEMPT_ENV, join
from rlaunch.render import LaunchDocument, LaunchError, load_launch
from rlaunch.render.skyrl import skyrl_cli_args
from rlaunch.spec.catalog import is_eval_entrypoint, resolve
from rlaunch.runtimes.skyrl_eval import dump_folder, eval_manifest, local_dump_root
from rlaunch.runtimes.skyrl_rehearse import RehearsalError, rehearse
from rlaunch.runtimes.skyrl_outputs import OutputError, terminal_manifest, write_manifest
from rlaunch.runtimes.staging import (
    Staged,
    StagingError,
    inputs_of,
    local_overrides,
    node_cache_root,
    rewrites,
    stage_inputs,
)
from rlaunch.runtimes.staging_ray import on_a_ray_cluster, stage_on_nodes
from rlaunch.runtimes.skyrl_pathlib_outputs import (
    CWD,
    LOGS,
    STORE_LOGS,
    collect,
    collect_on_nodes,
    work_root,
)
from rlaunch.runtimes.worker_env import (
    WorkerEnvError,
    driver_environment,
    publish,
    with_setup_hook,
    withdraw,
    worker_values,
)
from rlaunch.runtimes.trained_from import (
    RUN_EXPORT,
    StaleCheckpoints,
    check_root,
    launch_exports,
    record_root,
)
from rlaunch.store import StoreError

USAGE = "usage: python -m rlaunch.runtimes.skyrl LAUNCH_YAML [--check-handoffs | --rehearse]"
CHECK_FLAG = "--check-handoffs"
REHEARSE_FLAG = "--rehearse"
"""A rehearsal (docs/rehearsal.md): the model shrunk, the rows bounded, a few steps of SkyRL's
own loop with CPU workers and engines (rlaunch.runtimes.skyrl_rehearse, skyrl_cpu)."""
HANDOFF_MODULE_ENV = "RLAUNCH_SKYRL_HANDOFF_MODULE"
"""What runs as the handoff check: a module (default rlaunch.runtimes.skyrl_handoff), or a
script path ending `.py` (run as `python <path>`, so its own folder is importable)."""
_WANDB_URL = re.compile(r"https://[\w.-]*wandb\.\w+/\S+/runs/\w+")
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def say(message: str) -> None:
    print(f"rlaunch: {message}", flush=True)


def handoff_command(overrides: list[str]) -> list[str]:
    module = os.environ.get(HANDOFF_MODULE_ENV) or "rlaunch.runtimes.skyrl_handoff"
    if module.endswith(".py"):
        return [sys.executable, module, *overrides]
    return [sys.executable, "-m", module, *overrides]


def stage(launch: LaunchDocument) -> list[Staged]:
    """On the Ray cluster the job runs in (RAY_ADDRESS set, ray importable): every alive node;
    otherwise this node."""
    items = inputs_of(launch.inputs)
    if on_a_ray_cluster():
        return stage_on_nodes(items, say=say)
    return stage_inputs(items, say=say)


def workers_values(launch: LaunchDocument) -> dict[str, str]:
    """What SkyRL's processes need in their environment: the launch's credentials (by name,
    from this environment) and its W&B entity and project."""
    wandb = launch.execution.wandb
    return worker_values(launch.execution.env,
                         None if wandb is None else (wandb.entity, wandb.project), os.environ)


def supervise(argv: list[str], env: dict[str, str],
              on_line: Callable[[str], None] | None = None, cwd: Path | None = None) -> int:
    """Run `argv` as a child (in `cwd`), its output passed through line by line; SIGINT,
    SIGTERM and SIGHUP go to the child, and its exit status is returned (-N: killed by signal
    N)."""
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, bufsize=1, cwd=cwd)
    previous = {sig: signal.getsignal(sig) for sig in _FORWARDED}

    def forward(signum: int, frame: object) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    for sig in _FORWARDED:
        signal.signal(sig, forward)
    try:
        for line in child.stdout or ():  # a pipe: Popen(stdout=PIPE) above
            sys.stdout.write(line)
            sys.stdout.flush()
            if on_line is not None:
                on_line(line)
        return child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def move_pathlib_outputs(launch: LaunchDocument, attempt: str, work: Path) -> None:
    """SkyRL's logs and pathlib-written store files, from every node into the run's folder in
    the store (rlaunch.runtimes.skyrl_pathlib_outputs); a failure is said, not raised: the
    run's result does not depend on them."""
    attempt_uri = join(launch.artifacts.attempts_root, attempt)
    try:
        if on_a_ray_cluster():
            written = collect_on_nodes(str(work), attempt_uri, say)
        else:
            written = collect(str(work), attempt_uri)
    except (OSError, ValueError, StoreError) as err:
        say(f"SkyRL's logs and dumps not moved into the store: {type(err).__name__}: {err}")
        return
    if written:
        say(f"SkyRL's logs and dumps: {len(written)} files moved into the store, under "
            f"{join(attempt_uri, STORE_LOGS)} and where SkyRL meant them ({written[-1]})")



def skyrl_release(launch: LaunchDocument) -> str:
    """The catalogued SkyRL release the launch pins, or "" (a pin the catalog does not know: the
    adapter then assumes what every known release does, e.g. the variables any copies)."""
    runtime = launch.runtime
    found = resolve(runtime.profile, package=runtime.package,
                    commit=runtime.git.commit if runtime.git is not None else None)
    return found.version if found is not None else ""

def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    check_only = CHECK_FLAG in args
    rehearsal = REHEARSE_FLAG in args
    rest = [arg for arg in args if arg not in (CHECK_FLAG, REHEARSE_FLAG)]
    if len(rest) != 1 or rest[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        launch = load_launch(rest[0])
    except LaunchError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    attempt = os.environ.get(ATTEMPT_ENV) or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    work = work_root(node_cache_root(), launch.run.id, attempt)
    values = workers_values(launch)
    release = skyrl_release(launch)
    address = os.environ.get("RAY_ADDRESS") if on_a_ray_cluster() else None
    if address is None:
        # SkyRL starts a Ray of its own, whose processes inherit its driver's environment.
        return run(launch, check_only, attempt, work, {**os.environ, **values},
                   driver_environment(os.environ, values, key=None, cwd=str(work / CWD),
                                      release=release),
                   rehearsal=rehearsal)
    try:
        key = publish(address, values) if values else None
    except WorkerEnvError as err:
        print(f"error: {err}; SkyRL was not started", file=sys.stderr)
        return 2
    # This process's own Ray (staging) and SkyRL's driver both run the setup hook in their
    # workers: it changes into SkyRL's working folder and sets the values; SkyRL's driver holds
    # a placeholder where SkyRL would log a value.
    os.environ.update(with_setup_hook(os.environ, key, str(work / CWD)))
    if key is not None:
        say(f"{', '.join(sorted(values))} reach every Ray worker of the run through the GCS "
            f"entry {key} (rlaunch.runtimes.worker_env)")
    try:
        return run(launch, check_only, attempt, work, {**os.environ, **values},
                   driver_environment(os.environ, values, key=key, cwd=None, release=release),
                   rehearsal=rehearsal)
    finally:
        if key is not None:
            withdraw(address, key)


def run(launch: LaunchDocument, check_only: bool, attempt: str, work: Path,
        env: dict[str, str], skyrl_env: dict[str, str] | None, *,
        rehearsal: bool = False) -> int:
    """Stage, check and run SkyRL; `env` is the handoff check's environment, `skyrl_env`
    SkyRL's driver's (`env` when None); `work` the node-local folder of SkyRL's pathlib outputs
    (rlaunch.runtimes.skyrl_pathlib_outputs); `rehearsal`: rehearse it
    (rlaunch.runtimes.skyrl_rehearse)."""
    try:
        staged = stage(launch)
    except (StagingError, StoreError) as err:
        print(f"error: staging: {err}", file=sys.stderr)
        return 2
    try:
        exports = launch_exports(launch)
        check_root(launch, exports)
    except (StagingError, StoreError, StaleCheckpoints) as err:
        print(f"error: {err}; SkyRL was not started", file=sys.stderr)
        return 2
    tree = launch.skyrl_tree()
    local = local_overrides(tree, staged)
    for line in rewrites(tree, local):
        say(f"staged path {line}")
    program = ["-m", launch.runtime.entrypoint]
    if rehearsal:
        runs = {item.path for item in staged
                if launch.inputs[item.slot].type == RUN_EXPORT}
        try:
            local, program = rehearse(local, exports=runs, seed=launch.run.seed,
                                      cache=node_cache_root() / "rehearsal", say=say,
                                      entrypoint=launch.runtime.entrypoint)
        except RehearsalError as err:
            print(f"error: {err}; SkyRL was not started", file=sys.stderr)
            return 2
    evaluates = is_eval_entrypoint(launch.runtime.profile, launch.runtime.entrypoint)
    if evaluates:
        # SkyRL's eval dumps with pathlib under export_path: a local folder, read back after.
        dump_root = local_dump_root(node_cache_root(), launch.run.id, attempt)
        local["trainer"]["export_path"] = str(dump_root)
        say(f"eval stage: SkyRL dumps its results under {dump_folder(dump_root)}; the report "
            f"goes to {launch.artifacts.export_root}")
    # SkyRL writes its logs with pathlib under log_path: a local folder, moved to the store after.
    local["trainer"]["log_path"] = str(work / LOGS)
    overrides = skyrl_cli_args(local)
    say(f"handoff check: {' '.join(handoff_command([])[1:])} ({len(overrides)} overrides)")
    checked = supervise(handoff_command(overrides), env)
    if checked != 0:
        print(f"error: the handoff check refused this launch (exit {checked}); SkyRL was not "
              "started: fix what it names above", file=sys.stderr)
        return 2
    if check_only:
        say("handoff check passed; --check-handoffs: SkyRL not started")
        return 0
    try:
        if not evaluates:  # an eval trains nothing: no checkpoint to record
            record_root(launch, exports, writer="rlaunch.runtimes.skyrl")
    except (StoreError, OSError) as err:
        print(f"error: cannot record what the checkpoint root is trained from: {err}",
              file=sys.stderr)
        return 2
    argv_out = [sys.executable, *program, *overrides]
    say(f"starting SkyRL: {argv_out[1]} {argv_out[2]} ({len(overrides)} overrides)")
    urls: list[str] = []
    started = time.monotonic()
    (work / CWD).mkdir(parents=True, exist_ok=True)
    driver_env = env if skyrl_env is None else skyrl_env
    if rehearsal:
        # Ray folds lines of several processes that differ only in their numbers into one
        # ("[repeated 2x across cluster]"): a rehearsal's log keeps every worker's and engine's.
        driver_env = {**driver_env, "RAY_DEDUP_LOGS": "0"}
    try:
        status = supervise(argv_out, driver_env,
                           on_line=lambda line: urls.extend(_WANDB_URL.findall(line)),
                           cwd=work / CWD)
    finally:
        move_pathlib_outputs(launch, attempt, work)
    if status != 0:
        say(f"SkyRL exited with status {status} after {time.monotonic() - started:.0f} s")
        return status if status > 0 else 128 - status
    wandb_url = urls[-1] if urls else None
    try:
        if evaluates:
            manifest = eval_manifest(launch, dump_folder(dump_root), attempt_id=attempt,
                                     wandb_url=wandb_url)
        else:
            manifest = terminal_manifest(launch, attempt_id=attempt, wandb_url=wandb_url)
        write_manifest(launch.artifacts.terminal_manifest, manifest)
    except (OutputError, StoreError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if evaluates:
        say(f"done: eval of {manifest['rows']} samples, mean reward "
            f"{manifest['mean_reward']:.4f}; report {manifest['report_path']}; manifest "
            f"{launch.artifacts.terminal_manifest}")
        return 0
    say(f"done: step {manifest['final_step']}; export {manifest['export_path']} "
        f"{manifest['export_sha256']}; manifest {launch.artifacts.terminal_manifest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
