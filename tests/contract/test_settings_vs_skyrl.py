"""Property, per release: preflight's `settings` rules against each SkyRL release's own loader
and `validate_cfg` (0.3.0 and 0.4.0, each in its own contract env; a 0.4.0 run also draws the
settings only 0.4.0 has, `RELEASE_POOL`).

Hypothesis draws extra settings (LoRA, the torch profiler and FSDP offload, enforce_eager, fake
INT4 QAT, logprob chunking, loss reduction and max_seq_len, step-wise trajectories, logprobs,
gpu_memory_utilization, offload_after_step) onto the three documented worked examples, with the
estimator and the rollout backend varied where the plan allows. Each spec runs through
spec-scope preflight here; ONE subprocess per release (tests/contract/skyrl_harness.py) builds
every rendered `skyrl` subtree with SkyRL's loader and runs `validate_cfg`.

- Preflight accepts nothing SkyRL rejects, and errors on everything SkyRL rejects.
- Where preflight errors and SkyRL accepts, the only code is SET002 (`gpu_memory_utilization`
  outside (0, 1]), which SkyRL hands to vLLM unchecked and vLLM's `CacheConfig` refuses.

The confusion matrix is printed (pytest -s shows it).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from contract.skyrl_env import RELEASES, pin_release
from contract.test_preflight_vs_skyrl import collect_cases, run_skyrl
from contract.test_skyrl_contract import DOCUMENTED_EXAMPLES, subtree_for_skyrl
from rlaunch.preflight import run_preflight
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example

CASES = 300
VLLM_ONLY = {"SET002"}
PROFILER = "trainer.policy.torch_profiler_config"

# Each setting with the values drawn for it (absent is always one of the choices).
POOL: dict[str, tuple[Any, ...]] = {
    "trainer.policy.model.lora.rank": (8, 32),
    "trainer.policy.megatron_config.lora_config.merge_lora": (False,),
    "generator.inference_engine.enforce_eager": (True, False),
    f"{PROFILER}.enable": (True,),
    f"{PROFILER}.save_path": ("/tmp/rlaunch-traces", "s3://bucket/traces"),
    f"{PROFILER}.export_type": ("stacks", "chrome_trace", "json"),
    f"{PROFILER}.with_stack": (False,),
    f"{PROFILER}.active": (0, 2),
    "trainer.policy.fsdp_config.cpu_offload": (True, False),
    "trainer.policy.model.fake_int4_qat.enabled": (True,),
    "trainer.logprobs_chunk_size": (None, 0, 512),
    "trainer.fused_lm_head_logprob": (True,),
    "trainer.algorithm.loss_reduction": ("token_mean", "seq_mean_token_sum_norm", "prompt_mean",
                                         "token_sum"),
    "trainer.algorithm.max_seq_len": (1536,),
    "generator.step_wise_trajectories": (True,),
    "generator.merge_stepwise_output": (True,),
    "generator.sampling_params.logprobs": (None, 0, 1, 2),
    "generator.inference_engine.gpu_memory_utilization": (0.5, 1.0, 1.2),
    "trainer.policy.optimizer_config.offload_after_step": (False,),
    "trainer.algorithm.policy_loss_type": ("gspo", "kl_cov", "ppo"),
    "trainer.algorithm.off_policy_correction.tis_ratio_type": ("token", "tokens"),
    "trainer.algorithm.off_policy_correction.sequence_mask_metric": ("geometric", "mean"),
    "generator.inference_engine.enable_pd": (True,),
    "generator.inference_engine.num_prefill": (1, 8),
    "generator.inference_engine.distributed_executor_backend": ("mp", "ray"),
    "generator.inference_engine.enable_return_routed_experts": (True,),
    "trainer.policy.megatron_config.moe_enable_routing_replay": (True,),
    "data.dataloader.num_workers": (-1, 0, 4),
    "data.dataloader.persistent_workers": (True,),
    "trainer.algorithm.dppo.dppo_type": ("binary_kl", "tv"),
    "trainer.policy.language_model_only": (True,),
    "trainer.ref.language_model_only": (True,),
    "generator.inference_engine.language_model_only": (True,),
}


# Settings a release adds, drawn for runs pinned to it (skyrl/train/config/config.py of 0.4.0).
RELEASE_POOL: dict[str, dict[str, tuple[Any, ...]]] = {
    "0.3.0": {},
    "0.4.0": {
        "generator.inference_engine.offload_kv_for_weight_sync": (True, False),
        "trainer.policy.model.lora.sync_mode": ("disk", "memory", "ram"),
    },
}


@st.composite
def specs(draw: st.DrawFn, release: str = "0.3.0") -> dict[str, Any]:
    base = draw(st.sampled_from(DOCUMENTED_EXAMPLES))
    data = pin_release(worked_example(base), release)
    pool = {**POOL, **RELEASE_POOL[release]}
    chosen = draw(st.sets(st.sampled_from(sorted(pool)), min_size=1, max_size=6))
    data["settings"] = {name: draw(st.sampled_from(pool[name])) for name in sorted(chosen)}
    if base != "megatron-moe-5x8":
        # Megatron needs vLLM (ALGO003): only the FSDP examples vary the backend and estimator.
        data["role_plan"]["rollout"]["backend"] = draw(st.sampled_from(("vllm", "vllm", "sglang")))
        data["algorithm"]["advantage_estimator"] = draw(
            st.sampled_from(("grpo", "rloo", "reinforce++")))
    return data


@pytest.mark.parametrize("release", RELEASES)
def test_preflight_settings_rules_against_skyrl_validate_cfg(
    tmp_path: Path, release: str
) -> None:
    cases = collect_cases(specs(release), CASES, "settings", "settings")
    # The vLLM-only cell, always (a larger pool of a newer release may draw no case of it alone).
    fixed = pin_release(worked_example("colocated-1x8"), release)
    fixed["settings"] = {"generator.inference_engine.gpu_memory_utilization": 1.2}
    spec = parse_spec(fixed, "fixed")
    cases["fixed-gpu-memory-1.2"] = {
        "errors": sorted({f.code for f in run_preflight(spec) if f.is_error}),
        "skyrl": subtree_for_skyrl(spec), "settings": fixed["settings"]}
    report = run_skyrl(cases, tmp_path, release)
    matrix: Counter[str] = Counter()
    missed, unexplained = {}, {}
    for case_id, case in cases.items():
        outcome = report["results"][case_id]
        skyrl_ok, errors = outcome["accepted"], case["errors"]
        matrix[f"preflight {'accepts' if not errors else 'errors'},"
               f" SkyRL {'accepts' if skyrl_ok else 'rejects'}"] += 1
        if not errors and not skyrl_ok:
            missed[case_id] = (outcome["error"], case["settings"])
        if errors and skyrl_ok and not set(errors) <= VLLM_ONLY:
            unexplained[case_id] = (errors, case["settings"])
    print(f"\n{len(cases)} drawn settings, SkyRL {report['skyrl_version']} in"
          f" {report['check_seconds']} s:", file=sys.stderr)
    for cell in sorted(matrix):
        print(f"  {cell}: {matrix[cell]}", file=sys.stderr)
    assert missed == {}, f"preflight accepts these, SkyRL {release} rejects them"
    assert unexplained == {}, "preflight errors, SkyRL accepts, and not for a vLLM reason"
    assert set(matrix) == {
        "preflight accepts, SkyRL accepts", "preflight errors, SkyRL rejects",
        "preflight errors, SkyRL accepts",
    }
    assert report["skyrl_version"] == release
