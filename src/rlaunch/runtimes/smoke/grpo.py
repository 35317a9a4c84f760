"""The algorithm, as pure tensor functions: advantages, policy loss, KL, batch splits.

Kept free of Ray so it can be read (and tested) on its own; the workers call these.
"""

from __future__ import annotations

import torch


def group_advantages(
    rewards: list[float], group_size: int, *, estimator: str, norm_by_std: bool
) -> list[float]:
    """Per-sequence advantages; consecutive runs of `group_size` rewards share a prompt.

    grpo: (r - mean(group)) / (std(group) + 1e-6) when `norm_by_std`, else r - mean.
    rloo: r - mean of the other members of the group."""
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(
            f"{len(rewards)} rewards do not split into groups of n_samples_per_prompt {group_size}"
        )
    scores = torch.tensor(rewards, dtype=torch.float64).view(-1, group_size)
    mean = scores.mean(dim=1, keepdim=True)
    if estimator == "grpo":
        centred = scores - mean
        if norm_by_std and group_size > 1:
            centred = centred / (scores.std(dim=1, keepdim=True) + 1e-6)
    elif estimator == "rloo":
        if group_size < 2:
            raise ValueError("rloo needs n_samples_per_prompt >= 2")
        others = (scores.sum(dim=1, keepdim=True) - scores) / (group_size - 1)
        centred = scores - others
    else:
        raise ValueError(f"advantage estimator {estimator!r} is not supported here")
    return [float(value) for value in centred.reshape(-1)]


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / mask.sum().clamp(min=1.0)


def kl_penalty(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, estimator: str) -> torch.Tensor:
    """Per-token KL(policy || reference) estimate from sampled-token log-probs."""
    log_ratio = logprobs - ref_logprobs
    if estimator == "k1":
        return log_ratio
    if estimator == "abs":
        return log_ratio.abs()
    if estimator == "k2":
        return 0.5 * log_ratio.square()
    if estimator == "k3":
        # exp(ref - logp) - (ref - logp) - 1: unbiased and non-negative (Schulman's k3).
        reverse = (ref_logprobs - logprobs).clamp(-20.0, 20.0)
        return reverse.exp() - reverse - 1.0
    raise ValueError(f"kl_estimator_type {estimator!r} is not one of k1, k2, k3, abs")


def clipped_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    eps_clip_low: float,
    eps_clip_high: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """PPO clipped surrogate (token mean) and the fraction of tokens clipped.

    `advantages` is per sequence [B]; log-probs and mask are [B, C]."""
    ratio = (logprobs - old_logprobs).exp()
    per_token_advantage = advantages.unsqueeze(-1)
    unclipped = ratio * per_token_advantage
    clipped = ratio.clamp(1.0 - eps_clip_low, 1.0 + eps_clip_high) * per_token_advantage
    loss = masked_mean(-torch.minimum(unclipped, clipped), mask)
    clip_fraction = masked_mean((clipped < unclipped).float(), mask)
    return loss, clip_fraction.detach()


def split_evenly(items: list, parts: int) -> list[list]:
    """Contiguous split into `parts` equal chunks; the length must divide exactly."""
    if parts < 1 or len(items) % parts:
        raise ValueError(f"{len(items)} items do not split evenly into {parts} parts")
    size = len(items) // parts
    return [items[index * size : (index + 1) * size] for index in range(parts)]
