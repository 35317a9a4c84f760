"""Property: preflight never raises, and no rule crashes, on any spec that parses."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from preflight.helpers import example
from rlaunch.preflight import INTERNAL_CODE, World, format_text, run_preflight
from rlaunch.preflight.engine.registry import set_path
from rlaunch.preflight.rules.smoke import smoke_of
from rlaunch.spec import SpecError, parse_spec
from rlaunch.spec.examples import WORKED_EXAMPLES

CHOICES: dict[str, list[Any]] = {
    "role_plan.strategy": ["fsdp", "megatron"],
    "role_plan.rollout.backend": ["vllm", "sglang"],
    "role_plan.rollout.weight_sync_backend": ["nccl", "gloo"],
    "algorithm.advantage_estimator": ["grpo", "gae", "rloo", "reinforce++"],
    "algorithm.kl.kl_estimator_type": ["k1", "k2", "k3", "abs"],
    "resume.mode": ["none", "latest", "from_path"],
    "logger": ["console", "wandb"],
    "execution.priority": ["low", "normal", "high"],
    "execution.executor": ["local", "ray", "iris", "dry-run", "slurm", ""],
    "runtime.profile": ["skyrl", "smoke", "verl", ""],
    "model.type": ["hf_model"],
}
NULLABLE = [
    "role_plan.reference", "role_plan.critic", "eval_data", "reference_model", "critic_model",
    "execution.address", "execution.cluster", "execution.wandb", "execution.store_prefix",
    "resume.path", "train_data.rows", "model.facts.num_experts", "algorithm.max_training_steps",
    "role_plan.batch.critic_mini_batch_size", "runtime.package", "runtime.git",
]
EXTRA: dict[str, list[Any]] = {
    "role_plan.critic": [{"colocated_with_policy": True, "num_nodes": 1, "num_gpus_per_node": 8},
                         {"colocated_with_policy": False, "num_nodes": 0,
                          "num_gpus_per_node": 8}],
    "role_plan.reference": [{"colocated_with_policy": False, "num_nodes": 3,
                             "num_gpus_per_node": -1}],
    "runtime.git": [{"repo": "NovaSky-AI/SkyRL", "commit": "c" * 40},
                    {"repo": "x", "commit": "main"}],
    "execution.wandb": [{"entity": "", "project": "p"}],
    "execution.credentials": [["HF_TOKEN"], ["bad name", "WANDB_API_KEY"], []],
    "resume.compatible_runtimes": [["sha256:" + "a" * 64, "nope"]],
    "runtime.required_fixes": [["inference-ep-validation", "unknown"]],
}
INTERESTING_INTS = [0, -1, -7, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 42, 64, 128, 7473, 10**9]
INTERESTING_TEXT = [
    "", "main", "dev", "x-dev", "2026.02.30", "2026.11.29.1", "a" * 40, "A" * 40, "/home/me",
    "~", "$HOME", "file:///tmp/x", "gs://b/p", "../x", "Qwen/Qwen", "sim", "H100", "http://h:1",
]


def leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        found = []
        for key, child in value.items():
            found += leaves(child, f"{path}.{key}" if path else key)
        return found
    return [(path, value)]


def mutation(path: str, value: Any) -> st.SearchStrategy[Any]:
    last = path.rsplit(".", 1)[-1]
    if path in CHOICES:
        return st.sampled_from(CHOICES[path])
    if last in ("type", "kind", "schema_version"):
        return st.just(value)
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.one_of(st.sampled_from(INTERESTING_INTS), st.integers(-10, 300))
    if isinstance(value, float):
        return st.sampled_from([0.0, -1.0, 1e-6, 0.2, 1.0])
    if isinstance(value, str):
        return st.one_of(st.sampled_from(INTERESTING_TEXT), st.text(max_size=12))
    return st.just(value)


@st.composite
def spec_documents(draw: st.DrawFn) -> dict[str, Any]:
    data = example(draw(st.sampled_from(sorted(WORKED_EXAMPLES))))
    if draw(st.booleans()):
        smoke_of(draw(st.sampled_from(["", "role_plan.strategy", "allocation.num_nodes"])),
                 draw(st.sampled_from(["megatron", 3])))(data)
    candidates = [(p, v) for p, v in leaves(data) if not p.startswith("smoke_of")]
    for path, value in draw(st.lists(st.sampled_from(candidates), max_size=12)):
        set_path(data, path, draw(mutation(path, value)))
    for path in draw(st.lists(st.sampled_from(NULLABLE + list(EXTRA)), max_size=4)):
        try:
            set_path(data, path, draw(st.sampled_from([None, *EXTRA.get(path, [])])))
        except (KeyError, TypeError):
            pass  # the parent was nulled by an earlier mutation
    return data


def odd_world(record: dict[str, Any] | None, checkpoint: str | None) -> World:
    return World(
        env={"HF_TOKEN": "x"},
        git_dirty=None,
        ledger=lambda name, version: record,
        checkpoint_runtime=lambda root: checkpoint,
        smoke_record=lambda name, version: record,
        store_prefix="/srv/rlaunch-store",
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=spec_documents(),
    record=st.sampled_from([None, {}, {"fingerprint": "sha256:x", "status": "failed"}]),
    checkpoint=st.sampled_from([None, "sha256:" + "1" * 64, ""]),
)
def test_preflight_never_raises_on_a_spec_that_parses(
    document: dict[str, Any], record: dict[str, Any] | None, checkpoint: str | None
) -> None:
    try:
        spec = parse_spec(document, "generated")
    except SpecError:
        assume(False)
        return
    for scope, world in (("spec", None), ("all", odd_world(record, checkpoint))):
        found = run_preflight(spec, scope=scope, world=world)
        crashed = [finding.message for finding in found if finding.code == INTERNAL_CODE]
        assert crashed == []
        assert [f.severity for f in found] == sorted((f.severity for f in found),
                                                     key=lambda s: s != "error")
        json.dumps([finding.to_dict() for finding in found])
        format_text(found, "generated", spec.identity)
