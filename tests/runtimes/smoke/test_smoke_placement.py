"""Role plan -> placement groups (rlaunch/runtimes/smoke/placement.py), and a real Ray refusal."""

from __future__ import annotations

import time

import pytest

from rlaunch.runtimes.smoke.config import Geometry, SmokeConfigError
from rlaunch.runtimes.smoke.placement import PlacementError, build_layout, reserve
from rlaunch.spec.parallelism import Parallelism


def geometry(policy_nodes: int = 1, policy_gpus_per_node: int = 2, **changes) -> Geometry:
    policy = Parallelism("policy", "fsdp", nodes=policy_nodes, gpus_per_node=policy_gpus_per_node,
                         tensor=1, pipeline=1, context=1, expert=1, expert_tensor=1, sequence=1)
    base = dict(policy=policy, use_reference=True, ref_nodes=1, ref_gpus_per_node=2,
                colocate_all=True, colocate_policy_ref=True, num_engines=2, engine_tp=1,
                engine_pp=1, engine_dp=1)
    return Geometry(**{**base, **changes})


def test_colocated_roles_share_one_group_and_one_actor_per_gpu() -> None:
    layout = build_layout(geometry())
    assert layout.describe() == (
        "colocated-node0 (2 x GPU, STRICT_PACK): gpu0=policy:0,ref:0,rollout:0; "
        "gpu1=policy:1,ref:1,rollout:1"
    )


def test_disaggregated_engines_get_their_own_groups() -> None:
    layout = build_layout(geometry(colocate_all=False, num_engines=1, engine_tp=2))
    assert layout.describe() == (
        "policy-node0 (2 x GPU, STRICT_PACK): gpu0=policy:0,ref:0; gpu1=policy:1,ref:1\n"
        "rollout-engine0 (2 x GPU, STRICT_PACK): gpu2=rollout:0; gpu3=rollout:1"
    )


def test_multi_node_roles_get_one_group_per_node() -> None:
    layout = build_layout(geometry(policy_nodes=2, ref_nodes=2, colocate_all=False,
                                   colocate_policy_ref=False, num_engines=1, engine_tp=2))
    assert [(g.name, g.bundles, g.strategy) for g in layout.groups] == [
        ("policy-node0", 2, "STRICT_PACK"), ("policy-node1", 2, "STRICT_PACK"),
        ("ref-node0", 2, "STRICT_PACK"), ("ref-node1", 2, "STRICT_PACK"),
        ("rollout-engine0", 2, "STRICT_PACK"),
    ]
    assert [w.policy_rank for w in layout.workers[:4]] == [0, 1, 2, 3]
    assert [w.ref_rank for w in layout.workers[4:8]] == [0, 1, 2, 3]
    assert layout.total_gpus == 10


def test_no_reference_without_kl() -> None:
    layout = build_layout(geometry(use_reference=False))
    assert all(w.ref_rank is None for w in layout.workers)


def test_colocate_all_needs_equal_footprints() -> None:
    with pytest.raises(SmokeConfigError, match=r"colocate_all needs rollout GPUs == policy GPUs: "
                                               r"1 engines x \(TP 1 x PP 1 x DP 1\) = 1 != policy "
                                               r"1 x 2 = 2"):
        build_layout(geometry(num_engines=1))


def test_a_plan_ray_cannot_place_fails_after_the_timeout_naming_plan_and_resources(
    ray_head,
) -> None:
    layout = build_layout(geometry(policy_gpus_per_node=8, ref_gpus_per_node=8, num_engines=8))
    began = time.monotonic()
    with pytest.raises(PlacementError) as caught:
        reserve(layout, run_id="too-big@dev", timeout_s=2.0)
    assert time.monotonic() - began >= 2.0
    message = str(caught.value)
    assert message.startswith(
        "cannot place the role plan of too-big@dev: placement group(s) not ready after 2 s: "
        "colocated-node0 (8 x {GPU: 1, CPU: 0.1}, STRICT_PACK). The plan needs 8 simulated "
        "GPU(s) in 1 group(s) (each group on one node):\ncolocated-node0 (8 x GPU, STRICT_PACK):"
    )
    assert "The cluster has GPU 4, CPU 2 in total, GPU 4, CPU 2 free." in message
    assert "SKYRL_RAY_PG_TIMEOUT_IN_S" in message
    # The refused groups were removed: the cluster is free again.
    deadline = time.monotonic() + 10
    while ray_head.available_resources().get("GPU") != 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray_head.available_resources().get("GPU") == 4


def test_a_plan_that_fits_is_reserved(ray_head) -> None:
    from ray.util.placement_group import remove_placement_group

    groups = reserve(build_layout(geometry()), run_id="fits@dev", timeout_s=30)
    assert len(groups) == 1
    assert ray_head.available_resources().get("GPU", 0) == 2
    remove_placement_group(groups[0])
