"""Run with the SkyRL rehearsal env's python (scripts/skyrl-rehearsal-env), not under pytest.

    python make_tiny_model.py OUT_DIR

A model repo for the local Hub (tests/hubserver.py) that experiments/tiny-gsm8k pins as
`rlaunch-tests/tiny-qwen2-chat`: make_tokenizer.py's word-level tokenizer with its ChatML
template, and a Qwen2 causal LM of TINY_CONFIG with random weights (seed 0) saved by
transformers (config.json, generation_config.json, model.safetensors). The same files every
time, so the BUILD file's facts hold. The tokenizer is made in this process (make_tokenizer's
`main`, imported from beside this file): a process of its own imported transformers again.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from make_tokenizer import main as make_tokenizer
from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2Config

TINY_CONFIG = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                   num_key_value_heads=2, num_hidden_layers=2, vocab_size=64,
                   max_position_embeddings=2048, tie_word_embeddings=True)


def main(out: Path) -> None:
    make_tokenizer(str(out))
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    config = Qwen2Config(**TINY_CONFIG, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(str(out), safe_serialization=True)
    print(sum(p.numel() for p in model.parameters()), len(tokenizer))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
