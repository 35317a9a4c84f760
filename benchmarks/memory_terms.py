"""The MEM rules' per-GPU terms against torch's own accounting on CPU (docs/memory.md).

Builds transformers' Qwen2ForCausalLM at Qwen2.5-1.5B-Instruct's widths (hidden 1536, MLP 8960,
12 heads of 128, 2 KV heads, vocabulary 151936, tied embeddings) with a few layers (weights of 0
for the activations, random for the state), and measures what does not need a GPU:
- parameters, gradients and AdamW state, bytes per parameter by dtype (an fp32 model as SkyRL
  loads the policy, one AdamW step), on a narrow model of the same family;
- the activations of one packed micro batch (SkyRL's padding removal: one row of T tokens) with
  gradient checkpointing in bf16: what the forward keeps (each layer's input) and what the
  backward adds on top (one layer recomputed, its gradients), from torch.profiler's allocation
  events (profile_memory=True), at two layer counts to separate the per-layer term;
- the logits by dtype: the LM head's output tensor.
The backward takes the logits' own buffer as their gradient, as flash-attn's in-place cross
entropy does on a GPU (`logprobs_from_logits(..., inplace_backward=True)`).

It prints the coefficients (bytes per parameter, per token x hidden, per token x vocabulary);
tests/preflight/test_memory_measured.py scales them to SkyRL's GSM8K recipe and compares them
with the MEM figure. The coefficients are linear in the tokens (256 and 512 give the same to
1%). Needs torch and transformers (the SkyRL rehearsal env has both):

    PYTHONPATH=src $(scripts/skyrl-rehearsal-env) benchmarks/memory_terms.py [--tokens 512]

The smallest size (`--tokens 16 --layers 1 2`) is what the test suite runs, in that env (on CPU,
as always: the benchmark needs no GPU).
"""

from __future__ import annotations

import argparse
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import Qwen2Config, Qwen2ForCausalLM
from transformers.initialization import no_init_weights

WIDTHS = {"hidden_size": 1536, "intermediate_size": 8960, "num_attention_heads": 12,
          "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
          "max_position_embeddings": 32768}


def qwen2(layers: int, dtype: torch.dtype, *, zeroed: bool = False, **widths: int
          ) -> Qwen2ForCausalLM:
    """The model, its weights random, or with `zeroed` all 0: what a step allocates does not
    depend on the weights' values, and random values for the full vocabulary's ~230M
    embeddings (torch's init, then transformers') are most of the benchmark's time on CPU."""
    torch.manual_seed(0)
    config = Qwen2Config(**{**WIDTHS, **widths}, num_hidden_layers=layers,
                         attn_implementation="sdpa", use_cache=False)
    if not zeroed:
        return Qwen2ForCausalLM(config).to(dtype)
    with no_init_weights():
        model = Qwen2ForCausalLM(config)
    model.tie_weights()  # no_init_weights skips transformers' init_weights, which ties them
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.zero_()
    return model.to(dtype)


def live_bytes(region) -> tuple[int, int]:
    """(peak, end) of the bytes torch allocates and frees on the CPU while `region()` runs, as
    torch.profiler records them, both relative to the start."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        region()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    live = peak = 0
    for _, change in events:
        live += change
        peak = max(peak, live)
    return peak, live


def state_bytes_per_parameter() -> dict[str, float]:
    """fp32 parameters, their gradients and AdamW's state after one step, per parameter."""
    model = qwen2(2, torch.float32, hidden_size=256, intermediate_size=1024,
                  num_attention_heads=2, num_key_value_heads=1, vocab_size=2048)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    ids = torch.randint(0, 2048, (1, 64))
    model(ids).logits.float().mean().backward()
    optimizer.step()
    params = list(model.parameters())
    count = sum(p.numel() for p in params)
    adam = sum(t.nbytes for state in optimizer.state.values() for t in state.values()
               if isinstance(t, torch.Tensor) and t.dim() > 0)
    return {"parameters": sum(p.nbytes for p in params) / count,
            "gradients": sum(p.grad.nbytes for p in params) / count,
            "adam": adam / count}


def checkpointed(layers: int, vocab: int = WIDTHS["vocab_size"]) -> Qwen2ForCausalLM:
    """A bf16 model in training mode with gradient checkpointing, its weights frozen (the
    measured micro batch's input embeddings carry the gradient)."""
    model = qwen2(layers, torch.bfloat16, zeroed=True, vocab_size=vocab)
    model.requires_grad_(False)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return model


def keep_layers(model: Qwen2ForCausalLM, layers: int) -> None:
    """Drop the layers past the first `layers`: the model a build with `layers` layers gives
    (the same widths; the weights' values do not change what is allocated)."""
    del model.model.layers[layers:]
    model.config.num_hidden_layers = layers


def step_activations(model: Qwen2ForCausalLM, tokens: int, *, divide: bool = True
                     ) -> dict[str, int]:
    """One packed micro batch through `model` (see checkpointed): bytes the forward keeps
    (without the logits), the logits, and the backward's peak above them. With `divide`, the
    logits are divided by the temperature in place first, as SkyRL does."""
    embeds = torch.randn(1, tokens, WIDTHS["hidden_size"], dtype=torch.bfloat16,
                         requires_grad=True)
    positions = torch.arange(tokens).unsqueeze(0)
    kept: dict[str, torch.Tensor] = {}

    def forward() -> None:
        logits = model(inputs_embeds=embeds, position_ids=positions).logits
        if divide:
            logits.div_(1.0)  # SkyRL's in-place temperature divide (HFModelWrapper.forward)
        kept["logits"] = logits

    _, after_forward = live_bytes(forward)
    logits = kept.pop("logits")

    def backward() -> None:
        logits.backward(gradient=logits.detach())

    peak_backward, _ = live_bytes(backward)
    return {"forward_kept": after_forward - logits.nbytes, "logits": logits.nbytes,
            "logits_bytes_per_element": logits.element_size(),
            "backward_peak": peak_backward}


def measure(tokens: int, few: int, more: int) -> dict:
    torch.set_num_threads(1)
    # One model at the full vocabulary (building one is most of the benchmark's time): `more`
    # layers, then its first `few`.
    model = checkpointed(more)
    large = step_activations(model, tokens)
    keep_layers(model, few)
    small = step_activations(model, tokens)
    undivided = step_activations(model, tokens, divide=False)
    del model
    narrow = step_activations(checkpointed(few, vocab=1024), tokens, divide=False)
    hidden, vocab = WIDTHS["hidden_size"], WIDTHS["vocab_size"]
    per_layer = (large["forward_kept"] - small["forward_kept"]) / (more - few) / tokens / hidden
    outside = small["forward_kept"] / tokens / hidden - few * per_layer
    return {
        "state": state_bytes_per_parameter(),
        "tokens": tokens,
        "layers": [few, more],
        "kept_per_layer_per_token_hidden": per_layer,
        "kept_outside_layers_per_token_hidden": outside,
        # The backward's peak above what the forward left, per token x vocab: with SkyRL's
        # temperature divide, without it, and (narrow vocabulary) the recomputed layer's.
        "backward_peak_per_token_vocab": small["backward_peak"] / tokens / vocab,
        "backward_peak_undivided_per_token_vocab": undivided["backward_peak"] / tokens / vocab,
        "recomputed_layer_per_token_hidden": narrow["backward_peak"] / tokens / hidden,
        "logits_per_token_vocab": small["logits"] / tokens / vocab,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=512, help="tokens of the micro batch")
    parser.add_argument("--layers", type=int, nargs=2, default=(1, 3),
                        help="the two layer counts whose difference is one layer's share")
    parser.add_argument("--json", action="store_true", help="one line of JSON")
    args = parser.parse_args()
    measured = measure(args.tokens, *args.layers)
    json.dump(measured, sys.stdout, indent=None if args.json else 2)
    print()

if __name__ == "__main__":
    main()
