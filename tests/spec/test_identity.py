"""Identities, fingerprints and derived sizes."""

from __future__ import annotations

import copy

from rlaunch.spec import fingerprint, identity, parse_spec
from rlaunch.spec.examples import worked_example


def _spec(**changes):
    data = worked_example("colocated-1x8")
    for path, value in changes.items():
        node = data
        *parents, leaf = path.split("__")
        for key in parents:
            node = node[key]
        node[leaf] = value
    return parse_spec(data)


def test_fingerprint_ignores_where_the_run_runs_but_not_what_it_is():
    base = _spec()
    moved = _spec(execution__executor="iris", execution__cluster="us-east", execution__address=None)
    assert moved.fingerprint == base.fingerprint
    assert _spec(execution__priority="high").fingerprint == base.fingerprint
    assert _spec(execution__store_prefix="s3://other").fingerprint == base.fingerprint
    assert _spec(version="2026.12.01").fingerprint == base.fingerprint
    assert _spec(seed=7).fingerprint != base.fingerprint
    assert _spec(role_plan__batch__train_batch_size=512).fingerprint != base.fingerprint
    assert _spec(execution__allocation__num_nodes=2).fingerprint != base.fingerprint


def test_artifact_fingerprint_follows_content_and_dependencies():
    data = worked_example("colocated-1x8")
    base = parse_spec(data).model
    renamed = copy.deepcopy(data)
    renamed["model"]["name"] = "other-name"
    assert fingerprint(parse_spec(renamed).model) == fingerprint(base)
    repinned = copy.deepcopy(data)
    repinned["model"]["revision"] = "0" * 40
    assert fingerprint(parse_spec(repinned).model) != fingerprint(base)
    assert identity(base) == "qwen2.5-1.5b-instruct@2026.11.01"


def test_built_artifact_fingerprint_changes_when_a_dependency_is_repinned():
    data = worked_example("colocated-1x8")
    dataset = data["train_data"]["deps"]["source"]
    built = {
        "type": "built", "name": "filtered", "version": "dev", "kind": "dataset",
        "builder": "filter", "config": {"min_len": 3}, "deps": {"source": dataset},
        "facts": None, "rows": None,
    }
    data["train_data"] = built
    first = parse_spec(data)
    data["train_data"]["deps"]["source"] = {**dataset, "revision": "1" * 40}
    second = parse_spec(data)
    assert fingerprint(first.train_data) != fingerprint(second.train_data)
    assert [path for path, _ in first.artifacts()] == [
        "model", "tokenizer", "train_data", "train_data.deps.source", "eval_data",
        "eval_data.deps.source",
    ]


def test_derived_sizes():
    spec = parse_spec(worked_example("megatron-moe-5x8"))
    plan = spec.role_plan
    assert plan.policy.world_size == 32
    policy = plan.policy_parallelism
    assert (policy.world, policy.model_parallel, policy.replica, policy.data_parallel) == (
        32, 4, 4, 8)
    assert policy.dp_equation() == "policy DP 8 = world 32 / (TP 4 x PP 1 x CP 1)"
    assert plan.rollout.gpus_per_engine == 8
    assert plan.rollout.total_gpus == 8
    assert spec.execution.allocation.total_gpus == 40
    assert "batch" not in plan.geometry()
    assert spec.handoff_kinds() == {
        "model": "model", "tokenizer": "model", "train_data": "dataset", "eval_data": "dataset",
    }
