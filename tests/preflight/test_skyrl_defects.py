"""Issue 12's defects, one test each: the plan that showed it, what SkyRL 0.3.0 does with it
(file and function under skyrl/), and the finding preflight now gives.

tests/contract/test_preflight_vs_skyrl.py runs SkyRL's own validate_cfg on random plans; these
tests pin the runtime behaviour beyond validate_cfg that the source shows."""

from __future__ import annotations

import math

from preflight.helpers import example, findings
from rlaunch.preflight import run_preflight
from rlaunch.preflight.rules.batch_tail import prompt_stride
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import reference_role

B = "role_plan.batch"


def severities(data: dict, *codes: str) -> list[tuple[str, str]]:
    found = run_preflight(parse_spec(data, "defect"))
    return [(f.severity, f.code) for f in found if f.code in codes]


def test_defect1_an_engine_spanning_nodes_runs_so_it_is_a_warning() -> None:
    """skyrl/train/entrypoints/main_base.py get_colocate_pg and
    skyrl/backends/skyrl_train/inference_servers/setup.py create_inference_servers place every
    engine in 1-GPU bundles of one PACK group; vLLM's default `ray` executor
    (config InferenceEngineConfig.distributed_executor_backend) spans nodes. Only the `mp`
    executor under colocate_all is refused (utils.validate_inference_engine_cfg), which rlaunch
    never renders. 1 engine of TP 4 on nodes of 1 GPU: a warning about TP, no error."""
    data = example(edits={
        "role_plan.policy.num_nodes": 4, "role_plan.policy.num_gpus_per_node": 1,
        "role_plan.reference.num_nodes": 4, "role_plan.reference.num_gpus_per_node": 1,
        "role_plan.rollout.num_engines": 1, "role_plan.rollout.tensor_parallel_size": 4,
        "execution.allocation.num_nodes": 4, "execution.allocation.gpus_per_node": 1,
        f"{B}.train_batch_size": 64, f"{B}.policy_mini_batch_size": 16,
    })
    found = run_preflight(parse_spec(data, "tp4-on-1-gpu-nodes"))
    assert [(f.severity, f.code) for f in found if f.is_error] == []
    [tp] = [f for f in found if f.code == "GEO008"]
    assert (tp.severity, tp.message) == (
        "warning",
        "rollout TP 4 is wider than a node of execution.allocation.gpus_per_node 1: such an"
        " engine all-reduces over the network in every layer. SkyRL runs it (vLLM's ray executor"
        " spans nodes), but generation is slow",
    )
    # PP and engine DP across nodes: no finding at all (a stage boundary, separate servers).
    pp = example("disaggregated-8x8-tp8", {"role_plan.rollout.pipeline_parallel_size": 2,
                                           "role_plan.rollout.num_engines": 2})
    assert severities(pp, "GEO008") == []


def test_defect2_idle_gpus_are_a_warning_and_packing_is_modelled() -> None:
    """skyrl/backends/skyrl_train/workers/worker.py PPORayActorGroup._initiate_actors asks Ray
    for num_nodes bundles of num_gpus_per_node GPUs (PACK); the engines' bundles are 1 GPU. 10
    GPUs on 3 nodes of 4: policy 2 x 4 (two 4-GPU bundles) and 2 engines fit, 2 GPUs idle."""
    data = example(edits={
        "role_plan.placement.colocate_all": False,
        "role_plan.policy.num_nodes": 2, "role_plan.policy.num_gpus_per_node": 4,
        "role_plan.reference.num_nodes": 2, "role_plan.reference.num_gpus_per_node": 4,
        "role_plan.rollout.num_engines": 2,
        "execution.allocation.num_nodes": 3, "execution.allocation.gpus_per_node": 4,
    })
    assert severities(data, "ALLOC001", "ALLOC002", "ALLOC003") == [("warning", "ALLOC001")]
    # A reference of 1 x 2 on its own beside the policy on 1 x 2: 4 GPUs are one whole node of 4,
    # and Ray packs both 2-GPU bundles onto it (old ALLOC002: "not whole nodes of 4").
    packed = example(edits={
        "role_plan.placement.colocate_all": False, "role_plan.placement.colocate_policy_ref": False,
        "role_plan.policy.num_nodes": 1, "role_plan.policy.num_gpus_per_node": 2,
        "role_plan.reference": reference_role(False, 1, 2),
        "role_plan.rollout.num_engines": 4,
        "execution.allocation.num_nodes": 2, "execution.allocation.gpus_per_node": 4,
        f"{B}.train_batch_size": 64, f"{B}.policy_mini_batch_size": 16,
    })
    assert severities(packed, "ALLOC001", "ALLOC002", "ALLOC003") == []


def test_defect3_the_reference_states_its_own_parallelism() -> None:
    """Megatron policy TP 2, reference alone on 1 GPU. skyrl/train/utils/utils.py
    validate_batch_sizes asserts `ref_world_size % (pp * cp * tp) == 0` on trainer.ref's sizes;
    rendering the policy's TP 2 there made SkyRL reject a plan preflight passed. The reference
    now says its sizes: TP 2 on 1 GPU is GEO019, TP 1 passes."""
    def alone(tp: int):
        def edit(data: dict) -> None:
            plan = data["role_plan"]
            plan["policy"]["tensor_parallel_size"] = 2
            plan["reference"] = reference_role(False, 1, 1, tp=tp, ep=8)
            plan["placement"]["colocate_policy_ref"] = False
            data["execution"]["allocation"]["num_nodes"] = 6
        return edit

    [finding] = findings(example("megatron-moe-5x8", alone(2)), "GEO019")
    assert finding.message == (
        "reference world reference.num_nodes 1 x reference.num_gpus_per_node 1 = 1 is not"
        " divisible by its TP 2 x PP 1 x CP 1 = 2 (reference DP 0)"
    )
    assert findings(example("megatron-moe-5x8", alone(1)), "GEO019") == []
    # The FSDP twin: SP 2 on 1 GPU passes validate_batch_sizes (it floors 1 // 2 = 0) and
    # would fail in skyrl/backends/skyrl_train/workers/worker.py Worker.init_worker_process_group,
    # building a (0, 2) device mesh. Preflight names it before start-up.
    fsdp = example(edits={"role_plan.placement.colocate_all": False,
                          "role_plan.placement.colocate_policy_ref": False,
                          "role_plan.reference": dict(reference_role(False, 1, 1),
                                                      sequence_parallel_size=2)})
    assert [f.message for f in findings(fsdp, "GEO019")] == [
        "reference world reference.num_nodes 1 x reference.num_gpus_per_node 1 = 1 is not"
        " divisible by its SP 2 (reference DP 0)"
    ]


def test_defect4_a_colocated_reference_needs_the_policy_total_not_its_shape() -> None:
    """skyrl/train/trainer.py RayPPOTrainer.build_models, colocate_all: asserts
    num_policy_gpus == num_ref_gpus (totals only). Same 8 GPUs as 2 x 4: passes; 2 x 8: error."""
    same_total = example(edits={"role_plan.reference.num_nodes": 2,
                                "role_plan.reference.num_gpus_per_node": 4})
    assert findings(same_total, "GEO014") == []
    other_total = example(edits={"role_plan.reference.num_nodes": 2})
    assert severities(other_total, "GEO014") == [("error", "GEO014")]


def test_defect5_the_tail_drop_stride_is_skyrls_own_arithmetic() -> None:
    """skyrl/train/trainer.py RayPPOTrainer._remove_tail_data keeps a multiple of
    lcm_dp_size // gcd(lcm_dp_size, n_samples_per_prompt) prompts; then
    skyrl/train/dataset/preprocess.py compute_prompt_mini_batch_boundaries asserts the prompt
    count equals train_batch_size, so a trimmed step crashes."""
    for lcm in range(1, 49):
        for samples in range(1, 17):
            # The definition in _remove_tail_data's comment: the smallest m > 0 with
            # (m * n_samples_per_prompt) % lcm_dp_size == 0.
            smallest = next(m for m in range(1, lcm + 1) if m * samples % lcm == 0)
            assert prompt_stride(lcm, samples) == smallest == lcm // math.gcd(lcm, samples)
    # 12 prompts x 8 samples over DP 8: 96 sequences shard evenly, nothing is dropped (the old
    # BATCH009 claimed 4 prompts per step were).
    assert severities(example(edits={f"{B}.train_batch_size": 12,
                                     f"{B}.policy_mini_batch_size": 4}), "BATCH009") == []
    # 12 prompts x 1 sample over DP 8: _remove_tail_data keeps 8, the step asserts 8 == 12.
    trimmed = example(edits={f"{B}.train_batch_size": 12, f"{B}.policy_mini_batch_size": 12,
                             f"{B}.n_samples_per_prompt": 1})
    assert severities(trimmed, "BATCH009") == [("error", "BATCH009")]


def test_defect6_batch_rules_that_need_no_dp_still_report() -> None:
    """Policy DP undefined (FSDP SP 3 on 8 GPUs, GEO005): SkyRL's validate_batch_sizes checks
    train >= mini and train % mini before any DP; so does preflight, in the same run."""
    data = example(edits={"role_plan.policy.sequence_parallel_size": 3,
                          f"{B}.train_batch_size": 32})
    assert severities(data, "GEO005", "BATCH002", "BATCH003") == [
        ("error", "GEO005"), ("error", "BATCH002"), ("error", "BATCH003"),
    ]


def test_defect7_the_dataset_tail_warning_offers_usable_sizes() -> None:
    """GSM8K train, 7,473 rows = 3 x 47 x 53. skyrl/train/utils/trainer_utils.py
    build_dataloader shuffles with drop_last=True: each epoch leaves out a fresh random 49."""
    [tail] = findings(example(), "BATCH010")
    assert (tail.severity, tail.message) == (
        "warning",
        "train_data gsm8k-train-prompts@2026.11.30 has 7473 rows = 29 batches of"
        " train_batch_size 256 + 49: each epoch trains on 7424 prompts and leaves out 49 (0.7%),"
        " a fresh random draw every epoch (SkyRL's train dataloader shuffles and drops the last"
        " partial batch)",
    )
    assert tail.fix == (
        "No row is lost for good, so this is usually fine. To leave out fewer, within the batch"
        " rules: train_batch_size 276 with policy_mini_batch_size 92 leaves out 21;"
        " train_batch_size 324 with policy_mini_batch_size 36 leaves out 21; train_batch_size"
        " 152 with policy_mini_batch_size 76 leaves out 25."
    )
    # Every size offered passes every batch rule.
    for size, mini in ((276, 92), (324, 36), (152, 76)):
        offered = example(edits={f"{B}.train_batch_size": size,
                                 f"{B}.policy_mini_batch_size": mini})
        found = run_preflight(parse_spec(offered, "offered"))
        assert [f.code for f in found if f.code.startswith("BATCH") and f.is_error] == []
