"""Model repos for the local Hub: a Qwen2-shaped config.json and real safetensors files whose
tensor shapes are the ones that config makes (so their parameter count is the model's)."""

from __future__ import annotations

import json

import numpy as np
from safetensors.numpy import save

# A Qwen2.5-shaped model, small: GQA 4/2, tied embeddings, QKV bias, SwiGLU MLP.
TINY_QWEN = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
    "intermediate_size": 160, "num_attention_heads": 4, "num_key_value_heads": 2,
    "num_hidden_layers": 2, "max_position_embeddings": 2048, "vocab_size": 96,
    "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}


def qwen2_shapes(config: dict) -> dict[str, tuple[int, ...]]:
    """Every tensor of a Qwen2 checkpoint with its shape, as transformers names them."""
    hidden, inter = config["hidden_size"], config["intermediate_size"]
    head = hidden // config["num_attention_heads"]
    kv = config["num_key_value_heads"] * head
    shapes: dict[str, tuple[int, ...]] = {
        "model.embed_tokens.weight": (config["vocab_size"], hidden),
        "model.norm.weight": (hidden,),
    }
    if not config["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (config["vocab_size"], hidden)
    for layer in range(config["num_hidden_layers"]):
        prefix = f"model.layers.{layer}."
        shapes |= {
            prefix + "self_attn.q_proj.weight": (hidden, hidden),
            prefix + "self_attn.q_proj.bias": (hidden,),
            prefix + "self_attn.k_proj.weight": (kv, hidden),
            prefix + "self_attn.k_proj.bias": (kv,),
            prefix + "self_attn.v_proj.weight": (kv, hidden),
            prefix + "self_attn.v_proj.bias": (kv,),
            prefix + "self_attn.o_proj.weight": (hidden, hidden),
            prefix + "mlp.gate_proj.weight": (inter, hidden),
            prefix + "mlp.up_proj.weight": (inter, hidden),
            prefix + "mlp.down_proj.weight": (hidden, inter),
            prefix + "input_layernorm.weight": (hidden,),
            prefix + "post_attention_layernorm.weight": (hidden,),
        }
    return shapes


def parameter_count(config: dict) -> int:
    return sum(int(np.prod(shape)) for shape in qwen2_shapes(config).values())


def model_files(config: dict, shards: int = 1) -> dict[str, bytes]:
    """config.json and the weights: `model.safetensors`, or `shards` files and their index."""
    tensors = {name: np.zeros(shape, dtype=np.float16)
               for name, shape in qwen2_shapes(config).items()}
    files = {"config.json": json.dumps(config, indent=2).encode()}
    if shards == 1:
        files["model.safetensors"] = save(tensors)
        return files
    names = sorted(tensors)
    weight_map: dict[str, str] = {}
    for index in range(shards):
        shard = f"model-{index + 1:05d}-of-{shards:05d}.safetensors"
        part = {name: tensors[name] for name in names[index::shards]}
        files[shard] = save(part)
        weight_map |= {name: shard for name in part}
    total = sum(array.nbytes for array in tensors.values())
    files["model.safetensors.index.json"] = json.dumps(
        {"metadata": {"total_size": total}, "weight_map": weight_map}).encode()
    return files
