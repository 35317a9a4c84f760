"""The actor on one simulated GPU: hosts the policy, reference and rollout ranks placed on it.

Policy ranks form one torch.distributed gloo group (data parallel, gradients all-reduced).
A rollout rank keeps its own copy of the policy, refreshed from the object store after every
step. Every worker runs torch on one thread: results are reproducible and two cores are
shared fairly between actors.
"""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import ray
import torch
import torch.distributed as dist
from safetensors.torch import load_file

from rlaunch.models.generate import completion_logprobs, pack, sample
from rlaunch.models.tiny import (
    TinyLM,
    load_pretrained,
    save_pretrained,
    save_safetensors,
    weights_sha256,
)
from rlaunch.runtimes.smoke.grpo import clipped_policy_loss, kl_penalty, masked_mean

MODEL_FILE = "model.safetensors"
OPTIMIZER_FILE = "optimizer.pt"
RNG_FILE = "rng.pt"


@dataclass(frozen=True)
class WorkerSettings:
    model_dir: str
    reference_dir: str
    learning_rate: float
    adam_betas: tuple[float, float]
    weight_decay: float
    max_grad_norm: float
    temperature: float
    max_generate_length: int
    micro_train_batch_size: int
    micro_forward_batch_size: int
    eps_clip_low: float
    eps_clip_high: float
    use_kl_loss: bool
    kl_loss_coef: float
    kl_estimator: str
    policy_world: int
    seed: int


def _chunks(items: list, size: int) -> list[list]:
    return [items[start : start + size] for start in range(0, len(items), size)]


class SimGPUWorker:
    def __init__(
        self,
        *,
        index: int,
        policy_rank: int | None,
        ref_rank: int | None,
        rollout_rank: int | None,
        settings: WorkerSettings,
    ) -> None:
        torch.set_num_threads(1)
        self.index = index
        self.policy_rank = policy_rank
        self.ref_rank = ref_rank
        self.rollout_rank = rollout_rank
        self.settings = settings
        self.policy: TinyLM | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.reference: TinyLM | None = None
        self.rollout: TinyLM | None = None
        self._group_ready = False
        if policy_rank is not None:
            torch.manual_seed(settings.seed + policy_rank)
            random.seed(settings.seed + policy_rank)
            self.policy, self.tokenizer = load_pretrained(settings.model_dir)
            self.policy.train()
            self.optimizer = torch.optim.AdamW(
                self.policy.parameters(),
                lr=settings.learning_rate,
                betas=settings.adam_betas,
                weight_decay=settings.weight_decay,
            )
        if ref_rank is not None:
            self.reference, self.tokenizer = load_pretrained(settings.reference_dir)
            self.reference.requires_grad_(False)
        if rollout_rank is not None:
            self.rollout, self.tokenizer = load_pretrained(settings.model_dir)
            self.rollout.requires_grad_(False)

    # --- process group -------------------------------------------------------------------

    def rendezvous_address(self) -> tuple[str, int]:
        """This node's address and a free port for the policy group's TCP store."""
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind(("", 0))
            port = probe.getsockname()[1]
        return ray.util.get_node_ip_address(), port

    def join_policy_group(self, address: str, port: int) -> None:
        if self.settings.policy_world > 1:
            dist.init_process_group(
                "gloo",
                init_method=f"tcp://{address}:{port}",
                rank=self.policy_rank,
                world_size=self.settings.policy_world,
                timeout=timedelta(minutes=5),
            )
            self._group_ready = True

    # --- rollout -------------------------------------------------------------------------

    def generate(self, prompts: list[str], n: int, seed: int, temperature: float) -> dict:
        """`n` completions per prompt (prompt-major), sampled with a generator seeded by `seed`."""
        repeated = [prompt for prompt in prompts for _ in range(n)]
        generator = torch.Generator().manual_seed(seed)
        out = sample(
            self.rollout,
            self.tokenizer,
            repeated,
            max_new_tokens=self.settings.max_generate_length,
            temperature=temperature,
            generator=generator,
        )
        return {"token_ids": out.token_ids, "logprobs": out.logprobs, "texts": out.texts}

    def load_rollout_weights(self, handle: list) -> str:
        """Refresh the rollout copy from the object store (`handle` = [ObjectRef])."""
        state = ray.get(handle[0])
        self.rollout.load_state_dict(state)
        return weights_sha256(self.rollout.state_dict())

    # --- reference -----------------------------------------------------------------------

    @torch.no_grad()
    def _logprobs(self, model: TinyLM, sequences: list[dict]) -> list[list[float]]:
        result: list[list[float]] = []
        for micro in _chunks(sequences, self.settings.micro_forward_batch_size):
            batch = pack([s["prompt_ids"] for s in micro], [s["completion_ids"] for s in micro],
                         self.tokenizer.pad_id)
            values = completion_logprobs(model, batch, temperature=self.settings.temperature)
            result += [values[row, : len(s["completion_ids"])].tolist()
                       for row, s in enumerate(micro)]
        return result

    def ref_logprobs(self, sequences: list[dict]) -> list[list[float]]:
        return self._logprobs(self.reference, sequences)

    def policy_logprobs(self, sequences: list[dict]) -> list[list[float]]:
        return self._logprobs(self.policy, sequences)

    # --- policy --------------------------------------------------------------------------

    def train(self, minibatches: list[list[dict]]) -> dict:
        """One training step: an optimizer step per mini batch (this rank's share of it).

        Old log-probs come from the policy before the first update (the rollout policy)."""
        policy, settings = self.policy, self.settings
        old = [self._logprobs(policy, chunk) for chunk in minibatches]
        totals = {"policy_loss": 0.0, "kl": 0.0, "clip_fraction": 0.0, "grad_norm": 0.0}
        micro_count = 0
        for chunk, chunk_old in zip(minibatches, old, strict=True):
            self.optimizer.zero_grad(set_to_none=False)
            micros = _chunks(list(zip(chunk, chunk_old, strict=True)),
                             settings.micro_train_batch_size)
            for micro in micros:
                loss, metrics = self._micro_loss(micro)
                (loss / len(micros)).backward()
                for key, value in metrics.items():
                    totals[key] += value
                micro_count += 1
            self._all_reduce_gradients()
            norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), settings.max_grad_norm)
            totals["grad_norm"] += float(norm) * len(micros)
            self.optimizer.step()
        return {key: value / max(micro_count, 1) for key, value in totals.items()}

    def _micro_loss(self, micro: list[tuple[dict, list[float]]]) -> tuple[torch.Tensor, dict]:
        settings = self.settings
        sequences = [item[0] for item in micro]
        batch = pack([s["prompt_ids"] for s in sequences], [s["completion_ids"] for s in sequences],
                     self.tokenizer.pad_id)
        width = batch.completion_mask.shape[1]

        def padded(rows: list[list[float]]) -> torch.Tensor:
            return torch.tensor([row + [0.0] * (width - len(row)) for row in rows])

        logprobs = completion_logprobs(self.policy, batch, temperature=settings.temperature)
        old = padded([item[1] for item in micro])
        advantages = torch.tensor([s["advantage"] for s in sequences], dtype=torch.float32)
        loss, clip_fraction = clipped_policy_loss(
            logprobs, old, advantages, batch.completion_mask,
            eps_clip_low=settings.eps_clip_low, eps_clip_high=settings.eps_clip_high,
        )
        metrics = {"policy_loss": loss.item(), "clip_fraction": clip_fraction.item(), "kl": 0.0}
        if sequences[0].get("ref_logprobs") is not None:
            ref = padded([s["ref_logprobs"] for s in sequences])
            per_token = kl_penalty(logprobs, ref, settings.kl_estimator)
            kl = masked_mean(per_token, batch.completion_mask)
            metrics["kl"] = kl.item()
            if settings.use_kl_loss:
                loss = loss + settings.kl_loss_coef * kl
        return loss, metrics

    def _all_reduce_gradients(self) -> None:
        if not self._group_ready:
            return
        for parameter in self.policy.parameters():
            if parameter.grad is None:  # every rank must all-reduce the same shapes
                parameter.grad = torch.zeros_like(parameter)
        grads = [p.grad for p in self.policy.parameters()]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat /= self.settings.policy_world
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
            offset += grad.numel()

    def publish_weights(self) -> list:
        """Put the policy weights in the object store: [ObjectRef, sha256 of the weights].

        The reference is wrapped in a list so that Ray hands it on unresolved."""
        state = {name: tensor.detach().clone() for name, tensor in self.policy.state_dict().items()}
        return [ray.put(state), weights_sha256(state)]

    def export(self, directory: str) -> str:
        save_pretrained(self.policy, self.tokenizer, directory)
        return weights_sha256(self.policy.state_dict())

    # --- checkpoints ---------------------------------------------------------------------

    def save_checkpoint(self, directory: str) -> None:
        target = Path(directory) / f"policy_rank{self.policy_rank}"
        target.mkdir(parents=True, exist_ok=True)
        save_safetensors(self.policy.state_dict(), target / MODEL_FILE)
        torch.save(self.optimizer.state_dict(), target / OPTIMIZER_FILE)
        torch.save({"torch": torch.get_rng_state(), "python": random.getstate()}, target / RNG_FILE)

    def load_checkpoint(self, directory: str) -> str:
        source = Path(directory) / f"policy_rank{self.policy_rank}"
        missing = [n for n in (MODEL_FILE, OPTIMIZER_FILE, RNG_FILE) if not (source / n).is_file()]
        if missing:
            raise FileNotFoundError(
                f"checkpoint {directory} has no {', '.join(missing)} for policy rank "
                f"{self.policy_rank}; it was written by a different role plan or is incomplete"
            )
        self.policy.load_state_dict(load_file(str(source / MODEL_FILE)))
        self.optimizer.load_state_dict(torch.load(source / OPTIMIZER_FILE, weights_only=True))
        rng = torch.load(source / RNG_FILE, weights_only=False)
        torch.set_rng_state(rng["torch"])
        random.setstate(rng["python"])
        return weights_sha256(self.policy.state_dict())

    def close(self) -> None:
        if self._group_ready:
            dist.destroy_process_group()
            self._group_ready = False
