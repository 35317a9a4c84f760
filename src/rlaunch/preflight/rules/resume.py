"""Resume integrity: a run that resumes is checked against what its checkpoint root holds.

`resume.mode latest` loads the step the root's pointer names; `from_path` loads the step folder
`resume.path` names. What the runtime then reads, and where it fails after the GPUs are up:

SkyRL 0.3.0 (`RayPPOTrainer.load_checkpoints`, skyrl/train/trainer.py; `save_checkpoints` writes
the pointer last): the pointer `latest_ckpt_global_step.txt` names `global_step_N`, which must
exist ("Checkpoint path not found"); `trainer_state.pt` must be there ("Trainer state file not
found"); `data.pt` is optional (without it the dataloader starts from the beginning, a warning).
`validate_consistency_for_latest_checkpoint` (skyrl/train/utils/trainer_utils.py) refuses a root
whose highest step folder is more than `ckpt_interval` steps past the pointer. Each FSDP rank
loads `policy/{model,optim,extra_state}_world_size_{W}_rank_{r}.pt` for its own world size W
(`FSDPStrategy.load_checkpoint`, skyrl/backends/skyrl_train/distributed/fsdp_strategy.py), so
shards of another world size, or a missing rank, fail on load. Megatron's distributed checkpoints
reshard on load and are not checked shard by shard here.

The smoke runtime (rlaunch.runtimes.smoke.checkpoint): `trainer_state.json` and one
`policy_rank<r>/` per policy rank with model.safetensors, optimizer.pt and rng.pt.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rlaunch.ledger.checkpoints import CheckpointListing
from rlaunch.paths import run_paths
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule

_SHARD = re.compile(r"(model|optim|extra_state)_world_size_(\d+)_rank_(\d+)\.pt")
_SHARD_KINDS = ("model", "optim", "extra_state")
_SMOKE_RANK_FILES = ("model.safetensors", "optimizer.pt", "rng.pt")
_SMOKE_RANK = re.compile(r"policy_rank(\d+)/.*")
_FRESH = ("Start from a fresh root (resume.mode none, or a new version), or set resume.mode"
          " from_path with resume.path at a complete step folder this plan can load.")


def _listing(check: Check) -> CheckpointListing | None:
    """What the resume would load from, or None (no resume, no world, nothing there)."""
    spec, world = check.spec, check.world
    prefix = check.store_prefix
    if world is None or prefix is None:
        return None
    if spec.resume.mode == "latest":
        return world.checkpoints(run_paths(prefix, spec.name, spec.version).checkpoint_root)
    if spec.resume.mode == "from_path" and spec.resume.path:
        return world.checkpoints(spec.resume.path)
    return None


def _where(listing: CheckpointListing) -> str:
    """The step folder resumed: the pointer's under the root, or the resume.path folder."""
    root = listing.root.rstrip("/")
    return root if listing.pointer is None else f"{root}/global_step_{listing.step}"


def _example_root(files: list[str], pointer: str | None = "8", steps=(4, 8)) -> dict:
    return {"root": "/srv/rlaunch-store/qwen/2026.11.29/checkpoints", "pointer": pointer,
            "steps": list(steps), "step": 8, "files": files}


_COMPLETE_8 = ["trainer_state.pt", "data.pt", "policy/fsdp_config.json"] + [
    f"policy/{kind}_world_size_8_rank_{rank}.pt" for rank in range(8) for kind in _SHARD_KINDS]


@rule(
    "RES001",
    "A resumed root's pointer names a step folder that exists.",
    scope="world",
    example=Example(edits={"resume.mode": "latest"}, world={"checkpoints": _example_root(
        [], pointer="12", steps=(4, 8)) | {"step": 12, "files": None}}),
)
def pointer_names_a_step(check: Check) -> Iterator[Finding]:
    listing = _listing(check)
    if listing is None or check.spec.resume.mode != "latest" or listing.pointer is None:
        return
    pointer_file = f"{listing.root.rstrip('/')}/latest_ckpt_global_step.txt"
    if listing.step is None:
        yield error(
            "RES001", ("resume.mode",),
            f"{pointer_file} holds {listing.pointer[:40]!r}, not a step number; SkyRL's"
            " load_checkpoints would fail on int() of it",
            _FRESH,
        )
    elif listing.files is None:
        shown = ", ".join(map(str, listing.steps)) or "none"
        yield error(
            "RES001", ("resume.mode",),
            f"{pointer_file} names step {listing.step}, but {listing.root.rstrip('/')}/"
            f"global_step_{listing.step} does not exist (step folders: {shown}); the resume"
            " fails with 'Checkpoint path not found' once the job is up",
            _FRESH,
        )


def _smoke_ranks(files: frozenset[str]) -> set[int]:
    """The policy ranks a smoke runtime step folder holds (its `policy_rank<r>/` folders)."""
    return {int(m.group(1)) for name in files if (m := _SMOKE_RANK.fullmatch(name))}


SHOWN = 6
"""Missing files a RES002 message names; it counts the rest."""


def _skyrl_fsdp_problems(files: frozenset[str], role: str
                         ) -> tuple[list[str], int, set[int]]:
    """What a SkyRL FSDP `role/` folder lacks (the first SHOWN files, and how many in all), and
    the world sizes its shards were written for. The count is worked out, not listed: a shard's
    name may claim a world of a billion ranks."""
    shards = [m for name in files if (m := _SHARD.fullmatch(name.removeprefix(f"{role}/")))
              and name.startswith(f"{role}/")]
    worlds = {int(m.group(2)) for m in shards}
    missing: list[str] = []
    count = 0
    if f"{role}/fsdp_config.json" not in files:
        missing.append(f"{role}/fsdp_config.json")
        count += 1
    for world in sorted(worlds):
        present = {(m.group(1), rank) for m in shards
                   if int(m.group(2)) == world and (rank := int(m.group(3))) < world}
        count += world * len(_SHARD_KINDS) - len(present)
        rank = 0  # names in rank order, until SHOWN: past the ranks present in a few steps
        while len(missing) < SHOWN and rank < world:
            missing += [f"{role}/{kind}_world_size_{world}_rank_{rank}.pt"
                        for kind in _SHARD_KINDS if (kind, rank) not in present]
            rank += 1
    if not shards:
        missing.append(f"{role}/model_world_size_<W>_rank_<r>.pt (no shard at all)")
        count += 1
    return missing[:SHOWN], count, worlds


@rule(
    "RES002",
    "The resumed step folder is complete: every file the runtime loads is there.",
    scope="world",
    example=Example(edits={"resume.mode": "latest"}, world={"checkpoints": _example_root(
        [name for name in _COMPLETE_8 if name != "policy/optim_world_size_8_rank_3.pt"])}),
)
def step_folder_complete(check: Check) -> Iterator[Finding]:
    listing = _listing(check)
    if listing is None or listing.files is None:
        return
    spec, files = check.spec, listing.files
    unlisted = 0  # missing files counted but not in `missing` (a role's past its first SHOWN)
    if spec.runtime.profile == "smoke":
        missing = [] if "trainer_state.json" in files else ["trainer_state.json"]
        ranks = sorted(_smoke_ranks(files))
        missing += [f"policy_rank{rank}/{name}" for rank in ranks for name in _SMOKE_RANK_FILES
                    if f"policy_rank{rank}/{name}" not in files]
        if not ranks:
            missing.append("policy_rank<r>/ (no rank at all)")
    else:
        missing = [] if "trainer_state.pt" in files else ["trainer_state.pt"]
        roles = ["policy"] + (["critic"] if check.plan.critic is not None else [])
        for role in roles:
            if check.parallelism(role).megatron:
                if not any(name.startswith(f"{role}/") for name in files):
                    missing.append(f"{role}/ (the Megatron checkpoint)")
                continue
            shown, lacking, _ = _skyrl_fsdp_problems(files, role)
            unlisted += lacking - len(shown)
            missing += shown
        if "data.pt" not in files and not missing:
            yield warning(
                "RES002", ("resume.mode",),
                f"{_where(listing)} has no data.pt: SkyRL resumes the weights and optimizer, but"
                " its dataloader starts from the beginning of the data",
                "Resume from a step saved with its data.pt to keep the data order, or accept the"
                " restart of the data.",
            )
    if missing:
        count = len(missing) + unlisted
        shown = ", ".join(missing[:SHOWN]) + (f" and {count - SHOWN} more" if count > SHOWN
                                              else "")
        yield error(
            "RES002", ("resume.mode", "resume.path"),
            f"{_where(listing)} is incomplete: {count} file(s) the resume loads are"
            f" missing ({shown}); it was cut short while being written or copied",
            _FRESH,
        )


@rule(
    "RES003",
    "The resumed shards were written for this plan's policy world size.",
    scope="world",
    example=Example(edits={"resume.mode": "latest"}, world={"checkpoints": _example_root(
        [name.replace("world_size_8", "world_size_16") for name in _COMPLETE_8])}),
)
def shards_match_the_plan(check: Check) -> Iterator[Finding]:
    listing = _listing(check)
    if listing is None or listing.files is None or not check.roles_ok:
        return
    spec, files = check.spec, listing.files
    world = check.parallelism("policy").world
    if spec.runtime.profile == "smoke":
        ranks = _smoke_ranks(files)
        # The ranks 0 .. world - 1, compared without building them (a world may be a typo).
        if ranks and (len(ranks) != world or max(ranks) != world - 1):
            yield error(
                "RES003", ("role_plan.policy", "resume.mode"),
                f"{_where(listing)} holds policy ranks {_ranks(ranks)}, but this plan's policy"
                f" world is {check.parallelism('policy').world_equation()}: each rank loads"
                " policy_rank<r>/ of its own rank",
                "Resume with the role plan that wrote it, or start from a fresh root"
                " (resume.mode none, or a new version).",
            )
        return
    if check.parallelism("policy").megatron:
        return
    written = _skyrl_fsdp_problems(files, "policy")[2]
    if written and written != {world}:
        sizes = ", ".join(map(str, sorted(written)))
        yield error(
            "RES003", ("role_plan.policy", "resume.mode"),
            f"{_where(listing)} holds FSDP shards written for world size {sizes}, but this plan's"
            f" policy world is {check.parallelism('policy').world_equation()}: SkyRL's FSDP"
            f" load_checkpoint opens model_world_size_{world}_rank_<r>.pt, which is not there",
            f"Resume with the policy world that wrote them ({sizes} GPUs), or start from a fresh"
            " root (resume.mode none, or a new version): FSDP shards do not reshard on load.",
        )


def _ranks(ranks: set[int]) -> str:
    shown = sorted(ranks)
    return ", ".join(map(str, shown[:8])) + (" ..." if len(shown) > 8 else "")


@rule(
    "RES004",
    "No step folder is further past the pointer than SkyRL's consistency check allows.",
    scope="world",
    example=Example(edits={"resume.mode": "latest"}, world={"checkpoints": _example_root(
        _COMPLETE_8, steps=(4, 8, 30))}),
)
def no_save_left_half_written(check: Check) -> Iterator[Finding]:
    listing = _listing(check)
    spec = check.spec
    if listing is None or spec.resume.mode != "latest" or listing.step is None \
            or spec.runtime.profile == "smoke" or not listing.steps:
        return
    highest, interval = max(listing.steps), spec.checkpoint.ckpt_interval
    if highest - listing.step > interval:
        yield error(
            "RES004", ("resume.mode", "checkpoint.ckpt_interval"),
            f"{listing.root.rstrip('/')} holds global_step_{highest}, {highest - listing.step}"
            f" steps past the pointer's step {listing.step} (ckpt_interval {interval}): SkyRL's"
            " validate_consistency_for_latest_checkpoint refuses the root as inconsistent (a save"
            " of an earlier attempt, or one cut short, left it)",
            f"Move global_step_{highest} (and any step past {listing.step}) out of the root, or"
            " start from a fresh root (resume.mode none, or a new version).",
        )
