"""Resume integrity (rlaunch/preflight/rules/resume.py): a resume checked against its root.

The unit cases give the rules a listing; tests/store/test_resume_roots.py lists real roots on a
local store and on moto's S3 server."""

from __future__ import annotations

from preflight.helpers import example, findings, messages
from rlaunch.ledger.checkpoints import CheckpointListing
from rlaunch.preflight import World
from rlaunch.preflight.rules.runtime import SMOKE_RUNTIME

ROOT = "gs://rlaunch-example/store/colocated-1x8/2026.11.29/checkpoints"
KINDS = ("model", "optim", "extra_state")


def shards(world: int, *, role: str = "policy", skip: tuple[str, ...] = ()) -> list[str]:
    names = [f"{role}/{kind}_world_size_{world}_rank_{rank}.pt"
             for rank in range(world) for kind in KINDS]
    return [name for name in [*names, f"{role}/fsdp_config.json"] if name not in skip]


def world_with(files: list[str] | None, *, pointer: str | None = "8", steps=(4, 8),
               root: str = ROOT) -> World:
    step = int(pointer) if pointer and pointer.isdigit() else None
    listing = CheckpointListing(root, pointer, tuple(steps), step,
                                None if files is None else frozenset(files))
    return World(checkpoints=lambda path: listing if path == root else None, git_dirty=False,
                 store_prefix="/srv/s")


LATEST = {"resume.mode": "latest"}
COMPLETE = ["trainer_state.pt", "data.pt", *shards(8)]


def test_a_complete_root_of_this_world_resumes() -> None:
    world = world_with(COMPLETE)
    for code in ("RES001", "RES002", "RES003", "RES004"):
        assert findings(example(edits=LATEST), code, world=world) == []


def test_nothing_is_read_without_resume() -> None:
    asked: list[str] = []
    world = World(checkpoints=lambda path: asked.append(path), git_dirty=False,
                  store_prefix="/srv/s")
    assert messages(example(edits={"resume.mode": "none"}), "RES002", world=world) == []
    assert asked == []


def test_a_pointer_to_a_missing_step_is_refused() -> None:
    world = world_with(None, pointer="12", steps=(4, 8))
    assert messages(example(edits=LATEST), "RES001", world=world) == [
        f"{ROOT}/latest_ckpt_global_step.txt names step 12, but {ROOT}/global_step_12 does not"
        " exist (step folders: 4, 8); the resume fails with 'Checkpoint path not found' once"
        " the job is up"
    ]


def test_a_pointer_that_is_no_number_is_refused() -> None:
    world = world_with(None, pointer="eight")
    [finding] = findings(example(edits=LATEST), "RES001", world=world)
    assert finding.message == (f"{ROOT}/latest_ckpt_global_step.txt holds 'eight', not a step"
                               " number; SkyRL's load_checkpoints would fail on int() of it")
    assert finding.fix == (
        "Start from a fresh root (resume.mode none, or a new version), or set resume.mode"
        " from_path with resume.path at a complete step folder this plan can load.")


def test_a_step_folder_missing_one_rank_s_shard_is_refused() -> None:
    world = world_with(["trainer_state.pt", "data.pt",
                        *shards(8, skip=("policy/optim_world_size_8_rank_3.pt",))])
    assert messages(example(edits=LATEST), "RES002", world=world) == [
        f"{ROOT}/global_step_8 is incomplete: 1 file(s) the resume loads are missing"
        " (policy/optim_world_size_8_rank_3.pt); it was cut short while being written or copied"
    ]


def test_missing_files_are_named_six_at_a_time_and_counted_without_listing_them() -> None:
    """Half the ranks gone: the first six named, the rest counted. A shard whose name claims a
    world of a billion ranks is counted too, not listed (listing it took billions of steps)."""
    half = [name for name in shards(8) if "_rank_" not in name or int(name[-4]) < 4]
    world = world_with(["trainer_state.pt", "data.pt", *half])
    assert messages(example(edits=LATEST), "RES002", world=world) == [
        f"{ROOT}/global_step_8 is incomplete: 12 file(s) the resume loads are missing"
        " (policy/model_world_size_8_rank_4.pt, policy/optim_world_size_8_rank_4.pt,"
        " policy/extra_state_world_size_8_rank_4.pt, policy/model_world_size_8_rank_5.pt,"
        " policy/optim_world_size_8_rank_5.pt, policy/extra_state_world_size_8_rank_5.pt and 6"
        " more); it was cut short while being written or copied"]
    claim = "policy/model_world_size_1000000000_rank_0.pt"
    world = world_with(["trainer_state.pt", "data.pt", *shards(8), claim])
    assert messages(example(edits=LATEST), "RES002", world=world) == [
        f"{ROOT}/global_step_8 is incomplete: 2999999999 file(s) the resume loads are missing"
        " (policy/optim_world_size_1000000000_rank_0.pt,"
        " policy/extra_state_world_size_1000000000_rank_0.pt,"
        " policy/model_world_size_1000000000_rank_1.pt,"
        " policy/optim_world_size_1000000000_rank_1.pt,"
        " policy/extra_state_world_size_1000000000_rank_1.pt,"
        " policy/model_world_size_1000000000_rank_2.pt and 2999999993 more); it was cut short"
        " while being written or copied"]


def test_a_step_folder_without_its_trainer_state_is_refused() -> None:
    world = world_with(shards(8))
    assert messages(example(edits=LATEST), "RES002", world=world) == [
        f"{ROOT}/global_step_8 is incomplete: 1 file(s) the resume loads are missing"
        " (trainer_state.pt); it was cut short while being written or copied"
    ]


def test_a_step_without_data_pt_warns_that_the_data_restarts() -> None:
    world = world_with(["trainer_state.pt", *shards(8)])
    [finding] = findings(example(edits=LATEST), "RES002", world=world)
    assert (finding.severity, finding.message) == (
        "warning", f"{ROOT}/global_step_8 has no data.pt: SkyRL resumes the weights and"
        " optimizer, but its dataloader starts from the beginning of the data")


def test_shards_of_another_world_size_are_refused() -> None:
    world = world_with(["trainer_state.pt", "data.pt", *shards(16)])
    assert messages(example(edits=LATEST), "RES003", world=world) == [
        f"{ROOT}/global_step_8 holds FSDP shards written for world size 16, but this plan's"
        " policy world is policy world 8 = policy.num_nodes 1 x policy.num_gpus_per_node 8:"
        " SkyRL's FSDP load_checkpoint opens model_world_size_8_rank_<r>.pt, which is not there"
    ]
    # Complete for its own world, so RES002 does not pile on.
    assert messages(example(edits=LATEST), "RES002", world=world) == []


def test_a_save_left_past_the_pointer_beyond_the_interval_is_refused() -> None:
    world = world_with(COMPLETE, steps=(4, 8, 30))
    assert messages(example(edits=LATEST), "RES004", world=world) == [
        f"{ROOT} holds global_step_30, 22 steps past the pointer's step 8 (ckpt_interval 10):"
        " SkyRL's validate_consistency_for_latest_checkpoint refuses the root as inconsistent"
        " (a save of an earlier attempt, or one cut short, left it)"
    ]
    # Within one interval SkyRL resumes from the pointer (the newer folder may be a cut save).
    assert messages(example(edits=LATEST), "RES004", world=world_with(COMPLETE, steps=(8, 18))) \
        == []


def test_a_resume_path_step_folder_is_checked_too() -> None:
    folder = "gs://rlaunch-example/old/global_step_40"
    world = World(checkpoints=lambda path: CheckpointListing(
        folder, None, (40,), 40, frozenset(["trainer_state.pt", "data.pt", *shards(4)]))
        if path == folder else None, git_dirty=False, store_prefix="/srv/s")
    spec = example(edits={"resume.mode": "from_path", "resume.path": folder})
    assert messages(spec, "RES003", world=world) == [
        f"{folder} holds FSDP shards written for world size 4, but this plan's policy world is"
        " policy world 8 = policy.num_nodes 1 x policy.num_gpus_per_node 8: SkyRL's FSDP"
        " load_checkpoint opens model_world_size_8_rank_<r>.pt, which is not there"
    ]


SMOKE = {"resume.mode": "latest", "runtime": SMOKE_RUNTIME}
SMOKE_FILES = ("model.safetensors", "optimizer.pt", "rng.pt")


def smoke_ranks(count: int) -> list[str]:
    return [f"policy_rank{rank}/{name}" for rank in range(count) for name in SMOKE_FILES]


def test_smoke_roots_are_checked_in_their_own_layout() -> None:
    complete = ["trainer_state.json", *smoke_ranks(8)]
    for code in ("RES002", "RES003"):
        assert messages(example(edits=SMOKE), code, world=world_with(complete)) == []
    cut = world_with(complete[:-1])
    assert messages(example(edits=SMOKE), "RES002", world=cut) == [
        f"{ROOT}/global_step_8 is incomplete: 1 file(s) the resume loads are missing"
        " (policy_rank7/rng.pt); it was cut short while being written or copied"
    ]
    other_plan = world_with(["trainer_state.json", *smoke_ranks(4)])
    assert messages(example(edits=SMOKE), "RES003", world=other_plan) == [
        f"{ROOT}/global_step_8 holds policy ranks 0, 1, 2, 3, but this plan's policy world is"
        " policy world 8 = policy.num_nodes 1 x policy.num_gpus_per_node 8: each rank loads"
        " policy_rank<r>/ of its own rank"
    ]
