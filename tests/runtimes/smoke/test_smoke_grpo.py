"""The algorithm's pure pieces (rlaunch/runtimes/smoke/grpo.py)."""

from __future__ import annotations

import math

import pytest
import torch

from rlaunch.runtimes.smoke.grpo import (
    clipped_policy_loss,
    group_advantages,
    kl_penalty,
    split_evenly,
)


def test_grpo_advantages_are_normalised_within_each_group() -> None:
    advantages = group_advantages([1.0, 0.0, 0.0, 0.0, 0.5, 0.5], 3, estimator="grpo",
                                  norm_by_std=True)
    std = torch.tensor([1.0, 0.0, 0.0]).std().item()
    assert advantages[:3] == pytest.approx([(2 / 3) / (std + 1e-6), (-1 / 3) / (std + 1e-6),
                                            (-1 / 3) / (std + 1e-6)])
    # A group where every sample scored the same carries no signal.
    assert group_advantages([0.5, 0.5, 0.5], 3, estimator="grpo", norm_by_std=True) == [0.0] * 3
    assert group_advantages([1.0, 0.0], 2, estimator="grpo", norm_by_std=False) == [0.5, -0.5]


def test_rloo_uses_the_mean_of_the_others() -> None:
    assert group_advantages([1.0, 0.0, 0.0], 3, estimator="rloo", norm_by_std=True) == \
        pytest.approx([1.0, -0.5, -0.5])


def test_rewards_must_fill_whole_groups() -> None:
    with pytest.raises(ValueError, match="5 rewards do not split into groups of "
                                         "n_samples_per_prompt 2"):
        group_advantages([0.0] * 5, 2, estimator="grpo", norm_by_std=True)


def test_k3_is_zero_on_the_reference_and_positive_elsewhere() -> None:
    logprobs = torch.tensor([[-1.0, -2.0]])
    assert torch.equal(kl_penalty(logprobs, logprobs, "k3"), torch.zeros(1, 2))
    shifted = kl_penalty(logprobs, logprobs - 0.5, "k3")
    assert shifted[0, 0].item() == pytest.approx(math.exp(-0.5) + 0.5 - 1)
    assert kl_penalty(logprobs, logprobs - 0.5, "k1")[0, 0].item() == pytest.approx(0.5)


def test_clipped_loss_clips_the_ratio_on_the_side_of_the_advantage() -> None:
    old = torch.zeros(2, 1)
    new = torch.log(torch.tensor([[1.5], [0.5]]))
    mask = torch.ones(2, 1)
    loss, clipped = clipped_policy_loss(new, old, torch.tensor([1.0, -1.0]), mask,
                                        eps_clip_low=0.2, eps_clip_high=0.2)
    # Row 0: ratio 1.5, A=+1 -> min(1.5, 1.2) = 1.2; row 1: ratio 0.5, A=-1 -> min(-0.5, -0.8)
    assert loss.item() == pytest.approx(-(1.2 - 0.8) / 2)
    assert clipped.item() == pytest.approx(1.0)


def test_padding_tokens_do_not_count() -> None:
    new = torch.tensor([[0.1, 5.0]])
    loss, _ = clipped_policy_loss(new, torch.tensor([[0.1, 0.0]]), torch.tensor([2.0]),
                                  torch.tensor([[1.0, 0.0]]), eps_clip_low=0.2, eps_clip_high=0.2)
    assert loss.item() == pytest.approx(-2.0)


def test_split_evenly() -> None:
    assert split_evenly([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
    with pytest.raises(ValueError, match="3 items do not split evenly into 2 parts"):
        split_evenly([1, 2, 3], 2)
