"""Batching, log-probs and sampling for TinyLM.

One layout everywhere, so sampling, the trainer and the reference model see the same
sequence: `[pad.. <bos> prompt][completion <eos> pad..]` (prompts left-padded to a common
length P, completions right-padded). Completion token j sits at column P + j and is
predicted by the logits at column P + j - 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from rlaunch.models.tiny import TinyLM
from rlaunch.models.tokenizer import CharTokenizer


@dataclass(frozen=True)
class Batch:
    input_ids: torch.Tensor
    """[B, P + C] token ids."""
    attention_mask: torch.Tensor
    """[B, P + C] 1 on real tokens (prompt and completion), 0 on padding."""
    completion_mask: torch.Tensor
    """[B, C] 1 on real completion tokens."""
    prompt_length: int
    """P: the column where completions start."""


def pack(prompts: list[list[int]], completions: list[list[int]], pad_id: int) -> Batch:
    """Left-pad prompts and right-pad completions into one batch (see the module doc)."""
    if len(prompts) != len(completions):
        raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
    prompt_length = max(len(p) for p in prompts)
    completion_length = max((len(c) for c in completions), default=0)
    rows, masks, completion_masks = [], [], []
    for prompt, completion in zip(prompts, completions, strict=True):
        left = prompt_length - len(prompt)
        right = completion_length - len(completion)
        rows.append([pad_id] * left + prompt + completion + [pad_id] * right)
        masks.append([0] * left + [1] * (len(prompt) + len(completion)) + [0] * right)
        completion_masks.append([1] * len(completion) + [0] * right)
    return Batch(
        input_ids=torch.tensor(rows, dtype=torch.long),
        attention_mask=torch.tensor(masks, dtype=torch.long),
        completion_mask=torch.tensor(completion_masks, dtype=torch.float32).reshape(
            len(rows), completion_length
        ),
        prompt_length=prompt_length,
    )


def completion_logprobs(model: TinyLM, batch: Batch, *, temperature: float = 1.0) -> torch.Tensor:
    """[B, C] log-probs of each completion token under logits / temperature (0 on padding)."""
    logits = model(batch.input_ids, batch.attention_mask)
    completion_length = batch.completion_mask.shape[1]
    start = batch.prompt_length - 1
    predicting = logits[:, start : start + completion_length, :]
    if temperature > 0:
        predicting = predicting / temperature
    targets = batch.input_ids[:, batch.prompt_length : batch.prompt_length + completion_length]
    logprobs = F.log_softmax(predicting.float(), dim=-1)
    chosen = logprobs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return chosen * batch.completion_mask


@dataclass(frozen=True)
class Samples:
    token_ids: list[list[int]]
    """Completion ids per prompt, ending with `<eos>` when the model stopped by itself."""
    logprobs: list[list[float]]
    """Log-prob of each completion token under logits / temperature at sampling time."""
    texts: list[str]
    """Decoded completions (up to `<eos>`)."""


@torch.no_grad()
def sample(
    model: TinyLM,
    tokenizer: CharTokenizer,
    prompts: list[str],
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Samples:
    """Sample one completion per prompt; `temperature` 0 is greedy.

    Each prompt is encoded as `<bos>` + characters. Pass a seeded `generator` for
    reproducible samples (the same generator state gives the same completions)."""
    was_training = model.training
    model.eval()
    prompt_ids = [tokenizer.encode(prompt, bos=True) for prompt in prompts]
    completions: list[list[int]] = [[] for _ in prompts]
    logprobs: list[list[float]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    for _ in range(max_new_tokens):
        if all(done):
            break
        batch = pack(prompt_ids, completions, tokenizer.pad_id)
        logits = model(batch.input_ids, batch.attention_mask)
        # The next token of row i is predicted at its last real column.
        last_columns = torch.tensor(
            [batch.prompt_length + len(c) - 1 for c in completions], dtype=torch.long
        )
        step_logits = logits[torch.arange(len(prompts)), last_columns].float()
        if temperature > 0:
            step_logprobs = F.log_softmax(step_logits / temperature, dim=-1)
            chosen = torch.multinomial(step_logprobs.exp(), 1, generator=generator).squeeze(-1)
        else:
            step_logprobs = F.log_softmax(step_logits, dim=-1)
            chosen = step_logits.argmax(dim=-1)
        for row, token in enumerate(chosen.tolist()):
            if done[row]:
                continue
            completions[row].append(token)
            logprobs[row].append(float(step_logprobs[row, token]))
            done[row] = token == tokenizer.eos_id
    if was_training:
        model.train()
    texts = [tokenizer.decode(ids) for ids in completions]
    return Samples(token_ids=completions, logprobs=logprobs, texts=texts)
