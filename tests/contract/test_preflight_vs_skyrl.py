"""Property, per release: preflight against each SkyRL release's own `validate_cfg`, on random
role plans pinned to that release (0.3.0 and 0.4.0, each in its own contract env).

Hypothesis draws role plans (strategy, policy, reference and critic placement and parallelism,
rollout engines, placement flags, batch sizes, KL mode, allocation) around the worked example
`colocated-1x8`. Each plan runs through spec-scope preflight in this process and is rendered;
then ONE subprocess (tests/contract/skyrl_harness.py in the contract env) builds
every rendered `skyrl` subtree with SkyRL's loader and runs its `validate_cfg`.

- Preflight accepts nothing SkyRL rejects.
- Where SkyRL rejects, preflight rejects too for a reason validate_cfg checks (an error code
  outside RUNTIME_ONLY), so no miss hides behind an allocation error.
- Where preflight errors and SkyRL accepts, every error code is in RUNTIME_ONLY: the runtime
  step of SkyRL (or vLLM / Ray under it) that fails on such a plan, after validate_cfg.

The confusion matrix of each release is printed (pytest -s shows it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract.skyrl_env import RELEASES, pin_release
from contract.test_skyrl_contract import HARNESS, contract_python, subtree_for_skyrl
from rlaunch.preflight import run_preflight
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import QWEN25_1_5B, worked_example

CASES = 150

RUNTIME_ONLY = {
    "ALLOC001": "more GPUs than allocated: Ray never makes the placement groups ready, and"
    " get_ray_pg_ready_with_timeout (main_base.get_colocate_pg, PPORayActorGroup."
    "_initiate_actors) raises at start-up",
    "ALLOC002": "a placement-group bundle fits no node's free GPUs: its group is never ready,"
    " get_ray_pg_ready_with_timeout raises at start-up",
    "ALLOC003": "a bundle of more GPUs than a node has is unplaceable:"
    " get_ray_pg_ready_with_timeout raises at start-up",
    "GEO005": "FSDP world not divisible by SP: validate_batch_sizes floors world // SP, then"
    " Worker.init_worker_process_group builds a (world // SP, SP) device mesh that does not"
    " match the world size and fails at worker start-up",
    "GEO014": "colocate_all with a colocated reference (or critic) of another GPU total:"
    " RayPPOTrainer.build_models asserts num_policy_gpus == num_ref_gpus at start-up, after the"
    " shared placement group is reserved (under colocate_policy_ref validate_cfg asserts it)",
    "GEO017": "rollout TP and the model's KV heads do not divide one another: vLLM's"
    " QKVParallelLinear fails when the engine loads the model",
    "GEO019": "FSDP reference world not divisible by its SP: validate_batch_sizes floors it,"
    " then Worker.init_worker_process_group fails to build the reference's device mesh at"
    " start-up (for Megatron validate_batch_sizes asserts it)",
    "BATCH009": "RayPPOTrainer._remove_tail_data trims the step's prompts to a multiple of the"
    " stride, then compute_prompt_mini_batch_boundaries asserts the count equals"
    " train_batch_size: the first training step raises",
}

POWERS = (1, 2, 4, 8)


def runtime_only(code: str, plan: dict[str, Any]) -> bool:
    """Whether `code` on `plan` is a failure after validate_cfg (RUNTIME_ONLY), not one it
    checks: GEO019 is validate_batch_sizes' own assert for Megatron, GEO014 validate_cfg's own
    for colocate_policy_ref, GEO005 its division by DP 0 when SP exceeds the world."""
    if code == "GEO019":
        return plan["strategy"] == "fsdp"
    if code == "GEO014":
        return plan["placement"]["colocate_all"]
    if code == "GEO005":
        worlds = [plan[role]["num_nodes"] * plan[role]["num_gpus_per_node"]
                  for role in ("policy", "critic") if plan[role] is not None]
        return min(worlds) >= plan["policy"]["sequence_parallel_size"]
    return code in RUNTIME_ONLY


# Runtime-only errors that leave every DP size defined: where SkyRL rejects a plan, preflight
# must also give an error validate_cfg mirrors, unless one of its errors leaves a DP undefined
# (GEO005, GEO019: validate_batch_sizes then checks batches against a floored DP that no mesh
# has, and preflight reports the undefined DP instead).
DP_KEEPING = {"ALLOC001", "ALLOC002", "ALLOC003", "GEO014", "GEO017", "BATCH009"}


@st.composite
def trainer_sizes(draw: st.DrawFn, strategy: str) -> dict[str, int]:
    megatron = strategy == "megatron"
    return {
        "tensor_parallel_size": draw(st.sampled_from((1, 2, 4))) if megatron else 1,
        "pipeline_parallel_size": draw(st.sampled_from((1, 2))) if megatron else 1,
        "context_parallel_size": draw(st.sampled_from((1, 2))) if megatron else 1,
        "expert_parallel_size": 1,
        "expert_tensor_parallel_size": 1,
        "sequence_parallel_size": 1 if megatron else draw(st.sampled_from((1, 1, 2, 3, 4))),
    }


@st.composite
def footprint(draw: st.DrawFn) -> dict[str, int]:
    return {"num_nodes": draw(st.integers(1, 4)),
            "num_gpus_per_node": draw(st.sampled_from(POWERS))}


@st.composite
def plans(draw: st.DrawFn, release: str = "0.3.0") -> dict[str, Any]:
    """A RunSpec (as data) pinned to `release`, with a random role plan, KL mode and
    allocation."""
    data = pin_release(worked_example("colocated-1x8"), release)
    strategy = draw(st.sampled_from(("fsdp", "megatron")))
    colocate_all = draw(st.booleans())
    colocate_policy_ref = draw(st.booleans())
    policy = {**draw(footprint()), **draw(trainer_sizes(strategy))}
    kl = draw(st.sampled_from(("loss", "reward", "none")))
    algorithm = data["algorithm"]
    algorithm["kl"]["use_kl_loss"] = kl == "loss"
    algorithm["kl"]["use_kl_in_reward"] = kl == "reward"
    if kl == "reward":
        algorithm["kl"]["kl_estimator_type"] = "k1"
    reference = None
    if kl != "none":
        colocated = colocate_all or colocate_policy_ref
        shape = ({key: policy[key] for key in ("num_nodes", "num_gpus_per_node")}
                 if colocated and draw(st.booleans()) else draw(footprint()))
        reference = {"colocated_with_policy": colocated, **shape,
                     **draw(trainer_sizes(strategy))}
    critic = None
    batch = data["role_plan"]["batch"]
    batch["critic_mini_batch_size"] = None
    if strategy == "fsdp" and draw(st.integers(0, 4)) == 0:
        algorithm["advantage_estimator"] = "gae"
        data["critic_model"] = dict(QWEN25_1_5B, name="qwen2.5-1.5b-critic")
        shape = ({key: policy[key] for key in ("num_nodes", "num_gpus_per_node")}
                 if colocate_all else draw(footprint()))
        critic = {"colocated_with_policy": colocate_all, **shape}
        batch["critic_mini_batch_size"] = draw(st.sampled_from((4, 8, 16, 32, 64)))
    rollout = data["role_plan"]["rollout"]
    rollout.update(
        num_engines=draw(st.integers(1, 8)),
        tensor_parallel_size=draw(st.sampled_from((1, 2, 3, 4))),
        pipeline_parallel_size=draw(st.sampled_from((1, 2))),
        data_parallel_size=draw(st.sampled_from((1, 2))),
    )
    if colocate_all and draw(st.booleans()):
        # Make the rollout match the policy's GPUs often, so colocated plans get past GEO007.
        rollout.update(num_engines=policy["num_nodes"] * policy["num_gpus_per_node"],
                       tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1)
    data["role_plan"].update(strategy=strategy, policy=policy, reference=reference,
                             critic=critic)
    data["role_plan"]["placement"] = {"colocate_all": colocate_all,
                                      "colocate_policy_ref": colocate_policy_ref}
    train = draw(st.sampled_from((4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 256)))
    batch.update(
        train_batch_size=train,
        # Mostly a divisor of the train batch, as a recipe would have it; sometimes any size.
        policy_mini_batch_size=draw(st.one_of(
            st.sampled_from((1, 2, 4)).map(lambda parts: max(1, train // parts)),
            st.sampled_from((1, 2, 4, 8, 16, 32, 64)),
        )),
        micro_train_batch_size_per_gpu=draw(st.sampled_from((1, 1, 2, 4, 8))),
        n_samples_per_prompt=draw(st.sampled_from((1, 2, 3, 4, 8))),
    )
    width = draw(st.sampled_from(POWERS))
    used = sum(role["num_nodes"] * role["num_gpus_per_node"]
               for role in (policy, reference, critic)
               if role is not None and (role is policy or not role["colocated_with_policy"]))
    if not colocate_all:
        used += (rollout["num_engines"] * rollout["tensor_parallel_size"]
                 * rollout["pipeline_parallel_size"] * rollout["data_parallel_size"])
    # Mostly the nodes the roles need (the GPUs they use, rounded up to whole nodes).
    nodes = draw(st.one_of(st.just(-(-used // width)), st.integers(1, 6)))
    data["execution"]["allocation"].update(num_nodes=nodes, gpus_per_node=width)
    return data


def collect_cases(
    drawn: st.SearchStrategy[dict[str, Any]], count: int, prefix: str, kept: str
) -> dict[str, dict[str, Any]]:
    """`case id -> {errors: [codes], skyrl: subtree, <kept>: spec[kept]}` for `count` specs
    drawn deterministically."""
    cases: dict[str, dict[str, Any]] = {}

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(drawn)
    def collect(data: dict[str, Any]) -> None:
        spec = parse_spec(data, prefix)
        errors = sorted({f.code for f in run_preflight(spec) if f.is_error})
        cases[f"{prefix}-{len(cases):04d}"] = {"errors": errors, "skyrl": subtree_for_skyrl(spec),
                                               kept: data[kept]}

    collect()
    return cases


def drawn_cases(release: str = "0.3.0") -> dict[str, dict[str, Any]]:
    """CASES role plans (`plan`: the drawn role plan), pinned to `release`."""
    cases = collect_cases(plans(release), CASES, "drawn", "role_plan")
    for case in cases.values():
        case["plan"] = case.pop("role_plan")
    return cases


def run_skyrl(cases: dict[str, dict[str, Any]], workdir: Path,
              release: str = "0.3.0") -> dict[str, Any]:
    python = contract_python(release)
    cases_path = workdir / "cases.yaml"
    payload = {case_id: {"skyrl": case["skyrl"], "cli_args": None}
               for case_id, case in cases.items()}
    cases_path.write_text(yaml.dump(payload, Dumper=yaml.CSafeDumper, sort_keys=False))
    result_path = workdir / "result.json"
    done = subprocess.run([python, str(HARNESS), str(cases_path), str(result_path)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"the SkyRL harness crashed:\n{done.stdout}\n{done.stderr}"
    return json.loads(result_path.read_text())


@pytest.mark.parametrize("release", RELEASES)
def test_preflight_against_skyrl_validate_cfg_on_random_role_plans(
    tmp_path: Path, release: str
) -> None:
    cases = drawn_cases(release)
    report = run_skyrl(cases, tmp_path, release)
    matrix: Counter[str] = Counter()
    missed, hidden, unexplained = {}, {}, {}
    runtime_codes: Counter[str] = Counter()
    for case_id, case in cases.items():
        outcome = report["results"][case_id]
        skyrl_ok, errors = outcome["accepted"], case["errors"]
        matrix[f"preflight {'accepts' if not errors else 'errors'},"
               f" SkyRL {'accepts' if skyrl_ok else 'rejects'}"] += 1
        if not errors and not skyrl_ok:
            missed[case_id] = (outcome["error"], case["plan"])
        if errors and not skyrl_ok and all(
            runtime_only(code, case["plan"]) and code in DP_KEEPING for code in errors
        ):
            hidden[case_id] = (outcome["error"], errors, case["plan"])
        if errors and skyrl_ok:
            runtime_codes.update(errors)
            if not all(runtime_only(code, case["plan"]) for code in errors):
                unexplained[case_id] = (errors, case["plan"])
    print(f"\n{len(cases)} drawn role plans, SkyRL {report['skyrl_version']} validate_cfg in"
          f" {report['check_seconds']} s (import {report['import_seconds']} s):", file=sys.stderr)
    for cell in sorted(matrix):
        print(f"  {cell}: {matrix[cell]}", file=sys.stderr)
    print(f"  runtime-only codes where SkyRL's validate_cfg accepts: {dict(runtime_codes)}",
          file=sys.stderr)
    assert missed == {}, f"preflight accepts these, SkyRL {release} rejects them"
    assert hidden == {}, "SkyRL rejects these, preflight only for runtime reasons:\n" + "\n".join(
        f"{case_id}: {error} / {codes}" for case_id, (error, codes, _) in hidden.items())
    assert unexplained == {}, "preflight errors with no listed runtime failure; SkyRL accepts"
    # The draw reaches every cell that exists: a property over one cell would prove little.
    assert set(matrix) == {
        "preflight accepts, SkyRL accepts", "preflight errors, SkyRL rejects",
        "preflight errors, SkyRL accepts",
    }
    assert report["skyrl_version"] == release
