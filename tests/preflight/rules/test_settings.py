"""Rules on a run's extra SkyRL settings (rlaunch/preflight/rules/settings.py)."""

from __future__ import annotations

from preflight.helpers import example, findings, messages

MEGATRON = "megatron-moe-5x8"
LORA = "trainer.policy.model.lora.rank"


def _settings(settings: dict, base: str = "colocated-1x8", **edits) -> dict:
    return example(base, {"settings": settings, **edits})


def test_set001_lora_needs_vllm() -> None:
    data = _settings({LORA: 32}, **{"role_plan.rollout.backend": "sglang"})
    (finding,) = findings(data, "SET001")
    assert finding.message == (
        "LoRA rank 32 with rollout backend sglang: SkyRL 0.3.0 loads LoRA adapters into vLLM "
        "engines only"
    )
    assert finding.paths == (
        "settings.trainer.policy.model.lora.rank", "role_plan.rollout.backend")
    assert messages(_settings({LORA: 32}), "SET001") == []
    # A run on 0.4.0 (the same validate_cfg assert) is told its own release.
    upgraded = _settings({LORA: 32}, **{"role_plan.rollout.backend": "sglang",
                                        "runtime.package": "skyrl==0.4.0"})
    assert messages(upgraded, "SET001") == [
        "LoRA rank 32 with rollout backend sglang: SkyRL 0.4.0 loads LoRA adapters into vLLM "
        "engines only"]


def test_set002_gpu_memory_utilization_is_a_fraction() -> None:
    for bad in (0, 1.2, -0.5):
        (finding,) = findings(
            _settings({"generator.inference_engine.gpu_memory_utilization": bad}), "SET002")
        assert finding.message == (
            f"generator.inference_engine.gpu_memory_utilization is {bad}, outside (0, 1]: it is "
            f"the fraction of each GPU's memory a vLLM engine may use"
        )
        assert finding.fix == "Set it to a fraction such as 0.85 (SkyRL's default is 0.8)."
    for good in (1, 0.85):
        assert messages(_settings({"generator.inference_engine.gpu_memory_utilization": good}),
                        "SET002") == []


def test_set003_profiling_a_colocated_fsdp_policy_needs_native_offload() -> None:
    profiler = "trainer.policy.torch_profiler_config.enable"
    assert messages(_settings({profiler: True}), "SET003") == [
        "the torch profiler is enabled on a colocated FSDP policy whose models SkyRL offloads "
        "by swapping tensors (fsdp_config.cpu_offload false)"
    ]
    offloaded = {profiler: True, "trainer.policy.fsdp_config.cpu_offload": True}
    assert messages(_settings(offloaded), "SET003") == []


def test_set004_enforce_eager_with_lora_sync_is_a_warning() -> None:
    eager = "generator.inference_engine.enforce_eager"
    (finding,) = findings(_settings({LORA: 16, eager: True}), "SET004")
    assert finding.severity == "warning"
    assert finding.message == (
        "generator.inference_engine.enforce_eager is true with LoRA weight sync (rank 16): "
        "SkyRL 0.3.0 sets it back to false"
    )
    assert messages(_settings({eager: True}), "SET004") == []
    # Megatron merges LoRA into the weights by default: no adapter sync, enforce_eager stays.
    assert messages(_settings({LORA: 16, eager: True}, MEGATRON), "SET004") == []


def test_set005_a_setting_skyrl_ignores_is_a_warning() -> None:
    offload = "trainer.policy.optimizer_config.offload_after_step"
    disaggregated = _settings({offload: False}, "disaggregated-8x8-tp8")
    assert messages(disaggregated, "SET005") == [
        "trainer.policy.optimizer_config.offload_after_step has no effect: SkyRL offloads the "
        "optimizer after a step only under colocate_all, which the plan does not use"
    ]
    assert messages(_settings({offload: False}), "SET005") == []
    other = {"trainer.policy.fsdp_config.cpu_offload": True,
             "trainer.ref.fsdp_config.cpu_offload": True}
    assert messages(_settings(other, MEGATRON), "SET005") == [
        "trainer.policy.fsdp_config.cpu_offload, trainer.ref.fsdp_config.cpu_offload have no "
        "effect: the megatron strategy does not read that section"
    ]


def test_set005_megatrons_optimizer_offload_of_a_zero_fraction_moves_nothing() -> None:
    kwargs = "trainer.policy.megatron_config.optimizer_config_kwargs"
    moves_nothing = ("Megatron-core's HybridDeviceOptimizer then keeps every parameter's"
                     " optimizer state on the GPU")
    assert messages(_settings({kwargs: {"optimizer_cpu_offload": True}}, MEGATRON), "SET005") == [
        f"{kwargs} sets optimizer_cpu_offload but its optimizer_offload_fraction is left out, so"
        f" SkyRL fills in 0.0: {moves_nothing}"]
    zero = {"optimizer_cpu_offload": True, "optimizer_offload_fraction": 0}
    assert messages(_settings({kwargs: zero}, MEGATRON), "SET005") == [
        f"{kwargs} sets optimizer_cpu_offload but its optimizer_offload_fraction is 0:"
        f" {moves_nothing}"]
    half = {"optimizer_cpu_offload": True, "optimizer_offload_fraction": 0.5}
    assert messages(_settings({kwargs: half}, MEGATRON), "SET005") == []
    # Under FSDP the whole section goes unread, and says so once.
    assert messages(_settings({kwargs: zero}), "SET005") == [
        f"{kwargs} has no effect: the fsdp strategy does not read that section"]


def test_set006_fake_int4_qat_names_everything_it_lacks() -> None:
    qat = "trainer.policy.model.fake_int4_qat.enabled"
    assert messages(_settings({qat: True}), "SET006") == [
        "trainer.policy.model.fake_int4_qat.enabled is true but SkyRL 0.3.0 also needs "
        "trainer.policy.model.lora.rank > 0, role_plan.strategy megatron, "
        "trainer.policy.megatron_config.lora_config.merge_lora false"
    ]
    complete = {qat: True, LORA: 16,
                "trainer.policy.megatron_config.lora_config.merge_lora": False}
    assert messages(_settings(complete, MEGATRON), "SET006") == []


def test_set007_megatron_only_trainer_settings() -> None:
    both = {"trainer.fused_lm_head_logprob": True, "trainer.logprobs_chunk_size": None}
    assert messages(_settings(both), "SET007") == [
        "logprobs_chunk_size None (no chunking) is Megatron-only (strategy fsdp); SkyRL 0.3.0 "
        "refuses it at start-up",
        "fused_lm_head_logprob is Megatron-only (strategy fsdp); SkyRL 0.3.0 refuses it at "
        "start-up",
    ]
    assert messages(_settings(both, MEGATRON), "SET007") == []
    assert messages(_settings({"trainer.logprobs_chunk_size": 0}, MEGATRON), "SET007") == [
        "logprobs_chunk_size is 0 (strategy megatron); SkyRL 0.3.0 refuses it at start-up"
    ]


def test_set008_loss_reduction() -> None:
    (finding,) = findings(
        _settings({"trainer.algorithm.loss_reduction": "seq_mean_token_sum_norm"}), "SET008")
    assert finding.message == (
        "trainer.algorithm.loss_reduction seq_mean_token_sum_norm divides by "
        "trainer.algorithm.max_seq_len, which is not set"
    )
    assert finding.fix == (
        "Set trainer.algorithm.max_seq_len (e.g. 1536 = max_input_length 512 + "
        "max_generate_length 1024)."
    )
    normed = {"trainer.algorithm.loss_reduction": "seq_mean_token_sum_norm",
              "trainer.algorithm.max_seq_len": 1536}
    assert messages(_settings(normed), "SET008") == []
    assert messages(_settings({"trainer.algorithm.loss_reduction": "token_sum"}), "SET008") == [
        "trainer.algorithm.loss_reduction 'token_sum' is not one SkyRL 0.3.0 has"
    ]


def test_set009_generator_settings() -> None:
    data = _settings({"generator.step_wise_trajectories": True,
                      "generator.sampling_params.logprobs": 5},
                     **{"algorithm.advantage_estimator": "reinforce++"})
    assert messages(data, "SET009") == [
        "step-wise trajectories collapse each trajectory to one advantage, which discards the "
        "per-token advantages of reinforce++",
        "generator.sampling_params.logprobs is 5; SkyRL 0.3.0 takes 0 or 1 (the chosen "
        "token's logprob)",
    ]
    assert messages(_settings({"generator.merge_stepwise_output": True}), "SET009") == [
        "generator.merge_stepwise_output merges step-wise outputs, but "
        "generator.step_wise_trajectories is false"
    ]
    assert messages(_settings({"generator.step_wise_trajectories": True,
                               "generator.merge_stepwise_output": True}), "SET009") == []


def test_no_settings_no_findings() -> None:
    codes = {f"SET{n:03d}" for n in range(1, 15)}
    for base in ("colocated-1x8", "disaggregated-8x8-tp8", MEGATRON):
        for code in codes:
            assert messages(example(base), code) == []


def test_set010_an_enabled_profiler_is_complete() -> None:
    profiler = "trainer.policy.torch_profiler_config"
    settings = {f"{profiler}.enable": True, "trainer.policy.fsdp_config.cpu_offload": True,
                f"{profiler}.save_path": "s3://bucket/traces", f"{profiler}.ranks": [],
                f"{profiler}.active": 0}
    (ranks, save_path, active) = findings(_settings(settings), "SET010")
    assert ranks.message == "the torch profiler is enabled but torch_profiler_config.ranks is empty"
    assert save_path.message == (
        "the torch profiler is enabled but torch_profiler_config.save_path 's3://bucket/traces' "
        "is not a local path (torch.profiler cannot write to an object store)"
    )
    assert active.fix == "In trainer.policy.torch_profiler_config.active: use a count >= 1."
    complete = {f"{profiler}.enable": True, "trainer.policy.fsdp_config.cpu_offload": True,
                f"{profiler}.save_path": "/tmp/traces"}
    assert messages(_settings(complete), "SET010") == []
    # A worker-local trace directory is no ambient path (ART007 leaves it alone).
    assert messages(_settings(complete), "ART007") == []


def test_set011_policy_loss_and_off_policy_correction() -> None:
    (finding,) = findings(_settings({"trainer.algorithm.policy_loss_type": "ppo"}), "SET011")
    assert finding.message == (
        "trainer.algorithm.policy_loss_type 'ppo' is not a policy loss SkyRL 0.3.0 registers")
    correction = {"trainer.algorithm.policy_loss_type": "kl_cov",
                  "trainer.algorithm.off_policy_correction.tis_ratio_type": "tokens"}
    assert messages(_settings(correction), "SET011") == [
        "trainer.algorithm.off_policy_correction.tis_ratio_type 'tokens' is not one SkyRL "
        "0.3.0 has",
        "off-policy correction does not support the policy loss kl_cov",
    ]
    good = {"trainer.algorithm.policy_loss_type": "gspo",
            "trainer.algorithm.off_policy_correction.tis_ratio_type": "sequence"}
    assert messages(_settings(good), "SET011") == []


def test_set012_inference_engine_settings() -> None:
    engine = "generator.inference_engine"
    assert messages(_settings({f"{engine}.enable_pd": True}), "SET012") == [
        "prefill/decode disaggregation with num_prefill 0 of 8 engines: SkyRL needs "
        "0 < num_prefill < num_engines (a decode engine left)"
    ]
    assert messages(_settings({f"{engine}.enable_pd": True, f"{engine}.num_prefill": 2}),
                    "SET012") == []
    assert messages(_settings({f"{engine}.distributed_executor_backend": "uni"}), "SET012") == [
        "distributed_executor_backend 'uni' is neither mp nor ray"]
    assert messages(_settings({f"{engine}.enable_return_routed_experts": True}), "SET012") == [
        "rollout router replay (enable_return_routed_experts) needs the mp executor backend, "
        "the megatron strategy and moe_enable_routing_replay"
    ]
    replay = {"trainer.policy.megatron_config.moe_enable_routing_replay": True}
    assert messages(_settings(replay, MEGATRON), "SET012") == [
        "moe_enable_routing_replay replays the experts the engines routed, but "
        "enable_return_routed_experts is false"
    ]
    complete = {**replay, f"{engine}.enable_return_routed_experts": True,
                f"{engine}.distributed_executor_backend": "mp"}
    assert messages(_settings(complete, MEGATRON), "SET012") == []


def test_set013_values_skyrl_config_classes_refuse() -> None:
    assert messages(_settings({"data.dataloader.num_workers": -1,
                               "trainer.algorithm.dppo.dppo_type": "tv"}), "SET013") == [
        "data.dataloader.num_workers is -1; SkyRL 0.3.0 (DataLoaderConfig.__post_init__) takes "
        "None or >= 0",
        "trainer.algorithm.dppo.dppo_type is 'tv'; SkyRL 0.3.0 (DPPOConfig.__post_init__) takes "
        "binary_tv or binary_kl",
    ]
    assert messages(_settings({"data.dataloader.persistent_workers": True,
                               "data.dataloader.num_workers": 0}), "SET013") == [
        "persistent dataloader workers with num_workers 0: there is no worker to keep"]
    assert messages(_settings({"trainer.policy.language_model_only": True}), "SET013") == [
        "trainer.policy.language_model_only is true but the engines load the whole model "
        "(generator.inference_engine.language_model_only false)",
        "trainer.policy.language_model_only is true and the run uses a reference, which loads "
        "the whole model (trainer.ref.language_model_only false)",
    ]
    everywhere = {"trainer.policy.language_model_only": True,
                  "trainer.ref.language_model_only": True,
                  "generator.inference_engine.language_model_only": True}
    assert messages(_settings(everywhere), "SET013") == []


def test_set014_a_smoke_sets_what_its_full_run_sets() -> None:
    from_full = {"name": "colocated-1x8", "version": "2026.11.29"}

    def smoke(own: dict, full: dict) -> dict:
        data = example()
        data.update(name="colocated-1x8-smoke", version="dev", settings=own, smoke_of={
            **from_full, "role_plan": data["role_plan"], "runtime": data["runtime"],
            "allocation": data["execution"]["allocation"],
            "handoff_kinds": {"model": "model", "tokenizer": "model", "train_data": "dataset",
                              "eval_data": "dataset"},
            "settings": full})
        return data

    (finding,) = findings(smoke({"trainer.eval_interval": 1}, {LORA: 32}), "SET014")
    assert finding.severity == "warning"
    assert finding.message == (
        "the smoke's settings differ from its full run's colocated-1x8@2026.11.29: "
        "trainer.eval_interval 1 vs '(unset)', trainer.policy.model.lora.rank '(unset)' vs 32 "
        "(smoke vs full run)"
    )
    assert finding.paths == ("settings.trainer.eval_interval", f"settings.{LORA}")
    assert messages(smoke({LORA: 32}, {LORA: 32}), "SET014") == []


OPTIMIZER_KWARGS = "trainer.policy.megatron_config.optimizer_config_kwargs"


def test_set017_megatrons_optimizer_dtypes() -> None:
    def set017(kwargs: dict, base: str = MEGATRON, **edits) -> list[str]:
        return messages(_settings({OPTIMIZER_KWARGS: kwargs}, base, **edits), "SET017")

    aware = {"use_precision_aware_optimizer": True}
    assert set017({"exp_avg_dtype": "bf16", "main_grads_dtype": "fp32"}) == [
        f"{OPTIMIZER_KWARGS} sets exp_avg_dtype 'bf16' without use_precision_aware_optimizer:"
        " true; Megatron-core's OptimizerConfig asserts fp32 optimizer state otherwise, and the"
        " policy's workers fail to start"]
    (finding,) = findings(_settings({OPTIMIZER_KWARGS: {"exp_avg_sq_dtype": "int4"}}, MEGATRON),
                          "SET017")
    assert (finding.severity, finding.paths) == ("error", (
        f"settings.{OPTIMIZER_KWARGS}", "role_plan.strategy"))
    assert finding.message == (
        f"{OPTIMIZER_KWARGS}.exp_avg_sq_dtype is 'int4': SkyRL 0.3.0 knows no such dtype and"
        " refuses it (ValueError) when the policy's optimizer is built")
    assert finding.fix == (
        "Use one of bf16, bfloat16, float, float16, float32, float8, fp16, fp32, fp8, half,"
        " uint8 (bf16, fp16, fp32, fp8 for exp_avg_sq_dtype).")
    assert set017({**aware, "main_params_dtype": "bf16"},
                  **{"runtime.package": "skyrl==0.4.0"}) == [
        f"{OPTIMIZER_KWARGS}.main_params_dtype is 'bf16' (bf16): SkyRL 0.4.0 allows only fp16,"
        " fp32 for main_params_dtype (Transformer Engine's FusedAdam) and refuses it (ValueError)"
        " when the policy's optimizer is built"]
    # Names as SkyRL reads them (stripped, any case); fp32 needs no precision-aware optimizer;
    # other keys and values SkyRL hands Megatron-core as they are; FSDP ignores the section.
    for kwargs in ({**aware, "main_params_dtype": " FP16", "exp_avg_dtype": "Float8",
                    "exp_avg_sq_dtype": "half", "main_grads_dtype": "bf16"},
                   {"exp_avg_dtype": "float32", "main_params_dtype": "fp32"},
                   {"params_dtype": "bf16", "exp_avg_dtype": 16, "optimizer_cpu_offload": True,
                    "optimizer_offload_fraction": 1.0}):
        assert set017(kwargs) == [], kwargs
    # SkyRL converts every key ending in `_dtype`, not only the optimizer state's.
    assert set017({"params_dtype": "fp4"}) == [
        f"{OPTIMIZER_KWARGS}.params_dtype is 'fp4': SkyRL 0.3.0 knows no such dtype and refuses"
        " it (ValueError) when the policy's optimizer is built"]
    assert set017({"exp_avg_dtype": "int4"}, "colocated-1x8") == []
    # Megatron-core asserts under `if not use_precision_aware_optimizer`, as Python reads it.
    assert set017({"exp_avg_dtype": "bf16", "use_precision_aware_optimizer": 1}) == []
    assert len(set017({"exp_avg_dtype": "bf16", "use_precision_aware_optimizer": None})) == 1
