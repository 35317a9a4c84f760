"""The resume rules on real checkpoint roots, listed through the store: a local directory and
moto's S3 server, each complete and then broken by hand (a pointer to a missing step, one rank's
shard deleted, shards of another world size). The SkyRL roots have the layout SkyRL 0.3.0's
`save_checkpoints` and `FSDPStrategy.save_checkpoint` write; the smoke roots are written by the
smoke runtime's own checkpoint code (rlaunch.runtimes.smoke.checkpoint)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import fsspec
import pytest

from rlaunch.paths import run_paths
from rlaunch.preflight import World, run_preflight
from rlaunch.preflight.commands import with_ledger
from rlaunch.preflight.rules.runtime import SMOKE_RUNTIME
from rlaunch.runtimes.smoke import checkpoint as smoke_checkpoint
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example

KINDS = ("model", "optim", "extra_state")


def skyrl_root(fs: fsspec.AbstractFileSystem, root: str, *, world: int, step: int = 8) -> None:
    """A SkyRL FSDP root: step folders 4 and `step`, the pointer written last."""
    for saved in (4, step):
        folder = f"{root}/global_step_{saved}"
        for rank in range(world):
            for kind in KINDS:
                fs.pipe(f"{folder}/policy/{kind}_world_size_{world}_rank_{rank}.pt", b"shard")
        fs.pipe(f"{folder}/policy/fsdp_config.json", b'{"world_size": %d}' % world)
        fs.pipe(f"{folder}/trainer_state.pt", b"state")
        fs.pipe(f"{folder}/data.pt", b"data")
    fs.pipe(f"{root}/latest_ckpt_global_step.txt", str(step).encode())


def resume_findings(prefix: str, spec_data: dict) -> list[str]:
    spec_data["execution"]["store_prefix"] = prefix
    spec_data["resume"]["mode"] = "latest"
    spec = parse_spec(spec_data, "test")
    world = with_ledger(World(git_dirty=False), spec, {})
    return [f"{f.code} {f.message}" for f in run_preflight(spec, scope="all", world=world)
            if f.code.startswith("RES") or f.code in ("PRE000", "EXEC009")]


def local_fs(tmp_path: Path) -> tuple[str, fsspec.AbstractFileSystem, Callable[[str], str]]:
    prefix = str(tmp_path / "store")
    return prefix, fsspec.filesystem("file", auto_mkdir=True), lambda path: path


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path: Path):
    """`(prefix, filesystem, path of a URL inside it)` for a local store and for moto's S3."""
    if request.param == "local":
        yield local_fs(tmp_path)
        return
    server = request.getfixturevalue("s3_server")
    prefix = server.prefix()
    with server.applied():
        yield prefix, server.filesystem(), lambda url: url.split("://", 1)[1]


def test_skyrl_roots_complete_and_broken_by_hand(store) -> None:
    prefix, fs, inside = store
    spec = worked_example("colocated-1x8")
    root = run_paths(prefix, spec["name"], spec["version"]).checkpoint_root
    skyrl_root(fs, inside(root), world=8)
    assert resume_findings(prefix, worked_example("colocated-1x8")) == []

    fs.rm(inside(f"{root}/global_step_8/policy/optim_world_size_8_rank_3.pt"))
    assert resume_findings(prefix, worked_example("colocated-1x8")) == [
        f"RES002 {root}/global_step_8 is incomplete: 1 file(s) the resume loads are missing"
        " (policy/optim_world_size_8_rank_3.pt); it was cut short while being written or copied"
    ]

    fs.pipe(inside(f"{root}/latest_ckpt_global_step.txt"), b"12")
    assert resume_findings(prefix, worked_example("colocated-1x8")) == [
        f"RES001 {root}/latest_ckpt_global_step.txt names step 12, but {root}/global_step_12 does"
        " not exist (step folders: 4, 8); the resume fails with 'Checkpoint path not found' once"
        " the job is up"
    ]

    fs.rm(inside(root), recursive=True)
    skyrl_root(fs, inside(root), world=16)
    assert resume_findings(prefix, worked_example("colocated-1x8")) == [
        f"RES003 {root}/global_step_8 holds FSDP shards written for world size 16, but this"
        " plan's policy world is policy world 8 = policy.num_nodes 1 x policy.num_gpus_per_node"
        " 8: SkyRL's FSDP load_checkpoint opens model_world_size_8_rank_<r>.pt, which is not"
        " there"
    ]


def test_a_root_the_smoke_runtime_wrote(tmp_path: Path) -> None:
    prefix = str(tmp_path / "store")
    spec = worked_example("colocated-1x8")
    root = Path(run_paths(prefix, spec["name"], spec["version"]).checkpoint_root)
    root.mkdir(parents=True)
    for step in (2, 4):
        staging = smoke_checkpoint.staging_dir(root, step)
        for rank in range(8):
            for name in ("model.safetensors", "optimizer.pt", "rng.pt"):
                (staging / f"policy_rank{rank}").mkdir(exist_ok=True)
                (staging / f"policy_rank{rank}" / name).write_bytes(b"x")
        smoke_checkpoint.commit(root, step, staging, {"step": step}, keep=-1)

    def smoke_spec() -> dict:
        data = worked_example("colocated-1x8")
        data["runtime"] = dict(SMOKE_RUNTIME)
        return data

    assert resume_findings(prefix, smoke_spec()) == []
    (root / "global_step_4" / "policy_rank5" / "optimizer.pt").unlink()
    assert resume_findings(prefix, smoke_spec()) == [
        f"RES002 {root}/global_step_4 is incomplete: 1 file(s) the resume loads are missing"
        " (policy_rank5/optimizer.pt); it was cut short while being written or copied"
    ]
