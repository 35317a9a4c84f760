"""The SkyRL contract, per release: every spec preflight accepts renders a `skyrl` subtree that
the pinned SkyRL release's own loader parses and its own `validate_cfg` accepts. Each catalogued
release (0.3.0, 0.4.0) runs the whole contract with every spec pinned to it, in its own contract
env (scripts/skyrl-contract-env RELEASE).

The specs: the worked examples, plus fixed variations of them (other estimators, KL placements,
critic, sequence and pipeline parallelism, no eval data, resume from a path, multi-turn, fully
async). Only those `rlaunch.preflight.run_preflight` accepts are checked (the worked examples
named in the docs must be among them), together with a grid of batch sizes and parallel sizes
over the three examples (648 specs, about 450 of which preflight accepts): every one preflight
accepts must pass SkyRL too. That is where a preflight more lenient than SkyRL would show.

All subtrees go into one YAML file, and ONE subprocess (tests/contract/skyrl_harness.py, in the
release's venv of scripts/skyrl-contract-env: CPython 3.11, the real torch and ray) builds each
with SkyRL's own `SkyRLTrainConfig.from_dict_config` (the named cases also with
`from_cli_overrides`, the entrypoint's path, from `rlaunch.render.skyrl_cli_args`), then runs
`validate_cfg`. The logger is
console there: with `wandb`, SkyRL's validation reads WANDB_API_KEY from the environment, a
launch-time fact, not a config one.

A negative case proves the test can fail: a subtree with a train batch that the policy mini batch
does not divide is rejected by SkyRL itself.
"""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from contract.skyrl_env import RELEASES, contract_python, pin_release
from rlaunch.preflight import run_preflight
from rlaunch.render import launch_document, skyrl_cli_args
from rlaunch.spec import RunSpec, parse_spec
from rlaunch.spec.examples import QWEN25_1_5B, reference_role, worked_example

REPO_ROOT = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).with_name("skyrl_harness.py")

DOCUMENTED_EXAMPLES = ("colocated-1x8", "disaggregated-8x8-tp8", "megatron-moe-5x8")

Edit = Callable[[dict[str, Any]], None]


def _no_eval_data(data: dict[str, Any]) -> None:
    data["eval_data"] = None


def _resume_from_path(data: dict[str, Any]) -> None:
    data["algorithm"]["max_training_steps"] = 100
    data["resume"] = {
        "mode": "from_path",
        "path": f"{data['execution']['store_prefix']}/colocated-1x8/2026.11.28/checkpoints/"
        "global_step_10",
        "compatible_runtimes": [],
    }


def _no_kl(data: dict[str, Any]) -> None:
    data["algorithm"]["kl"]["use_kl_loss"] = False
    data["role_plan"]["reference"] = None


def _kl_in_reward(data: dict[str, Any]) -> None:
    data["algorithm"]["kl"]["use_kl_loss"] = False
    data["algorithm"]["kl"]["use_kl_in_reward"] = True
    data["algorithm"]["kl"]["kl_estimator_type"] = "k1"


def _gae_with_critic(data: dict[str, Any]) -> None:
    critic = copy.deepcopy(QWEN25_1_5B)
    critic["name"] = "qwen2.5-1.5b-critic-init"
    data["critic_model"] = critic
    data["algorithm"]["advantage_estimator"] = "gae"
    data["role_plan"]["critic"] = {"colocated_with_policy": True, "num_nodes": 1,
                                   "num_gpus_per_node": 8}
    data["role_plan"]["batch"]["critic_mini_batch_size"] = 64


def _sequence_parallel_2(data: dict[str, Any]) -> None:
    data["role_plan"]["policy"]["sequence_parallel_size"] = 2


def _separate_reference(data: dict[str, Any]) -> None:
    data["role_plan"]["reference"] = reference_role(False, 4, 8)
    data["role_plan"]["placement"]["colocate_policy_ref"] = False
    data["execution"]["allocation"]["num_nodes"] = 12


def _fully_async(data: dict[str, Any]) -> None:
    data["algorithm"]["fully_async"] = True
    data["role_plan"]["batch"]["train_batch_size"] = 64


def _rloo_pipeline_2(data: dict[str, Any]) -> None:
    data["algorithm"]["advantage_estimator"] = "rloo"
    data["role_plan"]["policy"]["pipeline_parallel_size"] = 2


def _wandb_logger(data: dict[str, Any]) -> None:
    data["logger"] = "wandb"
    data["execution"]["wandb"] = {"entity": "rlaunch-lab", "project": "gsm8k-grpo"}
    data["execution"]["credentials"] = ["WANDB_API_KEY"]


def _multi_turn(data: dict[str, Any]) -> None:
    data["lengths"]["max_turns"] = 3
    data["lengths"]["max_input_length"] = 2048


def _reinforce_pp(data: dict[str, Any]) -> None:
    data["algorithm"]["advantage_estimator"] = "reinforce++"
    data["algorithm"]["kl"]["kl_loss_coef"] = 0.01
    data["algorithm"]["clip_ratio"] = 0.28


def _other_batches(data: dict[str, Any]) -> None:
    batch = data["role_plan"]["batch"]
    batch.update(train_batch_size=512, policy_mini_batch_size=128, n_samples_per_prompt=4,
                 micro_train_batch_size_per_gpu=2, micro_forward_batch_size_per_gpu=16)
    data["checkpoint"].update(ckpt_interval=5, max_ckpts_to_keep=-1, hf_save_interval=20)


def _settings(settings: dict[str, Any], **plan: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        data["settings"] = dict(settings)
        for path, value in plan.items():
            section, key = path.split("__")
            data["role_plan"][section][key] = value
    return edit


# Realistic extra settings (docs/spec-format.md, `settings`): SkyRL must hold each as written.
LORA_SETTINGS = {
    "trainer.policy.model.lora.rank": 32,
    "trainer.policy.model.lora.alpha": 64,
    "trainer.policy.model.lora.target_modules": "all-linear",
}
TUNED_SETTINGS = {
    "generator.inference_engine.gpu_memory_utilization": 0.85,
    "trainer.policy.optimizer_config.weight_decay": 0.0,
    "trainer.policy.optimizer_config.adam_betas": [0.9, 0.95],
    "trainer.policy.optimizer_config.num_warmup_steps": 10,
    "trainer.eval_interval": 10,
    "trainer.algorithm.loss_reduction": "seq_mean_token_sum_norm",
    "trainer.algorithm.max_seq_len": 1536,
    "trainer.algorithm.policy_loss_type": "gspo",
    "trainer.algorithm.off_policy_correction.tis_ratio_type": "sequence",
    "generator.sampling_params.stop": ["</answer>"],
    "generator.inference_engine.engine_init_kwargs": {"max_model_len": 2048,
                                                       "kv_cache_dtype": "fp8"},
}
OFFLOAD_SETTINGS = {
    "trainer.policy.fsdp_config.cpu_offload": True,
    "trainer.ref.fsdp_config.cpu_offload": True,
    "trainer.policy.torch_profiler_config.enable": True,
    "trainer.policy.torch_profiler_config.save_path": "/tmp/rlaunch-profiles",
    "trainer.gradient_checkpointing": True,
}
MEGATRON_SETTINGS = {
    "trainer.policy.megatron_config.moe_token_dispatcher_type": "alltoall",
    "trainer.policy.megatron_config.ddp_config.overlap_grad_reduce": True,
    "trainer.policy.model.lora.rank": 16,
    "trainer.logprobs_chunk_size": None,
    "trainer.fused_lm_head_logprob": True,
}

VARIATIONS: dict[str, tuple[str, Edit]] = {
    "colocated-no-eval-data": ("colocated-1x8", _no_eval_data),
    "colocated-resume-from-path": ("colocated-1x8", _resume_from_path),
    "colocated-no-kl": ("colocated-1x8", _no_kl),
    "colocated-kl-in-reward": ("colocated-1x8", _kl_in_reward),
    "colocated-gae-critic": ("colocated-1x8", _gae_with_critic),
    "colocated-sp2": ("colocated-1x8", _sequence_parallel_2),
    "colocated-wandb": ("colocated-1x8", _wandb_logger),
    "colocated-multi-turn": ("colocated-1x8", _multi_turn),
    "colocated-reinforce-pp": ("colocated-1x8", _reinforce_pp),
    "colocated-other-batches": ("colocated-1x8", _other_batches),
    "disaggregated-separate-ref": ("disaggregated-8x8-tp8", _separate_reference),
    "disaggregated-fully-async": ("disaggregated-8x8-tp8", _fully_async),
    "megatron-rloo-pp2": ("megatron-moe-5x8", _rloo_pipeline_2),
    "colocated-lora-settings": ("colocated-1x8", _settings(LORA_SETTINGS)),
    "colocated-tuned-settings": ("colocated-1x8", _settings(TUNED_SETTINGS)),
    "colocated-offload-profiler-settings": ("colocated-1x8", _settings(OFFLOAD_SETTINGS)),
    "megatron-settings": ("megatron-moe-5x8", _settings(MEGATRON_SETTINGS)),
}

# Settings preflight refuses, each with the code that refuses it and what SkyRL 0.3.0's own
# loader or validate_cfg says about it (so the rule is no stricter than SkyRL).
SETTINGS_REFUSED: dict[str, tuple[str, Edit, str, str]] = {
    "set001-lora-sglang": (
        "colocated-1x8", _settings(LORA_SETTINGS, rollout__backend="sglang"), "SET001",
        "AssertionError: LoRA enabled requires vLLM backend"),
    "set003-profiler-swap-offload": (
        "colocated-1x8", _settings({"trainer.policy.torch_profiler_config.enable": True,
                                    "trainer.policy.torch_profiler_config.save_path": "/tmp/p"}),
        "SET003", "is incompatible with this FSDP configuration"),
    "set006-qat-without-lora": (
        "colocated-1x8", _settings({"trainer.policy.model.fake_int4_qat.enabled": True}),
        "SET006", "currently requires LoRA"),
    "set007-fused-logprob-fsdp": (
        "colocated-1x8", _settings({"trainer.fused_lm_head_logprob": True}), "SET007",
        "ValueError: fused_lm_head_logprob=True is only supported with the Megatron backend"),
    "set007-no-chunking-fsdp": (
        "colocated-1x8", _settings({"trainer.logprobs_chunk_size": None}), "SET007",
        "ValueError: logprobs_chunk_size=None (no chunking) is only supported with the Megatron"),
    "set008-norm-without-max-seq-len": (
        "colocated-1x8", _settings({"trainer.algorithm.loss_reduction": "seq_mean_token_sum_norm"}),
        "SET008", "`trainer.algorithm.max_seq_len` must be set explicitly"),
    "set008-unknown-reduction": (
        "colocated-1x8", _settings({"trainer.algorithm.loss_reduction": "token_sum"}), "SET008",
        "AssertionError: invalid loss_reduction: token_sum"),
    "set009-merge-without-step-wise": (
        "colocated-1x8", _settings({"generator.merge_stepwise_output": True}), "SET009",
        "requires `generator.step_wise_trajectories=True`"),
    "set010-profiler-without-save-path": (
        "colocated-1x8", _settings({"trainer.policy.torch_profiler_config.enable": True,
                                    "trainer.policy.fsdp_config.cpu_offload": True}),
        "SET010", "ValueError: `torch_profiler_config.save_path` must be set"),
    "set010-profiler-stacks-without-stack": (
        "colocated-1x8", _settings({**OFFLOAD_SETTINGS,
                                    "trainer.policy.torch_profiler_config.export_type": "stacks",
                                    "trainer.policy.torch_profiler_config.with_stack": False}),
        "SET010", "requires `with_stack=true`"),
    "set011-unregistered-policy-loss": (
        "colocated-1x8", _settings({"trainer.algorithm.policy_loss_type": "ppo"}), "SET011",
        "AssertionError: invalid policy_loss_type: ppo"),
    "set011-correction-with-kl-cov": (
        "colocated-1x8", _settings({
            "trainer.algorithm.policy_loss_type": "kl_cov",
            "trainer.algorithm.off_policy_correction.tis_ratio_type": "token"}), "SET011",
        "NotImplementedError: `trainer.algorithm.off_policy_correction` doesn't support"),
    "set012-pd-without-prefill": (
        "colocated-1x8", _settings({"generator.inference_engine.enable_pd": True}), "SET012",
        "AssertionError: num_prefill must be > 0 when enable_pd=True"),
    "set012-routing-replay-without-experts": (
        "megatron-moe-5x8",
        _settings({"trainer.policy.megatron_config.moe_enable_routing_replay": True}), "SET012",
        "rollout router replay (r3) is only supported when enable_return_routed_experts is True"),
    "set013-negative-workers": (
        "colocated-1x8", _settings({"data.dataloader.num_workers": -1}), "SET013",
        "ValueError: data.dataloader.num_workers must be None or >= 0, got -1."),
    "set013-persistent-without-workers": (
        "colocated-1x8", _settings({"data.dataloader.persistent_workers": True,
                                    "data.dataloader.num_workers": 0}), "SET013",
        "persistent_workers requires num_workers > 0"),
    "set013-dppo-type": (
        "colocated-1x8", _settings({"trainer.algorithm.dppo.dppo_type": "tv"}), "SET013",
        "ValueError: Invalid DPPO type"),
    "set013-language-model-only-policy": (
        "colocated-1x8", _settings({"trainer.policy.language_model_only": True}), "SET013",
        "language_model_only should be set consistently"),
    "set009-logprobs-5": (
        "colocated-1x8", _settings({"generator.sampling_params.logprobs": 5}), "SET009",
        "ValueError: `logprobs` if set should be 0 or 1"),
}

OFFLOAD_KV = "generator.inference_engine.offload_kv_for_weight_sync"
SYNC_MODE = "trainer.policy.model.lora.sync_mode"

# Variations only a release can express (settings it added), by release.
RELEASE_VARIATIONS: dict[str, dict[str, tuple[str, Edit]]] = {
    "0.3.0": {},
    "0.4.0": {
        "disaggregated-offload-kv-0.4.0": ("disaggregated-8x8-tp8", _settings({
            OFFLOAD_KV: True, SYNC_MODE: "disk",
            "trainer.algorithm.cispo.cispo_anchor": "rollout",
            "trainer.vocab_entropy_chunk_size": 1024})),
    },
}

# Settings preflight refuses for runs on one release only (its rules say `releases`), as that
# release's validate_cfg does.
RELEASE_SETTINGS_REFUSED: dict[str, dict[str, tuple[str, Edit, str, str]]] = {
    "0.3.0": {},
    "0.4.0": {
        "set015-offload-kv-colocated": (
            "colocated-1x8", _settings({OFFLOAD_KV: True}), "SET015",
            "AssertionError: offload_kv_for_weight_sync is for non-colocated weight sync only"),
        "set015-offload-kv-lora": (
            "disaggregated-8x8-tp8", _settings({OFFLOAD_KV: True, **LORA_SETTINGS}), "SET015",
            "AssertionError: offload_kv_for_weight_sync does not support LoRA weight sync"),
        "set016-sync-mode-ram": (
            "colocated-1x8", _settings({SYNC_MODE: "ram"}), "SET016",
            "ValueError: trainer.policy.model.lora.sync_mode must be 'disk' or 'memory'"),
        "set016-memory-sync-fsdp": (
            "colocated-1x8", _settings({SYNC_MODE: "memory", **LORA_SETTINGS}), "SET016",
            "ValueError: lora.sync_mode='memory' is only implemented for"
            " trainer.strategy='megatron'"),
        "set016-memory-sync-merged": (
            "megatron-moe-5x8", _settings({SYNC_MODE: "memory", **LORA_SETTINGS}), "SET016",
            "ValueError: lora.sync_mode='memory' requires lora.rank > 0 and"
            " megatron_config.lora_config.merge_lora=false"),
    },
}


def refused_cases(release: str) -> dict[str, tuple[str, Edit, str, str]]:
    return {**SETTINGS_REFUSED, **RELEASE_SETTINGS_REFUSED[release]}


# Settings preflight only warns about (or that only vLLM refuses): SkyRL 0.3.0 accepts each; the
# last item is what SkyRL holds for the named setting afterwards.
SETTINGS_ACCEPTED: dict[str, tuple[str, Edit, str, tuple[str, Any]]] = {
    "set002-gpu-memory-1.2": (
        "colocated-1x8", _settings({"generator.inference_engine.gpu_memory_utilization": 1.2}),
        "SET002", ("generator.inference_engine.gpu_memory_utilization", 1.2)),
    "set004-lora-enforce-eager": (
        "colocated-1x8",
        _settings({**LORA_SETTINGS, "generator.inference_engine.enforce_eager": True}),
        "SET004", ("generator.inference_engine.enforce_eager", False)),
    "set005-offload-after-step-disaggregated": (
        "disaggregated-8x8-tp8",
        _settings({"trainer.policy.optimizer_config.offload_after_step": False}),
        "SET005", ("trainer.policy.optimizer_config.offload_after_step", False)),
}


def example_on(base: str, release: str) -> dict[str, Any]:
    """A worked example pinned to a SkyRL release."""
    return pin_release(worked_example(base), release)


def settings_specs(release: str = "0.3.0") -> dict[str, RunSpec]:
    specs = {}
    for case_id, (base, edit, *_) in {**refused_cases(release), **SETTINGS_ACCEPTED}.items():
        data = example_on(base, release)
        data["name"] = case_id
        edit(data)
        specs[case_id] = parse_spec(data, case_id)
    return specs


def candidate_specs(release: str = "0.3.0") -> dict[str, RunSpec]:
    specs = {name: parse_spec(example_on(name, release), name) for name in DOCUMENTED_EXAMPLES}
    for case_id, (base, edit) in {**VARIATIONS, **RELEASE_VARIATIONS[release]}.items():
        data = example_on(base, release)
        data["name"] = case_id
        edit(data)
        specs[case_id] = parse_spec(data, case_id)
    return specs


GRID_AXES = {
    "train_batch_size": (32, 64, 96, 256),
    "policy_mini_batch_size": (16, 32, 64),
    "n_samples_per_prompt": (1, 2, 8),
    "micro_train_batch_size_per_gpu": (1, 2, 8),
}


def grid_specs(release: str = "0.3.0") -> dict[str, RunSpec]:
    """Batch and parallel sizes around the worked examples: many are wrong on purpose, and
    preflight decides which are checked against SkyRL."""
    specs: dict[str, RunSpec] = {}
    for base in DOCUMENTED_EXAMPLES:
        megatron = base == "megatron-moe-5x8"
        parallel = "pipeline_parallel_size" if megatron else "sequence_parallel_size"
        for values in itertools.product(*GRID_AXES.values(), (1, 2)):
            *sizes, parallel_size = values
            data = example_on(base, release)
            data["role_plan"]["batch"].update(zip(GRID_AXES, sizes, strict=True))
            data["role_plan"]["policy"][parallel] = parallel_size
            case_id = f"grid-{base}-" + "-".join(str(value) for value in values)
            data["name"] = case_id
            specs[case_id] = parse_spec(data, case_id)
    return specs


def accepted_specs(
    candidates: dict[str, RunSpec],
) -> tuple[dict[str, RunSpec], dict[str, list[str]]]:
    """Split by spec-scope preflight: (accepted, refused with `CODE message` of each error)."""
    accepted: dict[str, RunSpec] = {}
    refused: dict[str, list[str]] = {}
    for case_id, spec in candidates.items():
        errors = [f"{f.code} {f.message}" for f in run_preflight(spec) if f.is_error]
        if errors:
            refused[case_id] = errors
        else:
            accepted[case_id] = spec
    return accepted, refused


def named_cases(release: str = "0.3.0") -> tuple[dict[str, RunSpec], dict[str, list[str]]]:
    return accepted_specs(candidate_specs(release))


def grid_cases(release: str = "0.3.0") -> dict[str, RunSpec]:
    return accepted_specs(grid_specs(release))[0]


def subtree_for_skyrl(spec: RunSpec) -> dict[str, Any]:
    prefix = spec.execution.store_prefix or "/srv/rlaunch-store"
    skyrl = launch_document(spec, store_prefix=prefix, launcher_commit=None)["skyrl"]
    skyrl["trainer"]["logger"] = "console"
    return skyrl


def broken_batch_subtree(release: str = "0.3.0") -> dict[str, Any]:
    skyrl = subtree_for_skyrl(parse_spec(example_on("colocated-1x8", release)))
    skyrl["trainer"]["train_batch_size"] = 250  # policy mini batch 64 does not divide it
    return skyrl


NEGATIVE_ID = "negative-train-batch-not-divisible"


@pytest.fixture(scope="module", params=RELEASES)
def contract(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    release: str = request.param
    named, refused = named_cases(release)
    missing = [name for name in DOCUMENTED_EXAMPLES if name not in named]
    assert not missing, f"preflight refuses documented worked examples: {refused}"
    grid = grid_cases(release)
    python = contract_python(release)
    subtrees = {case_id: subtree_for_skyrl(spec) for case_id, spec in {**named, **grid}.items()}
    subtrees[NEGATIVE_ID] = broken_batch_subtree(release)
    subtrees.update({case_id: subtree_for_skyrl(spec)
                     for case_id, spec in settings_specs(release).items()})
    cases = {
        case_id: {
            "skyrl": subtree,
            "cli_args": None if case_id in grid else skyrl_cli_args(subtree),
        }
        for case_id, subtree in subtrees.items()
    }
    case_dir = tmp_path_factory.mktemp("skyrl-cases")
    cases_path = case_dir / "cases.yaml"
    cases_path.write_text(yaml.dump(cases, Dumper=yaml.CSafeDumper, sort_keys=False))
    result_path = case_dir / "result.json"
    done = subprocess.run(
        [python, str(HARNESS), str(cases_path), str(result_path)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, f"the SkyRL harness crashed:\n{done.stdout}\n{done.stderr}"
    report = json.loads(result_path.read_text())
    report["subtrees"] = subtrees
    report["grid"] = sorted(grid)
    report["release"] = release
    print(
        f"\nSkyRL {report['skyrl_version']} on Python {report['python']}: import "
        f"{report['import_seconds']} s, load {report['load_seconds']} s, {len(subtrees)} configs "
        f"({len(grid)} from the grid) checked in {report['check_seconds']} s", file=sys.stderr,
    )
    return report


def accepted_case_ids() -> list[str]:
    """The named cases of every release (a release-only one is skipped for the others)."""
    return sorted({case_id for release in RELEASES for case_id in named_cases(release)[0]})


@pytest.mark.parametrize("release", RELEASES)
def test_preflight_accepts_every_named_case(release):
    # Otherwise that case silently drops out of the contract: fix the variation (or the rule).
    assert named_cases(release)[1] == {}


def test_the_harness_ran_the_pinned_release(contract):
    assert contract["skyrl_version"] == contract["release"]
    assert contract["python"].startswith("3.11.")
    # The real torch and ray, not stand-ins: this machine's CPU torch, and the ray SkyRL pins.
    assert contract["torch"] == "2.13.0+cpu"
    assert contract["ray"] == contract["ray_pinned"] == {"0.3.0": "2.56.0",
                                                         "0.4.0": "2.57.0"}[contract["release"]]


@pytest.mark.parametrize("case_id", accepted_case_ids())
def test_skyrl_parses_and_validates_the_rendered_subtree(contract, case_id):
    if case_id not in contract["results"]:
        pytest.skip(f"{case_id} sets what SkyRL {contract['release']} does not have")
    outcome = contract["results"][case_id]
    assert outcome["accepted"], (
        f"SkyRL {contract['release']} refused the skyrl subtree of {case_id} at "
        f"{outcome['stage']} "
        f"({outcome.get('where')}): {outcome['error']}"
    )
    # SkyRL holds exactly what was written (nothing renamed, dropped or rewritten on the way in),
    # and the command-line form the skyrl runtime passes builds the same config as the YAML.
    assert outcome["held"] == contract["subtrees"][case_id]
    assert outcome["cli_equals_yaml"] is True


def test_every_grid_spec_preflight_accepts_is_accepted_by_skyrl(contract):
    refused = {
        case_id: contract["results"][case_id]["error"]
        for case_id in contract["grid"]
        if not contract["results"][case_id]["accepted"]
    }
    assert refused == {}, f"preflight accepts these, SkyRL {contract['release']} refuses them"
    for case_id in contract["grid"]:
        assert contract["results"][case_id]["held"] == contract["subtrees"][case_id]


def test_a_broken_batch_size_is_rejected_by_skyrl_itself(contract):
    outcome = contract["results"][NEGATIVE_ID]
    assert outcome["accepted"] is False
    assert outcome["stage"] == "validate"
    assert outcome["error"] == (
        "AssertionError: train_batch_size 250 should be divisible by policy_mini_batch_size 64"
    )
    assert outcome["where"].endswith("validate_batch_sizes")


@pytest.mark.parametrize("case_id", sorted(
    {case_id for release in RELEASES for case_id in refused_cases(release)}))
def test_a_setting_preflight_refuses_skyrl_refuses_too(contract, case_id):
    cases = refused_cases(contract["release"])
    if case_id not in cases:
        pytest.skip(f"{case_id} sets what SkyRL {contract['release']} does not have")
    code, said = cases[case_id][2:]
    spec = settings_specs(contract["release"])[case_id]
    assert code in {finding.code for finding in run_preflight(spec) if finding.is_error}
    outcome = contract["results"][case_id]
    assert outcome["accepted"] is False
    assert said in outcome["error"], outcome


@pytest.mark.parametrize("case_id", sorted(SETTINGS_ACCEPTED))
def test_a_setting_preflight_warns_about_skyrl_accepts(contract, case_id):
    code, (name, held) = SETTINGS_ACCEPTED[case_id][2:]
    found = {finding.code: finding
             for finding in run_preflight(settings_specs(contract["release"])[case_id])}
    outcome = contract["results"][case_id]
    assert outcome["accepted"] is True, outcome
    value = outcome["held"]
    for part in name.split("."):
        value = value[part]
    assert value == held
    # SkyRL lets a gpu_memory_utilization above 1 through to vLLM, whose CacheConfig refuses it:
    # an error before the cluster is paid for; the others are warnings.
    assert found[code].severity == ("error" if code == "SET002" else "warning")
