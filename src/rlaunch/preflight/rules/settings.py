"""A run's extra SkyRL settings where SkyRL (or the vLLM it drives) refuses them, or silently
ignores or rewrites them: the same in 0.3.0 and 0.4.0 for every rule here (0.4.0's own refusals
are in settings_weight_sync.py), and each message names the run's release.

Each rule cites the SkyRL 0.3.0 code it mirrors; tests/contract/test_skyrl_contract.py runs
SkyRL's own loader and `validate_cfg` on a case of each error rule (refused by SkyRL too) and on
a case of each warning rule (accepted by SkyRL, with what it does to the setting)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from rlaunch.memo import Memo
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.spec.run import RunSpec

LORA_RANK = "trainer.policy.model.lora.rank"
GPU_MEMORY = "generator.inference_engine.gpu_memory_utilization"
ENFORCE_EAGER = "generator.inference_engine.enforce_eager"
MERGE_LORA = "trainer.policy.megatron_config.lora_config.merge_lora"
PROFILER = "trainer.policy.torch_profiler_config.enable"
CPU_OFFLOAD = "trainer.policy.fsdp_config.cpu_offload"
MEGATRON_OPTIMIZER_KWARGS = "trainer.policy.megatron_config.optimizer_config_kwargs"
"""Passed to Megatron-core's OptimizerConfig (its CPU offload among them); SkyRL fills in the
keys a run leaves out (skyrl/train/config/config.py `DEFAULT_MEGATRON_OPTIMIZER_KWARGS`)."""
QAT = "trainer.policy.model.fake_int4_qat.enabled"
LOSS_REDUCTION = "trainer.algorithm.loss_reduction"
MAX_SEQ_LEN = "trainer.algorithm.max_seq_len"
LOGPROBS = "generator.sampling_params.logprobs"
# skyrl/train/utils/utils.py `validate_cfg`
LOSS_REDUCTIONS = ("token_mean", "token_mean_legacy", "sequence_mean", "seq_mean_token_sum_norm",
                   "prompt_mean")
OFFLOAD_AFTER_STEP = ("trainer.policy.optimizer_config.offload_after_step",
                      "trainer.critic.optimizer_config.offload_after_step")
# The trainer builds its roles with the strategy's own section (skyrl/backends/skyrl_train/
# distributed/fsdp_strategy.py reads `fsdp_config`, megatron_strategy.py `megatron_config`).
_OTHER_STRATEGY_SECTIONS = {
    "fsdp": ("trainer.policy.megatron_config.", "trainer.ref.megatron_config."),
    "megatron": ("trainer.policy.fsdp_config.", "trainer.ref.fsdp_config.",
                 "trainer.critic.fsdp_config."),
}


def _set(name: str) -> str:
    return f"settings.{name}"


def _skyrl(check: Check) -> str:
    """The run's SkyRL release as messages name it: these rules mirror code that 0.3.0 and 0.4.0
    share (tests/contract/test_skyrl_contract.py runs each refusal against both)."""
    return f"SkyRL {check.spec.skyrl_release}"


def _lora_example(data: dict[str, Any]) -> None:
    """`settings: {"trainer.policy.model.lora.rank": 32}`, `role_plan.rollout.backend: "sglang"`"""
    data["settings"] = {LORA_RANK: 32}
    data["role_plan"]["rollout"]["backend"] = "sglang"


def _uses_lora_weight_sync(spec: RunSpec) -> bool:
    """skyrl/backends/skyrl_train/inference_servers/utils.py `_uses_lora_weight_sync`: FSDP syncs
    LoRA adapters whenever the rank is > 0; Megatron only when it does not merge them."""
    if spec.skyrl_setting(LORA_RANK) <= 0:
        return False
    if spec.role_plan.strategy == "megatron":
        return not spec.skyrl_setting(MERGE_LORA)
    return True


@rule(
    "SET001",
    "LoRA on the policy needs the vllm rollout backend.",
    example=Example(edits=_lora_example),
)
def lora_needs_vllm(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_cfg`: with
    `trainer.policy.model.lora.rank > 0`, `generator.inference_engine.backend` must be `vllm`
    ("LoRA enabled requires vLLM backend")."""
    findings: list[Finding] = []
    rank = check.setting(LORA_RANK)
    backend = check.plan.rollout.backend
    if rank > 0 and backend != "vllm":
        findings.append(error(
            "SET001", (_set(LORA_RANK), "role_plan.rollout.backend"),
            f"LoRA rank {rank} with rollout backend {backend}: {_skyrl(check)} loads LoRA adapters "
            f"into vLLM engines only",
            "Set role_plan.rollout.backend to vllm, or drop the LoRA setting (rank 0: full "
            "fine-tuning).",
        ))
    return findings


@rule(
    "SET002",
    "gpu_memory_utilization is in (0, 1].",
    example=Example(edits={"settings": {GPU_MEMORY: 1.2}}),
    reads_plan=False,
)
def gpu_memory_fraction(check: Check) -> Iterator[Finding]:
    """Error. SkyRL 0.3.0 passes the value to vLLM unchecked
    (skyrl/backends/skyrl_train/inference_servers/utils.py `build_vllm_cli_args`), and vLLM's
    `CacheConfig` (vllm/config/cache.py) declares `gpu_memory_utilization` with `gt=0, le=1`: an
    engine would fail at start-up, after the cluster is paid for."""
    value = check.spec.skyrl_setting(GPU_MEMORY)
    if not 0 < value <= 1:
        yield error(
            "SET002", (_set(GPU_MEMORY),),
            f"{GPU_MEMORY} is {value}, outside (0, 1]: it is the fraction of each GPU's memory "
            f"a vLLM engine may use",
            "Set it to a fraction such as 0.85 (SkyRL's default is 0.8).",
        )


@rule(
    "SET003",
    "Profiling FSDP under colocation needs FSDP's own CPU offload.",
    example=Example(edits={"settings": {PROFILER: True}}),
)
def profiler_needs_native_offload(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/config/config.py `TorchProfilerConfig.validate` (called by
    `validate_cfg`): with `strategy=fsdp`, colocation (`colocate_all` or `colocate_policy_ref`)
    and `policy.fsdp_config.cpu_offload=false`, the trainer offloads models with
    `torch.utils.swap_tensors`, which conflicts with the profiler's references."""
    findings: list[Finding] = []
    placement = check.plan.placement
    colocated = placement.colocate_all or placement.colocate_policy_ref
    if (check.setting(PROFILER) and check.plan.strategy == "fsdp" and colocated
            and not check.setting(CPU_OFFLOAD)):
        findings.append(error(
            "SET003",
            (_set(PROFILER), _set(CPU_OFFLOAD), "role_plan.placement.colocate_all",
             "role_plan.placement.colocate_policy_ref"),
            "the torch profiler is enabled on a colocated FSDP policy whose models SkyRL "
            "offloads by swapping tensors (fsdp_config.cpu_offload false)",
            f"Set {CPU_OFFLOAD} to true (FSDP2's own offload), or disable the profiler.",
        ))
    return findings


@rule(
    "SET004",
    "enforce_eager is not set with LoRA weight sync (SkyRL turns it off).",
    example=Example(edits={"settings": {LORA_RANK: 16, ENFORCE_EAGER: True}}),
)
def lora_enforce_eager(check: Check) -> list[Finding]:
    """Warning. skyrl/train/config/config.py `SkyRLTrainConfig.__post_init__`: when LoRA
    adapters are synced to vLLM and `enforce_eager` is true, SkyRL sets it to false (eager vLLM
    with LoRA is 2-3x slower), so the setting does not do what it says."""
    findings: list[Finding] = []
    spec = check.spec
    if (spec.settings.get(ENFORCE_EAGER) is True and _uses_lora_weight_sync(spec)
            and check.plan.rollout.backend == "vllm"):
        findings.append(warning(
            "SET004", (_set(ENFORCE_EAGER), _set(LORA_RANK)),
            f"{ENFORCE_EAGER} is true with LoRA weight sync (rank "
            f"{check.setting(LORA_RANK)}): {_skyrl(check)} sets it back to false",
            f"Remove {ENFORCE_EAGER}.",
        ))
    return findings


@rule(
    "SET005",
    "A setting takes effect: offload_after_step needs colocate_all; a strategy's own section;"
    " Megatron's optimizer offload moves a fraction above 0.",
    example=Example(edits={"settings": {CPU_OFFLOAD: True}}, base="megatron-moe-5x8"),
)
def setting_without_effect(check: Check) -> list[Finding]:
    """Warning. `OptimizerConfig.offload_after_step` (skyrl/train/config/config.py) is "only
    applicable when colocate_all=True"; `fsdp_config` is read by the FSDP strategy only and
    `megatron_config` by the Megatron strategy only (skyrl/backends/skyrl_train/distributed/
    fsdp_strategy.py, megatron/megatron_strategy.py). `optimizer_cpu_offload` in
    `optimizer_config_kwargs` moves `optimizer_offload_fraction` of the optimizer state to the
    CPU (Megatron-core's HybridDeviceOptimizer), and SkyRL fills in a fraction of 0.0 when the
    run leaves it out: nothing moves. A setting SkyRL ignores is written for nothing and
    misleads whoever reads the recipe."""
    findings: list[Finding] = []
    spec = check.spec
    plan = check.plan
    if not plan.placement.colocate_all:
        for name in OFFLOAD_AFTER_STEP:
            if name in spec.settings:
                findings.append(warning(
                    "SET005", (_set(name), "role_plan.placement.colocate_all"),
                    f"{name} has no effect: SkyRL offloads the optimizer after a step only "
                    f"under colocate_all, which the plan does not use",
                    f"Remove {name}.",
                ))
    kwargs = spec.settings.get(MEGATRON_OPTIMIZER_KWARGS)
    if plan.strategy == "megatron" and isinstance(kwargs, Mapping) and kwargs.get(
            "optimizer_cpu_offload") is True:
        fraction = kwargs.get("optimizer_offload_fraction", 0.0)
        if isinstance(fraction, (int, float)) and fraction <= 0:
            given = ("left out, so SkyRL fills in 0.0" if "optimizer_offload_fraction"
                     not in kwargs else f"{fraction}")
            findings.append(warning(
                "SET005", (_set(MEGATRON_OPTIMIZER_KWARGS),),
                f"{MEGATRON_OPTIMIZER_KWARGS} sets optimizer_cpu_offload but its"
                f" optimizer_offload_fraction is {given}: Megatron-core's HybridDeviceOptimizer"
                " then keeps every parameter's optimizer state on the GPU",
                "Set optimizer_offload_fraction in it (1.0 moves all of the state), or drop"
                " optimizer_cpu_offload.",
            ))
    ignored = [name for name in spec.settings
               if name.startswith(_OTHER_STRATEGY_SECTIONS[plan.strategy])]
    if ignored:
        findings.append(warning(
            "SET005", (*(_set(name) for name in ignored), "role_plan.strategy"),
            f"{', '.join(ignored)} {'has' if len(ignored) == 1 else 'have'} no effect: the "
            f"{plan.strategy} strategy does not read that section",
            "Remove them, or set the matching option of the plan's strategy.",
        ))
    return findings


@rule(
    "SET006",
    "fake INT4 QAT needs LoRA, Megatron and merge_lora false.",
    example=Example(edits={"settings": {QAT: True}}),
)
def fake_int4_qat(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/config/config.py `ModelConfig.__post_init__` (QAT needs
    `lora.rank > 0`) and `TrainerConfig.__post_init__` (QAT needs `strategy=megatron` and
    `megatron_config.lora_config.merge_lora=false`)."""
    findings: list[Finding] = []
    if not check.setting(QAT):
        return findings
    missing = []
    if check.setting(LORA_RANK) <= 0:
        missing.append(f"{LORA_RANK} > 0")
    if check.plan.strategy != "megatron":
        missing.append("role_plan.strategy megatron")
    if check.setting(MERGE_LORA):
        missing.append(f"{MERGE_LORA} false")
    if missing:
        findings.append(error(
            "SET006", (_set(QAT), _set(LORA_RANK), _set(MERGE_LORA), "role_plan.strategy"),
            f"{QAT} is true but {_skyrl(check)} also needs {', '.join(missing)}",
            f"Set {', '.join(missing)}, or drop {QAT}.",
        ))
    return findings


@rule(
    "SET007",
    "Megatron-only trainer settings are not set with FSDP.",
    example=Example(edits={"settings": {"trainer.fused_lm_head_logprob": True}}),
)
def megatron_only_settings(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/config/config.py `TrainerConfig.__post_init__`:
    `logprobs_chunk_size=None` and `fused_lm_head_logprob=true` are Megatron-only, and
    `logprobs_chunk_size` must be a positive integer."""
    findings: list[Finding] = []
    spec = check.spec
    chunk = check.setting("trainer.logprobs_chunk_size")
    problems = []
    if chunk is not None and chunk <= 0:
        problems.append(("trainer.logprobs_chunk_size", f"logprobs_chunk_size is {chunk}",
                         "a positive integer"))
    if check.plan.strategy != "megatron":
        if "trainer.logprobs_chunk_size" in spec.settings and chunk is None:
            problems.append(("trainer.logprobs_chunk_size",
                             "logprobs_chunk_size None (no chunking) is Megatron-only",
                             "a positive integer, e.g. SkyRL's default 1024"))
        if check.setting("trainer.fused_lm_head_logprob"):
            problems.append(("trainer.fused_lm_head_logprob",
                             "fused_lm_head_logprob is Megatron-only", "false"))
    for name, what, fix in problems:
        findings.append(error(
            "SET007", (_set(name), "role_plan.strategy"),
            f"{what} (strategy {check.plan.strategy}); {_skyrl(check)} refuses it at start-up",
            f"Set {name} to {fix}.",
        ))
    return findings


@rule(
    "SET008",
    "loss_reduction is one SkyRL has; seq_mean_token_sum_norm sets max_seq_len.",
    example=Example(edits={"settings": {LOSS_REDUCTION: "seq_mean_token_sum_norm"}}),
    reads_plan=False,
)
def loss_reduction(check: Check) -> Iterator[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_cfg`: `loss_reduction` is one of
    token_mean, token_mean_legacy, sequence_mean, seq_mean_token_sum_norm, prompt_mean, and
    seq_mean_token_sum_norm needs `trainer.algorithm.max_seq_len` (the normalisation constant)."""
    spec = check.spec
    reduction = spec.skyrl_setting(LOSS_REDUCTION)
    if reduction not in LOSS_REDUCTIONS:
        yield error(
            "SET008", (_set(LOSS_REDUCTION),),
            f"{LOSS_REDUCTION} {reduction!r} is not one {_skyrl(check)} has",
            f"Use one of {', '.join(LOSS_REDUCTIONS)}.",
        )
    elif reduction == "seq_mean_token_sum_norm" and spec.skyrl_setting(MAX_SEQ_LEN) is None:
        lengths = spec.lengths
        total = lengths.max_input_length + lengths.max_generate_length
        yield error(
            "SET008", (_set(LOSS_REDUCTION), _set(MAX_SEQ_LEN)),
            f"{LOSS_REDUCTION} seq_mean_token_sum_norm divides by {MAX_SEQ_LEN}, which is not set",
            f"Set {MAX_SEQ_LEN} (e.g. {total} = max_input_length {lengths.max_input_length} + "
            f"max_generate_length {lengths.max_generate_length}).",
        )


@rule(
    "SET009",
    "Step-wise trajectories suit outcome estimators; merging needs them; logprobs is 0 or 1.",
    example=Example(edits={"settings": {"generator.merge_stepwise_output": True}}),
    reads_plan=False,
)
def generator_settings(check: Check) -> Iterator[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_cfg` (step_wise_trajectories with gae
    or reinforce++; merge_stepwise_output without step_wise_trajectories) and
    `validate_generator_cfg` (`sampling_params.logprobs` above 1)."""
    spec = check.spec
    step_wise = spec.skyrl_setting("generator.step_wise_trajectories")
    estimator = spec.algorithm.advantage_estimator
    if step_wise and estimator in ("gae", "reinforce++"):
        yield error(
            "SET009", (_set("generator.step_wise_trajectories"), "algorithm.advantage_estimator"),
            f"step-wise trajectories collapse each trajectory to one advantage, which discards "
            f"the per-token advantages of {estimator}",
            "Use grpo or rloo, or drop generator.step_wise_trajectories.",
        )
    if spec.skyrl_setting("generator.merge_stepwise_output") and not step_wise:
        yield error(
            "SET009", (_set("generator.merge_stepwise_output"),
                       _set("generator.step_wise_trajectories")),
            "generator.merge_stepwise_output merges step-wise outputs, but "
            "generator.step_wise_trajectories is false",
            "Set generator.step_wise_trajectories to true, or drop merge_stepwise_output.",
        )
    logprobs = spec.skyrl_setting(LOGPROBS)
    if logprobs is not None and logprobs > 1:
        yield error(
            "SET009", (_set(LOGPROBS),),
            f"{LOGPROBS} is {logprobs}; {_skyrl(check)} takes 0 or 1 (the chosen token's logprob)",
            f"Set {LOGPROBS} to 1.",
        )


_PROFILER = "trainer.policy.torch_profiler_config"


def _profiler_problems(spec: RunSpec) -> list[tuple[str, str, str]]:
    """`(setting, what is wrong, fix)` of an enabled profiler, in the order SkyRL checks."""
    def value(key: str) -> Any:
        return spec.skyrl_setting(f"{_PROFILER}.{key}")

    problems = []
    if not value("ranks"):
        problems.append(("ranks", "ranks is empty", "list the ranks to profile, e.g. [0]"))
    save_path = value("save_path")
    if not save_path:
        problems.append(("save_path", "save_path is not set",
                         "set an absolute local directory for the traces"))
    elif "://" in save_path:
        problems.append(("save_path", f"save_path {save_path!r} is not a local path "
                         "(torch.profiler cannot write to an object store)",
                         "set an absolute local directory"))
    activities = value("activities")
    bad = [activity for activity in activities if activity.lower() not in ("cpu", "cuda")]
    if not activities or bad:
        problems.append(("activities", f"activities {activities} records nothing or names "
                         f"{bad}", "use cpu and/or cuda"))
    export = value("export_type")
    if export not in ("chrome_trace", "stacks"):
        problems.append(("export_type", f"export_type {export!r} is unknown",
                         "use chrome_trace or stacks"))
    elif export == "stacks" and not value("with_stack"):
        problems.append(("with_stack", "export_type stacks needs with_stack",
                         "set with_stack to true"))
    for key in ("skip_first", "wait", "warmup", "repeat"):
        if value(key) < 0:
            problems.append((key, f"{key} is {value(key)}", "use a count >= 0"))
    if value("active") < 1:
        problems.append(("active", f"active is {value('active')}", "use a count >= 1"))
    return problems


@rule(
    "SET010",
    "An enabled torch profiler has ranks, a local save_path, cpu/cuda activities, a schedule.",
    example=Example(edits={"settings": {PROFILER: True, CPU_OFFLOAD: True}}),
    reads_plan=False,
)
def profiler_settings(check: Check) -> Iterator[Finding]:
    """Error. Mirrors skyrl/train/config/config.py `TorchProfilerConfig.validate` (called by
    `validate_cfg` when `enable` is true): non-empty `ranks`, a `save_path` that is set and not a
    cloud URI, `activities` among cpu/cuda, `export_type` chrome_trace or stacks (stacks with
    `with_stack`), schedule counts >= 0 and `active` >= 1."""
    spec = check.spec
    if not spec.skyrl_setting(PROFILER):
        return
    for key, what, fix in _profiler_problems(spec):
        name = f"{_PROFILER}.{key}"
        yield error(
            "SET010", (_set(name), _set(PROFILER)),
            f"the torch profiler is enabled but {name.rsplit('.', 2)[1]}.{what}",
            f"In {name}: {fix}.",
        )


# skyrl/backends/skyrl_train/utils/ppo_utils.py `PolicyLossType`: what `PolicyLossRegistry`
# lists after `repopulate_all_registries` (validate_cfg checks the setting against it).
POLICY_LOSSES = ("regular", "dual_clip", "gspo", "cispo", "rollout_is", "clip_cov", "kl_cov",
                 "sapo", "cross_entropy", "importance_sampling", "dppo")
_CORRECTION = "trainer.algorithm.off_policy_correction"


@rule(
    "SET011",
    "policy_loss_type is registered; off-policy correction has known types and a loss it takes.",
    example=Example(edits={"settings": {"trainer.algorithm.policy_loss_type": "ppo"}}),
    reads_plan=False,
)
def policy_loss(check: Check) -> Iterator[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_cfg`: `policy_loss_type` is in
    `PolicyLossRegistry`; with off-policy correction, `tis_ratio_type` is token or sequence,
    `sequence_mask_metric` product or geometric, and the loss is not clip_cov or kl_cov."""
    spec = check.spec
    loss = spec.skyrl_setting("trainer.algorithm.policy_loss_type")
    name = "trainer.algorithm.policy_loss_type"
    if loss not in POLICY_LOSSES:
        yield error("SET011", (_set(name),),
                    f"{name} {loss!r} is not a policy loss {_skyrl(check)} registers",
                    f"Use one of {', '.join(POLICY_LOSSES)}.")
    ratio = spec.skyrl_setting(f"{_CORRECTION}.tis_ratio_type")
    metric = spec.skyrl_setting(f"{_CORRECTION}.sequence_mask_metric")
    for key, value, allowed in (("tis_ratio_type", ratio, ("token", "sequence")),
                                ("sequence_mask_metric", metric, ("product", "geometric"))):
        if value and value not in allowed:
            yield error("SET011", (_set(f"{_CORRECTION}.{key}"),),
                        f"{_CORRECTION}.{key} {value!r} is not one {_skyrl(check)} has",
                        f"Use {' or '.join(allowed)}, or null (no correction).")
    if (ratio is not None or metric is not None) and loss in ("clip_cov", "kl_cov"):
        yield error("SET011", (_set(name), _set(f"{_CORRECTION}.tis_ratio_type"),
                               _set(f"{_CORRECTION}.sequence_mask_metric")),
                    f"off-policy correction does not support the policy loss {loss}",
                    "Use another policy_loss_type, or drop the off-policy correction.")


_ENGINE = "generator.inference_engine"
_ROUTING_REPLAY = "trainer.policy.megatron_config.moe_enable_routing_replay"


def _engine_problems(spec: RunSpec) -> list[tuple[tuple[str, ...], str, str]]:
    """`(paths, what is wrong, fix)` of the inference-engine settings, in SkyRL's order."""
    def value(key: str) -> Any:
        return spec.skyrl_setting(f"{_ENGINE}.{key}")

    rollout = spec.role_plan.rollout
    problems: list[tuple[tuple[str, ...], str, str]] = []
    if value("enable_pd"):
        prefill, engines = value("num_prefill"), rollout.num_engines
        if not 0 < prefill < engines:
            problems.append(
                ((_set(f"{_ENGINE}.num_prefill"), "role_plan.rollout.num_engines"),
                 f"prefill/decode disaggregation with num_prefill {prefill} of {engines} "
                 f"engines: SkyRL needs 0 < num_prefill < num_engines (a decode engine left)",
                 "Set num_prefill between 1 and num_engines - 1 (num_engines >= 2)."))
    backend = value("distributed_executor_backend")
    if backend not in ("mp", "ray"):
        problems.append(((_set(f"{_ENGINE}.distributed_executor_backend"),),
                         f"distributed_executor_backend {backend!r} is neither mp nor ray",
                         "Use ray (SkyRL's default) or mp."))
    replay = spec.role_plan.strategy == "megatron" and spec.skyrl_setting(_ROUTING_REPLAY)
    if value("enable_return_routed_experts") and not (
            backend == "mp" and spec.role_plan.strategy == "megatron" and replay):
        problems.append(((_set(f"{_ENGINE}.enable_return_routed_experts"),
                          _set(f"{_ENGINE}.distributed_executor_backend"), _set(_ROUTING_REPLAY)),
                         "rollout router replay (enable_return_routed_experts) needs the mp "
                         "executor backend, the megatron strategy and moe_enable_routing_replay",
                         "Set all three, or drop enable_return_routed_experts."))
    elif replay and not value("enable_return_routed_experts"):
        problems.append(((_set(_ROUTING_REPLAY), _set(f"{_ENGINE}.enable_return_routed_experts")),
                         "moe_enable_routing_replay replays the experts the engines routed, but "
                         "enable_return_routed_experts is false",
                         f"Set {_ENGINE}.enable_return_routed_experts to true (with the mp "
                         f"backend), or drop moe_enable_routing_replay."))
    gpus_per_node = spec.role_plan.policy.num_gpus_per_node
    tp_pp = rollout.tensor_parallel_size * rollout.pipeline_parallel_size
    if spec.role_plan.placement.colocate_all and backend == "mp" and tp_pp > gpus_per_node:
        problems.append(((_set(f"{_ENGINE}.distributed_executor_backend"),
                          "role_plan.rollout.tensor_parallel_size"),
                         f"with the mp backend an engine's TP x PP {tp_pp} must fit in one node "
                         f"of {gpus_per_node} GPUs",
                         "Use the ray backend for engines that span nodes."))
    return problems


@rule(
    "SET012",
    "Inference-engine settings: PD split, executor backend, router replay, mp engines in a node.",
    example=Example(edits={"settings": {f"{_ENGINE}.enable_pd": True}}),
)
def engine_settings(check: Check) -> list[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_inference_engine_cfg` (PD
    disaggregation's `num_prefill`, the executor backend, rollout router replay, an mp engine
    within one node under colocate_all) and `validate_megatron_cfg` (routing replay needs the
    engines to return routed experts)."""
    findings: list[Finding] = []
    spec = check.spec
    plan = check.plan
    rollout = plan.rollout
    settings, runtime = spec.settings, spec.runtime
    key = (id(settings), id(runtime), rollout.num_engines, plan.strategy,
           plan.policy.num_gpus_per_node,
           rollout.tensor_parallel_size * rollout.pipeline_parallel_size,
           plan.placement.colocate_all)
    known = _ENGINE_FINDINGS.get(key)
    if known is None:
        known = _ENGINE_FINDINGS.put(key, (settings, runtime, tuple(
            error("SET012", paths, what, fix) for paths, what, fix in _engine_problems(spec))))
    findings.extend(known[2])
    return findings


_ENGINE_FINDINGS: Memo[tuple[Any, ...], tuple[Any, Any, tuple[Finding, ...]]] = Memo(1024)
"""SET012's findings by all _engine_problems reads: the spec's `settings` and `runtime` (their
identities, the objects held so that no other takes them while the entry lives) and the plan's
engines, strategy, policy GPUs per node, engine TP x PP and colocate_all."""


# Values SkyRL 0.3.0's config dataclasses and validate_cfg refuse on their own:
# `(name, accepted?, requirement, where SkyRL checks it)`.
_VALUE_CHECKS = (
    ("trainer.sequence_parallel_backend", lambda v: v == "ulysses", "ulysses",
     "validate_cfg"),
    ("data.dataloader.num_workers", lambda v: v is None or v >= 0, "None or >= 0",
     "DataLoaderConfig.__post_init__"),
    ("trainer.algorithm.dppo.dppo_type", lambda v: v in ("binary_tv", "binary_kl"),
     "binary_tv or binary_kl", "DPPOConfig.__post_init__"),
    ("trainer.policy.megatron_config.hf_export_config.save_every_n_ranks", lambda v: v >= 1,
     ">= 1", "MegatronHFExportConfig.__post_init__"),
)


@rule(
    "SET013",
    "Values SkyRL's own config classes refuse (SP backend, dataloader, DPPO type, export ranks).",
    example=Example(edits={"settings": {"data.dataloader.num_workers": -1}}),
    reads_plan=False,
)
def config_values(check: Check) -> Iterator[Finding]:
    """Error. Mirrors the checks of skyrl/train/config/config.py's dataclasses
    (`DataLoaderConfig`, `DPPOConfig`, `MegatronHFExportConfig` `__post_init__`,
    `SkyRLTrainConfig.__post_init__`: persistent workers need num_workers > 0) and of
    skyrl/train/utils/utils.py `validate_cfg` (ulysses sequence parallelism only;
    `language_model_only` on the policy needs it on the engines)."""
    spec = check.spec
    for name, accepted, requirement, where in _VALUE_CHECKS:
        value = spec.skyrl_setting(name)
        if not accepted(value):
            yield error("SET013", (_set(name),),
                        f"{name} is {value!r}; {_skyrl(check)} ({where}) takes {requirement}",
                        f"Set {name} to {requirement}.")
    workers = "data.dataloader.num_workers"
    if spec.skyrl_setting("data.dataloader.persistent_workers") and spec.settings.get(workers) == 0:
        yield error("SET013", (_set("data.dataloader.persistent_workers"), _set(workers)),
                    "persistent dataloader workers with num_workers 0: there is no worker to "
                    "keep", f"Set {workers} above 0 (SkyRL's default is 8), or drop "
                    f"persistent_workers.")
    if (spec.skyrl_setting("trainer.policy.language_model_only")
            and not spec.skyrl_setting(f"{_ENGINE}.language_model_only")):
        yield error("SET013", (_set("trainer.policy.language_model_only"),
                               _set(f"{_ENGINE}.language_model_only")),
                    "trainer.policy.language_model_only is true but the engines load the whole "
                    "model (generator.inference_engine.language_model_only false)",
                    f"Set {_ENGINE}.language_model_only to true as well.")
    kl = spec.algorithm.kl
    if (spec.skyrl_setting("trainer.policy.language_model_only") and
            (kl.use_kl_loss or kl.use_kl_in_reward)
            and not spec.skyrl_setting("trainer.ref.language_model_only")):
        yield error("SET013", (_set("trainer.policy.language_model_only"),
                               _set("trainer.ref.language_model_only")),
                    "trainer.policy.language_model_only is true and the run uses a reference, "
                    "which loads the whole model (trainer.ref.language_model_only false)",
                    "Set trainer.ref.language_model_only to true as well.")


def _smoke_with_other_settings(data: dict[str, Any]) -> None:
    """a smoke of the run whose full run sets LoRA rank 32, the smoke none"""
    data["version"] = "dev"
    data["smoke_of"] = {
        "name": data["name"], "version": "2026.11.29", "role_plan": data["role_plan"],
        "runtime": data["runtime"], "allocation": data["execution"]["allocation"],
        "handoff_kinds": {"model": "model", "tokenizer": "model", "train_data": "dataset",
                          "eval_data": "dataset"},
        "settings": {LORA_RANK: 32},
    }
    data["name"] = f"{data['name']}-smoke"


@rule(
    "SET014",
    "A smoke run sets what its full run sets (it tests the full run's configuration).",
    example=Example(edits=_smoke_with_other_settings),
    reads_plan=False,
)
def smoke_settings(check: Check) -> Iterator[Finding]:
    """Warning. Beyond SkyRL: a smoke stands for its full run before GPUs are paid for, and
    settings such as LoRA, offload or the vLLM memory fraction change what the run loads and
    syncs; a smoke without them proves less than it claims (the BUILD macro
    `rl_run_with_smoke` gives both the same settings)."""
    spec = check.spec
    if spec.smoke_of is None:
        return
    full, own = spec.smoke_of.settings, spec.settings
    differ = sorted(name for name in {*full, *own} if full.get(name) != own.get(name))
    if differ:
        shown = ", ".join(f"{name} {own.get(name, '(unset)')!r} vs {full.get(name, '(unset)')!r}"
                          for name in differ)
        yield warning(
            "SET014", tuple(_set(name) for name in differ),
            f"the smoke's settings differ from its full run's {spec.smoke_of.name}@"
            f"{spec.smoke_of.version}: {shown} (smoke vs full run)",
            "Give the smoke the full run's settings (rl_run_with_smoke does), so that it tests "
            "the configuration the full run launches.",
        )
