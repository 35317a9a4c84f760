"""SkyRL 0.3.0's own training loop on CPU: the one module that replaces what needs a GPU.

A rehearsal (`rlaunch launch --rehearse`, docs/rehearsal.md) runs SkyRL's entrypoint
`python -m skyrl.train.entrypoints.main_base <overrides> trainer.override_entrypoint=<this
module>`. SkyRL's `main` hands an `override_entrypoint` to the named module's `main()`
(skyrl/train/entrypoints/main_base.py, `main`), which here does what SkyRL's own `main` does
after that point: `SkyRLTrainConfig.from_cli_overrides`, `validate_cfg`, `initialize_ray`
(with `prepare_runtime_environment`), then one Ray task (1 CPU, like `skyrl_entrypoint`) that
builds the experiment and calls its `run()`. Everything SkyRL does in that task is SkyRL's code:
`BasePPOExp` (tokenizer, PromptDataset, colocation placement group, tracker, trajectory logger,
generator, `RayPPOTrainer`), `RayPPOTrainer.build_models` (the worker actor groups, placed on
the head's simulated GPUs as on real ones), `RayPPOTrainer.train()` with its own advantage
estimation, loss, eval, checkpoints, pointer file, HF export, resume and eval dumps, and the
workers' own base classes (`PolicyWorkerBase.forward_backward`, `optim_step`, `forward`,
`save_checkpoint`, `load_checkpoint`, `save_hf_model`), and `FSDPStrategy`'s own
`save_checkpoint`, `load_checkpoint`, `save_hf_model` and `optimizer_step`.

What is replaced, and why (each needs a GPU or a CUDA-only package):
1. The worker classes: `fsdp_worker.PolicyWorker`, `RefWorker`, `CriticWorker` import
   `flash_attn` (CUDA only) and shard with FSDP2 over NCCL. `CPUPolicyWorker`, `CPURefWorker`
   and `CPUCriticWorker` subclass SkyRL's `PolicyWorkerBase`, `RefWorkerBase` and
   `CriticWorkerBase` and differ only in:
   - `init_worker_process_group`: gloo instead of `cpu:gloo,cuda:nccl`, and the (dp, sp)
     device mesh on "cpu" instead of "cuda";
   - `init_model`: the model built as `fsdp_worker` builds it (SkyRL's `HFModelWrapper` /
     `get_llm_for_sequence_regression`, sdpa attention, float32) but prepared by `CPUStrategy`;
   - `offload_to_cpu` / `backload_to_gpu`: nothing to move (SkyRL's `Worker.offload_to_cpu`
     divides by `torch.cuda.device_count()`, 0 here);
   - weight sync (`init_weight_sync_state`, `broadcast_to_inference_engines`): SkyRL sends
     weights over CUDA IPC or an NCCL group; here rank 0 sends its full state dict to the CPU
     engines through Ray's object store.
   In these processes `torch.cuda.current_device()` answers the CPU and
   `torch.cuda.synchronize()` does nothing (`_address_the_cpu`): SkyRL's worker code moves
   each micro batch to `torch.cuda.current_device()`, and its strategy synchronizes after a
   save; with these two answers the rest of SkyRL's worker code runs unchanged.
2. `CPUStrategy` subclasses SkyRL's `FSDPStrategy` and replaces only `setup_distributed`
   (no `torch.cuda.set_device`, a CPU mesh), `prepare` (no `fully_shard`: each rank keeps the
   whole model, with the AdamW and scheduler `FSDPStrategy` makes), `optimizer_step` (the
   gradients are first averaged over the data-parallel ranks with gloo, which FSDP2's
   reduce-scatter does on GPUs; then `FSDPStrategy.optimizer_step`), and offload/backload
   (nothing to move). Checkpoint files, their names and the HF export are `FSDPStrategy`'s.
3. `flash_attn.bert_padding`: `HFModelWrapper`'s module imports `pad_input` and
   `unpad_input` from the CUDA-only flash-attn package. `_flash_attn_padding` puts a module of
   that name in place, while that module is imported, with both functions written with torch
   (they are index operations). A
   rehearsal runs with `trainer.flash_attn=false` and
   `trainer.remove_microbatch_padding=false`, so they are not called in its path.
4. The inference engines: SkyRL serves rollouts from vLLM servers (CUDA only) behind an HTTP
   router. `CPUInferenceEngine` is a Ray actor per engine (`generator.inference_engine.
   num_engines`, placed like SkyRL's: in the colocation placement group when `colocate_all`)
   that generates with `transformers`' `generate` from the policy's model on CPU, with vLLM's
   sampling parameters as SkyRL passes them (temperature, top_p, top_k, min_p, max_tokens,
   min_tokens, stop strings, logprobs of the sampled tokens), and stop reasons as vLLM names
   them ("stop", "length"); it prints each weight sync with a digest of the tensors it got
   (`state_digest`). `CPUInferenceClient` implements SkyRL's
   `InferenceEngineInterface` over those actors; sleep and wake-up free nothing (no GPU
   memory), the OpenAI-compatible HTTP endpoints are refused (no server runs).
5. `CPUPPOExp` subclasses SkyRL's `BasePPOExp`: `get_inference_client` returns the CPU
   client, and `_setup_trainer` does what `BasePPOExp._setup_trainer` does (tracker, client,
   generator, trainer, trajectory logger, `build_models`) with the CPU worker classes instead
   of `fsdp_worker`'s, whose import needs flash-attn.
6. SkyRL's eval-only entrypoint, `skyrl.train.entrypoints.main_generate`, honours no
   `override_entrypoint` (its `main` parses the overrides strictly and runs its own Ray task
   `eval_entrypoint`, skyrl/train/entrypoints/main_generate.py), and its
   `EvalOnlyEntrypoint.get_inference_client` is `BasePPOExp`'s, which starts vLLM servers. So
   a rehearsal of an eval stage runs this module as the program, `python -m
   rlaunch.runtimes.skyrl_cpu skyrl.train.entrypoints.main_generate <overrides>`, and
   `main_generate` does what SkyRL's `main_generate.main` does (`from_cli_overrides`,
   `validate_generator_cfg`, `initialize_ray`, one Ray task of 1 CPU, the metrics logged) with
   `CPUEvalOnlyExp`, a subclass of SkyRL's `EvalOnlyEntrypoint` whose only change is
   `get_inference_client`: the CPU engines of 4. Its `run` is SkyRL's: the generator,
   `skyrl.train.evaluate.evaluate` (or `evaluate_step_wise`) with `global_step=None`, SkyRL's
   metrics, its dump (`dump_per_dataset_eval_results` into `trainer.export_path`/dumped_evals/
   eval_only) and its tracker.
7. Not for a GPU, for the size of a rehearsal: `BasePPOExp.get_train_dataset` and
   `get_eval_dataset` (skyrl/train/entrypoints/main_base.py) build SkyRL's `PromptDataset`
   with `num_workers=8`, so its prompt-length filter spawns 8 processes, each importing
   `datasets` and the tokenizer again (about 35 CPU seconds here) to filter the few rows a
   rehearsal keeps. `_PromptsInProcess` builds the same `PromptDataset` from the same
   settings with `num_workers=1`: the same filter over the same rows, in SkyRL's process, and
   the same refusal of a train set smaller than one batch.
Not replaced and not rehearsed: LoRA weight sync, Megatron, multimodal models.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import os
import sys
import types
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
# Imported before the padding module below exists: transformers probes for flash-attn once.
import transformers.modeling_utils  # noqa: F401
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.trainer import get_scheduler


def _unpad_input(hidden_states: torch.Tensor, attention_mask: torch.Tensor,
                 unused_mask: torch.Tensor | None = None) -> tuple[Any, ...]:
    """flash_attn.bert_padding.unpad_input's contract: the tokens the mask keeps, flattened
    over (batch, seq), their flat indices, cumulative sequence lengths, the longest sequence
    and the per-sequence lengths."""
    mask = attention_mask if unused_mask is None else attention_mask + unused_mask
    lengths = mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(mask.flatten(), as_tuple=False).flatten()
    cumulative = torch.nn.functional.pad(torch.cumsum(lengths, dim=0, dtype=torch.int32), (1, 0))
    flat = hidden_states.reshape(-1, *hidden_states.shape[2:])
    used = attention_mask.sum(dim=-1, dtype=torch.int32)
    return flat[indices], indices, cumulative, int(lengths.max().item()), used


def _pad_input(hidden_states: torch.Tensor, indices: torch.Tensor, batch: int,
               seqlen: int) -> torch.Tensor:
    """flash_attn.bert_padding.pad_input's contract: scatter the kept tokens back into a
    zero (batch, seqlen, ...) tensor."""
    rest = hidden_states.shape[1:]
    out = torch.zeros(batch * seqlen, *rest, dtype=hidden_states.dtype,
                      device=hidden_states.device)
    out[indices] = hidden_states
    return out.view(batch, seqlen, *rest)


@contextlib.contextmanager
def _flash_attn_padding() -> Iterator[None]:
    """`flash_attn.bert_padding` (pad_input, unpad_input) in place while SkyRL's model wrapper
    is imported, when flash-attn is not installed; gone after, so that transformers, which
    probes for flash-attn, does not take it for installed."""
    if importlib.util.find_spec("flash_attn") is not None:
        yield
        return
    package = types.ModuleType("flash_attn")
    package.__path__ = []  # a package, so that the submodule import resolves
    padding = types.ModuleType("flash_attn.bert_padding")
    padding.pad_input = _pad_input  # type: ignore[attr-defined]
    padding.unpad_input = _unpad_input  # type: ignore[attr-defined]
    package.bert_padding = padding  # type: ignore[attr-defined]
    sys.modules["flash_attn"] = package
    sys.modules["flash_attn.bert_padding"] = padding
    try:
        yield
    finally:
        del sys.modules["flash_attn"], sys.modules["flash_attn.bert_padding"]


with _flash_attn_padding():  # see 3. in the module's docstring
    from skyrl.backends.skyrl_train.distributed.fsdp_strategy import FSDPStrategy
    from skyrl.backends.skyrl_train.workers.model_wrapper import (
        HFModelWrapper,
        get_llm_for_sequence_regression,
    )

import ray  # noqa: E402
from loguru import logger  # noqa: E402
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy  # noqa: E402
from skyrl.backends.skyrl_train.inference_servers.base import (  # noqa: E402
    InferenceEngineInput,
    InferenceEngineInterface,
    InferenceEngineOutput,
)
from skyrl.backends.skyrl_train.distributed.dispatch import MeshRank  # noqa: E402
from skyrl.backends.skyrl_train.workers.worker import (  # noqa: E402
    CriticWorkerBase,
    PolicyWorkerBase,
    RefWorkerBase,
)
from skyrl.train.config import SkyRLTrainConfig  # noqa: E402
from skyrl.train.dataset import PromptDataset  # noqa: E402
from skyrl.train.entrypoints.main_base import BasePPOExp  # noqa: E402
from skyrl.train.entrypoints.main_generate import EvalOnlyEntrypoint  # noqa: E402
from skyrl.train.utils import validate_cfg  # noqa: E402
from skyrl.train.utils.utils import initialize_ray, validate_generator_cfg  # noqa: E402

OVERRIDE_KEY = "trainer.override_entrypoint"
"""SkyRL's `main` peeks at this override before parsing; the strict parse does not know it."""
_GLOO_TIMEOUT = timedelta(minutes=30)


def _address_the_cpu() -> None:
    """In a CPU worker process: `torch.cuda.current_device()` is the CPU and
    `torch.cuda.synchronize()` does nothing (see 1. in the module's docstring)."""
    torch.cuda.current_device = lambda: torch.device("cpu")  # type: ignore[assignment]
    torch.cuda.synchronize = lambda device=None: None  # type: ignore[assignment]


# ---------------------------------------------------------------------------------------------
# 2. The strategy
# ---------------------------------------------------------------------------------------------


class CPUStrategy(FSDPStrategy):
    """FSDPStrategy without FSDP: every rank holds the whole model; gradients are averaged
    over the ranks with gloo before SkyRL's optimizer step."""

    def setup_distributed(self) -> None:
        self.set_seed(self.seed)
        self.world_size = dist.get_world_size()
        self.device_mesh = None

    def prepare(self, *models_or_model_optim_pairs: Any) -> Any:
        prepared = []
        for arg in models_or_model_optim_pairs:
            if isinstance(arg, tuple):
                model = arg[0]
                module = model.model if isinstance(model, HFModelWrapper) else model
                module.float()
                optimizer = scheduler = None
                config = self.optimizer_config
                if config is not None:
                    optimizer = torch.optim.AdamW(module.parameters(), lr=config.lr,
                                                  betas=config.adam_betas,
                                                  weight_decay=config.weight_decay)
                    scheduler = get_scheduler(config.scheduler, optimizer,
                                              num_warmup_steps=config.num_warmup_steps,
                                              num_training_steps=self.total_training_steps)
                prepared.append((model, optimizer, scheduler))
            else:
                module = arg.model if isinstance(arg, HFModelWrapper) else arg
                module.float()
                prepared.append(arg)
        return prepared[0] if len(prepared) == 1 else prepared

    def optimizer_step(self, optimizer: Any, model: Any, scheduler: Any, name: str = "model",
                       **kwargs: Any) -> Any:
        if self.world_size > 1:
            module = model.model if isinstance(model, HFModelWrapper) else model
            for param in module.parameters():
                if param.grad is not None:
                    dist.all_reduce(param.grad, op=dist.ReduceOp.SUM)
                    param.grad /= self.world_size
        return super().optimizer_step(optimizer, model, scheduler, name=name, **kwargs)

    def offload_to_cpu(self, model: Any, optimizer: Any, offload_optimizer: bool = True,
                       offload_model: bool = True) -> None:
        return None

    def backload_to_gpu(self, model: Any, optimizer: Any, backload_optimizer: bool = True,
                        backload_model: bool = True) -> None:
        return None


def _strategy(cfg: Any, role: Any, *, optimizer: bool, num_training_steps: int | None,
              model_config: Any = None) -> CPUStrategy:
    strategy = CPUStrategy(
        fsdp_config=role.fsdp_config,
        optimizer_config=role.optimizer_config if optimizer else None,
        model_config=model_config,
        fsdp_strategy="fsdp",
        seed=cfg.seed,
        micro_train_batch_size_per_gpu=cfg.micro_train_batch_size_per_gpu,
        num_training_steps=num_training_steps,
    )
    strategy.setup_distributed()
    return strategy


# ---------------------------------------------------------------------------------------------
# 1. The workers
# ---------------------------------------------------------------------------------------------


class _OnCPU:
    """What the three CPU workers share: the process group, the mesh, no offload."""

    def init_worker_process_group(self) -> None:
        _address_the_cpu()
        if not dist.is_initialized():
            dist.init_process_group(backend="gloo", timeout=_GLOO_TIMEOUT)
        dp_size = self._world_size // self.sequence_parallel_size
        self.device_mesh = dist.device_mesh.init_device_mesh(
            "cpu", mesh_shape=(dp_size, self.sequence_parallel_size), mesh_dim_names=("dp", "sp")
        )
        self.mesh_rank = MeshRank(
            dp=self.device_mesh.get_local_rank(mesh_dim="dp"),
            sp=self.device_mesh.get_local_rank(mesh_dim="sp"),
            tp=0, pp=0, world_size=self._world_size, dp_size=self.device_mesh.size(0),
            pp_size=1,
        )

    def offload_to_cpu(self, offload_optimizer: bool = True, offload_model: bool = True) -> None:
        return None

    def backload_to_gpu(self, backload_optimizer: bool = True,
                        backload_model: bool = True) -> None:
        return None

    def empty_cache(self) -> None:
        return None


class CPUPolicyWorkerBase(_OnCPU, PolicyWorkerBase):
    def init_model(self, model_path: str, num_training_steps: int | None = None) -> None:
        policy = self.cfg.policy
        if policy.model.lora.rank > 0:
            raise ValueError("a rehearsal does not rehearse LoRA (trainer.policy.model.lora.rank "
                             f"{policy.model.lora.rank}): its weight sync needs vLLM")
        self.strategy = _strategy(self.cfg, policy, optimizer=not policy.inference_only_init,
                                  num_training_steps=num_training_steps,
                                  model_config=policy.model)
        self._is_lora = False
        self._is_multimodal_lm_only = False
        wrapped = HFModelWrapper(
            model_path,
            use_flash_attention_2=False,
            bf16=False,
            sequence_parallel_size=policy.sequence_parallel_size,
            remove_microbatch_padding=self.cfg.remove_microbatch_padding,
            use_torch_compile=False,
            model_config_kwargs=policy.model_config_kwargs,
            meta_init=False,
            language_model_only=policy.language_model_only,
            logprobs_chunk_size=self.cfg.logprobs_chunk_size,
        )
        if self.cfg.gradient_checkpointing:
            wrapped.gradient_checkpointing_enable(gradient_checkpointing_kwargs={
                "use_reentrant": self.cfg.gradient_checkpointing_use_reentrant})
        self.model, self.optimizer, self.scheduler = self.strategy.prepare((wrapped, None, None))

    async def init_weight_sync_state(self, inference_engine_client: Any,
                                     inference_engine_cfg: Any) -> None:
        self._weight_client = inference_engine_client
        dist.barrier()

    async def broadcast_to_inference_engines(self, inference_engine_client: Any,
                                             inference_engine_cfg: Any,
                                             model_id: str | None = None) -> None:
        if dist.get_rank() == 0:
            state = {name: tensor.detach().clone()
                     for name, tensor in self.model.model.state_dict().items()}
            await inference_engine_client.load_weights(state)
        dist.barrier()

    def _set_pad_token_id(self, pad_token_id: int) -> None:
        self.model.model.config.pad_token_id = pad_token_id


class CPURefWorkerBase(_OnCPU, RefWorkerBase):
    def init_model(self, model_path: str) -> None:
        ref = self.cfg.ref
        self.strategy = _strategy(self.cfg, ref, optimizer=False, num_training_steps=None)
        wrapped = HFModelWrapper(
            model_path,
            use_flash_attention_2=False,
            bf16=False,
            sequence_parallel_size=ref.sequence_parallel_size,
            remove_microbatch_padding=self.cfg.remove_microbatch_padding,
            model_config_kwargs=ref.model_config_kwargs,
            meta_init=False,
            language_model_only=ref.language_model_only,
            logprobs_chunk_size=self.cfg.logprobs_chunk_size,
        )
        self.model = self.strategy.prepare(wrapped)
        self.model.eval()
        self.optimizer = None


class CPUCriticWorkerBase(_OnCPU, CriticWorkerBase):
    def init_model(self, model_path: str, num_training_steps: int | None = None) -> None:
        critic_cfg = self.cfg.critic
        self.strategy = _strategy(self.cfg, critic_cfg, optimizer=True,
                                  num_training_steps=num_training_steps)
        critic = get_llm_for_sequence_regression(
            model_path,
            "critic",
            use_flash_attention_2=False,
            bf16=False,
            lora_rank=0,
            value_head_prefix=self.cfg.algorithm.value_head_prefix,
            init_value_head=self.cfg.policy.model.path == critic_cfg.model.path,
            sequence_parallel_size=critic_cfg.sequence_parallel_size,
            remove_microbatch_padding=self.cfg.remove_microbatch_padding,
            model_config_kwargs=critic_cfg.model_config_kwargs,
            meta_init=False,
        )
        self.model, self.optimizer, self.scheduler = self.strategy.prepare((critic, None, None))

    def _set_pad_token_id(self, pad_token_id: int) -> None:
        self.model.config.pad_token_id = pad_token_id


# As fsdp_worker declares its actors: one simulated GPU each unless the group says otherwise.
CPUPolicyWorker = ray.remote(num_gpus=1)(CPUPolicyWorkerBase)
CPURefWorker = ray.remote(num_gpus=1)(CPURefWorkerBase)
CPUCriticWorker = ray.remote(num_gpus=1)(CPUCriticWorkerBase)


# ---------------------------------------------------------------------------------------------
# 4. The inference engines
# ---------------------------------------------------------------------------------------------


def state_digest(state: dict[str, torch.Tensor]) -> str:
    """`sha256:` over the tensors in the order of their names, each as its name, its size in
    bytes and its bytes (C order, this machine's byte order): what a safetensors file of the
    same tensors gives from its header and data (tests/e2e/test_rehearsal.py)."""
    digest = hashlib.sha256()
    for name in sorted(state):
        data = state[name].detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        digest.update(f"{name}\n{len(data)}\n".encode())
        digest.update(data)
    return f"sha256:{digest.hexdigest()}"


class CPUInferenceEngine:
    """One engine: the policy's model on CPU, generating with transformers."""

    def __init__(self, model_path: str, seed: int, index: int) -> None:
        self.index = index
        self.syncs = 0
        torch.manual_seed(seed)
        self.tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=True)
        self.model = AutoModelForCausalLM.from_pretrained(
            model_path, dtype=torch.float32, attn_implementation="sdpa")
        self.model.eval()

    def load_weights(self, state: dict[str, torch.Tensor]) -> int:
        self.model.load_state_dict(state, strict=True)
        self.syncs += 1
        print(f"rlaunch.runtimes.skyrl_cpu: engine {self.index} loaded the policy's "
              f"{len(state)} tensors (weight sync {self.syncs}, {state_digest(state)})",
              flush=True)
        return len(state)

    def generate(self, prompts: list[list[int]], params: dict[str, Any]) -> dict[str, list]:
        tokenizer, model = self.tokenizer, self.model
        eos = model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        eos_ids.add(tokenizer.eos_token_id)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(eos_ids)
        longest = max(len(p) for p in prompts)
        input_ids = torch.tensor([[pad] * (longest - len(p)) + list(p) for p in prompts])
        mask = torch.tensor([[0] * (longest - len(p)) + [1] * len(p) for p in prompts])
        temperature = float(params.get("temperature") or 0.0)
        sampling: dict[str, Any] = {"do_sample": temperature > 0}
        if temperature > 0:
            sampling["temperature"] = temperature
            sampling["top_p"] = float(params.get("top_p") or 1.0)
            top_k = int(params.get("top_k") or -1)
            sampling["top_k"] = top_k if top_k > 0 else None
            if params.get("min_p"):
                sampling["min_p"] = float(params["min_p"])
        stop = params.get("stop") or None
        with torch.no_grad():
            out = model.generate(
                input_ids=input_ids, attention_mask=mask, pad_token_id=pad,
                eos_token_id=sorted(eos_ids), max_new_tokens=int(params["max_tokens"]),
                min_new_tokens=int(params.get("min_tokens") or 0), stop_strings=stop,
                tokenizer=tokenizer if stop else None, return_dict_in_generate=True,
                output_logits=params.get("logprobs") is not None, **sampling)
        generated = out.sequences[:, longest:]
        result: dict[str, list] = {"responses": [], "response_ids": [], "stop_reasons": [],
                                   "response_logprobs": []}
        for row, tokens in enumerate(generated.tolist()):
            ids: list[int] = []
            reason = "length"
            for token in tokens:
                ids.append(token)
                if token in eos_ids:
                    reason = "stop"
                    break
            text = tokenizer.decode(ids, skip_special_tokens=True)
            if reason == "length" and stop and any(s in text for s in stop):
                reason = "stop"
            result["responses"].append(text)
            result["response_ids"].append(ids)
            result["stop_reasons"].append(reason)
            if out.logits is not None:
                logprobs = []
                for step, token in enumerate(ids):
                    scores = out.logits[step][row].float()
                    if temperature > 0:
                        scores = scores / temperature
                    logprobs.append(float(torch.log_softmax(scores, dim=-1)[token]))
                result["response_logprobs"].append(logprobs)
        return result


class CPUInferenceClient(InferenceEngineInterface):
    """SkyRL's inference client interface over the CPU engines (one Ray actor each)."""

    def __init__(self, engines: list[Any], model_name: str, world_size: tuple[int, int]) -> None:
        self.engines = engines
        self._model_name = model_name
        self._world_size = world_size
        self.weight_version = 0

    @property
    def model_name(self) -> str:
        return self._model_name

    async def generate(self, input_batch: InferenceEngineInput,
                       model: str | None = None) -> InferenceEngineOutput:
        prompts = input_batch.get("prompt_token_ids")
        if prompts is None:
            raise ValueError("the CPU engines take token ids (SkyRL's generator sends them)")
        params = dict(input_batch.get("sampling_params") or {})
        count = len(self.engines)
        shares = [list(range(i, len(prompts), count)) for i in range(count)]
        answers = await asyncio.gather(*[
            engine.generate.remote([prompts[i] for i in share], params)
            for engine, share in zip(self.engines, shares) if share])
        merged: dict[int, tuple[str, list[int], str, list[float] | None]] = {}
        for share, answer in zip([s for s in shares if s], answers):
            for position, index in enumerate(share):
                logprobs = answer["response_logprobs"]
                merged[index] = (answer["responses"][position], answer["response_ids"][position],
                                 answer["stop_reasons"][position],
                                 logprobs[position] if logprobs else None)
        rows = [merged[i] for i in range(len(prompts))]
        with_logprobs = all(row[3] is not None for row in rows)
        return InferenceEngineOutput(
            responses=[row[0] for row in rows], response_ids=[row[1] for row in rows],
            stop_reasons=[row[2] for row in rows],
            response_logprobs=[row[3] for row in rows] if with_logprobs else None,
            prompt_logprobs=None, rollout_expert_indices=None)

    async def load_weights(self, state: dict[str, torch.Tensor]) -> None:
        ref = ray.put(state)
        await asyncio.gather(*[engine.load_weights.remote(ref) for engine in self.engines])

    def increment_weight_version(self) -> None:
        self.weight_version += 1

    def get_endpoint_url(self) -> str:
        raise NotImplementedError("a rehearsal serves no HTTP endpoint (vLLM's router is not "
                                  "rehearsed)")

    async def chat_completion(self, request_payload: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError("a rehearsal serves no chat completions (vLLM is not "
                                  "rehearsed); use SkyRL's token-in generator")

    async def render_chat_completion(self, request_payload: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError("a rehearsal serves no chat completions (vLLM is not "
                                  "rehearsed)")

    async def completion(self, request_payload: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError("a rehearsal serves no completions (vLLM is not rehearsed)")

    async def wake_up(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def sleep(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def init_weight_update_communicator(self, init_info: Any) -> None:
        return None

    async def update_named_weights(self, request: Any) -> None:
        raise NotImplementedError("a rehearsal syncs whole state dicts (load_weights)")

    async def teardown(self) -> None:
        for engine in self.engines:
            ray.kill(engine)

    async def reset_prefix_cache(self, reset_running_requests: bool = False) -> None:
        return None

    async def pause_generation(self) -> None:
        return None

    async def resume_generation(self) -> None:
        return None

    async def finish_session(self, session_id: str) -> None:
        return None

    async def get_world_size(self) -> tuple[int, int]:
        return self._world_size


# ---------------------------------------------------------------------------------------------
# 5. The experiment and the entrypoint
# ---------------------------------------------------------------------------------------------


class _CPUEngines:
    """What both CPU experiments share: the CPU engines as SkyRL's inference client."""

    cfg: SkyRLTrainConfig
    colocate_pg: Any

    def get_inference_client(self) -> CPUInferenceClient:
        engine_cfg = self.cfg.generator.inference_engine
        per_engine = (engine_cfg.tensor_parallel_size * engine_cfg.pipeline_parallel_size
                      * engine_cfg.data_parallel_size)
        actor = ray.remote(CPUInferenceEngine)
        engines = []
        for index in range(engine_cfg.num_engines):
            options: dict[str, Any] = {"num_cpus": 0}
            if self.colocate_pg is not None:
                bundle = self.colocate_pg.reordered_bundle_indices[index * per_engine]
                options["num_gpus"] = 0.2
                options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                    placement_group=self.colocate_pg.pg, placement_group_bundle_index=bundle)
            else:
                options["num_gpus"] = per_engine
            engines.append(actor.options(**options).remote(
                self.cfg.trainer.policy.model.path, self.cfg.trainer.seed + index, index))
        return CPUInferenceClient(engines, self.cfg.trainer.policy.model.path,
                                  (engine_cfg.num_engines * per_engine, per_engine))


class _PromptsInProcess:
    """SkyRL's datasets, their filter run in SkyRL's process (see 7. above)."""

    cfg: SkyRLTrainConfig
    tokenizer: Any

    def _prompts(self, files: list[str]) -> PromptDataset:
        return PromptDataset(datasets=files, tokenizer=self.tokenizer,
                             max_prompt_length=self.cfg.trainer.max_prompt_length,
                             num_workers=1)

    def get_eval_dataset(self) -> PromptDataset | None:
        if self.cfg.trainer.eval_interval > 0 and self.cfg.data.val_data:
            return self._prompts(self.cfg.data.val_data)
        return None


class CPUPPOExp(_CPUEngines, _PromptsInProcess, BasePPOExp):
    def get_train_dataset(self) -> PromptDataset:
        dataset = self._prompts(self.cfg.data.train_data)
        batch = self.cfg.trainer.train_batch_size
        if len(dataset) < batch:
            # BasePPOExp.get_train_dataset asserts the same, with this message.
            raise AssertionError(f"dataset should be at least as large as `train_batch_size` "
                                 f"{batch}, got size {len(dataset)}")
        return dataset

    def _setup_trainer(self) -> Any:
        # BasePPOExp._setup_trainer's steps, with the CPU worker classes.
        os.makedirs(self.cfg.trainer.export_path, exist_ok=True)
        os.makedirs(self.cfg.trainer.ckpt_path, exist_ok=True)
        tracker = self.get_tracker()
        client = self.get_inference_client()
        generator = self.get_generator(self.cfg, self.tokenizer, client)
        trainer = self.get_trainer(cfg=self.cfg, tracker=tracker, tokenizer=self.tokenizer,
                                   train_dataset=self.train_dataset,
                                   eval_dataset=self.eval_dataset,
                                   inference_engine_client=client, generator=generator,
                                   colocate_pg=self.colocate_pg)
        trainer.trajectory_logger = self.get_trajectory_logger()
        self.trainer = trainer
        trainer.build_models(CPUPolicyWorker, CPUCriticWorker, CPURefWorker)
        return trainer


@ray.remote(num_cpus=1)
def cpu_entrypoint(cfg: SkyRLTrainConfig) -> None:
    CPUPPOExp(cfg).run()


def main() -> None:
    """What SkyRL's `main` does after its override check, with the CPU experiment."""
    argv = [arg for arg in sys.argv[1:] if not arg.startswith(OVERRIDE_KEY + "=")]
    cfg = SkyRLTrainConfig.from_cli_overrides(argv)
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(cpu_entrypoint.remote(cfg))


MAIN_GENERATE = "skyrl.train.entrypoints.main_generate"
"""SkyRL's eval-only entrypoint, which this module runs as a program (see 6. above)."""
USAGE = (f"usage: python -m rlaunch.runtimes.skyrl_cpu {MAIN_GENERATE} OVERRIDES...\n"
         "(SkyRL's training entrypoint, skyrl.train.entrypoints.main_base, hands over to this "
         f"module itself: {OVERRIDE_KEY}=rlaunch.runtimes.skyrl_cpu)")


class CPUEvalOnlyExp(_CPUEngines, _PromptsInProcess, EvalOnlyEntrypoint):
    """SkyRL's `EvalOnlyEntrypoint` (datasets, tokenizer, colocation placement group, `run`:
    generator, `evaluate`, dump, tracker) with the CPU engines as its inference client, and its
    eval set filtered in its process."""


@ray.remote(num_cpus=1)
def cpu_eval_entrypoint(cfg: SkyRLTrainConfig) -> dict[str, Any]:
    # main_generate's eval_entrypoint: the client built outside the event loop, then run().
    exp = CPUEvalOnlyExp(cfg)
    client = exp.get_inference_client()
    return asyncio.run(exp.run(client))


def main_generate(argv: list[str]) -> dict[str, Any]:
    """What SkyRL's `main_generate.main` does, with the CPU experiment; returns the metrics."""
    cfg = SkyRLTrainConfig.from_cli_overrides(argv)
    validate_generator_cfg(cfg)
    initialize_ray(cfg)
    metrics = ray.get(cpu_eval_entrypoint.remote(cfg))
    logger.info(f"Metrics from eval only run: {metrics}")
    return metrics


def program(argv: list[str]) -> int:
    """`python -m rlaunch.runtimes.skyrl_cpu skyrl.train.entrypoints.main_generate
    <overrides>`: SkyRL's eval-only entrypoint with the CPU engines."""
    if not argv or argv[0] != MAIN_GENERATE:
        print(USAGE, file=sys.stderr)
        return 2
    main_generate(argv[1:])
    return 0


__all__ = ["CPUEvalOnlyExp", "CPUPPOExp", "CPUInferenceClient", "CPUStrategy", "main",
           "main_generate", "program"]


if __name__ == "__main__":
    # Through the module's importable name, so that Ray pickles the task and the classes by
    # reference, as it pickles SkyRL's own, not by value as __main__'s.
    from rlaunch.runtimes.skyrl_cpu import program as run_program

    sys.exit(run_program(sys.argv[1:]))
