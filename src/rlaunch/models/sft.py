"""Supervised fine-tuning and evaluation of TinyLM on prompt/solution pairs."""

from __future__ import annotations

import random
from collections.abc import Callable

import torch

from rlaunch.models.generate import completion_logprobs, pack, sample
from rlaunch.models.tiny import TinyLM
from rlaunch.models.tokenizer import CharTokenizer
from rlaunch.tasks.countdown import reward as countdown_reward
from rlaunch.tasks.countdown import solution as countdown_solution


def sft_train(
    model: TinyLM,
    tokenizer: CharTokenizer,
    problems: list[dict],
    *,
    steps: int,
    seed: int,
    solution: Callable[[dict], str] | None = None,
    batch_size: int = 64,
    learning_rate: float = 3e-3,
    log_every: int = 0,
) -> list[float]:
    """Train in place on `prompt -> solution<eos>` (loss on completion tokens only).

    `solution` defaults to the countdown task's. Deterministic for a given seed, model
    initialisation and thread count. Returns the loss of every step."""
    if steps < 0 or batch_size < 1:
        raise ValueError(f"steps must be >= 0 and batch_size >= 1, got {steps}, {batch_size}")
    if not problems:
        raise ValueError("sft_train needs at least one problem")
    if solution is None:
        solution = countdown_solution
    encoded = [
        (tokenizer.encode(p["prompt"], bos=True), tokenizer.encode(solution(p), eos=True))
        for p in problems
    ]
    rng = random.Random(f"sft:{seed}")
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / 20) * max(0.1, 1 - step / max(steps, 1))
    )
    model.train()
    losses: list[float] = []
    for step in range(steps):
        chosen = [encoded[rng.randrange(len(encoded))] for _ in range(batch_size)]
        batch = pack([c[0] for c in chosen], [c[1] for c in chosen], tokenizer.pad_id)
        logprobs = completion_logprobs(model, batch)
        loss = -(logprobs.sum() / batch.completion_mask.sum())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if log_every and (step + 1) % log_every == 0:
            print(f"sft step {step + 1}/{steps} loss {loss.item():.4f}", flush=True)
    model.eval()
    return losses


def mean_reward(
    model: TinyLM,
    tokenizer: CharTokenizer,
    problems: list[dict],
    *,
    max_new_tokens: int = 8,
    temperature: float = 0.0,
    seed: int = 0,
    reward: Callable[[dict, str], float] | None = None,
    batch_size: int = 256,
) -> float:
    """Mean task reward of one completion per problem (greedy at temperature 0)."""
    if reward is None:
        reward = countdown_reward
    if not problems:
        raise ValueError("mean_reward needs at least one problem")
    generator = torch.Generator().manual_seed(seed)
    total = 0.0
    for start in range(0, len(problems), batch_size):
        chunk = problems[start : start + batch_size]
        out = sample(
            model,
            tokenizer,
            [p["prompt"] for p in chunk],
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            generator=generator,
        )
        total += sum(reward(p, text) for p, text in zip(chunk, out.texts, strict=True))
    return total / len(problems)
