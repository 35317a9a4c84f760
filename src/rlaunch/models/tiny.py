"""A tiny causal transformer with a Hugging Face-style directory format.

    {directory}/config.json         TinyConfig in HF key names, model_type "rlaunch-tiny"
    {directory}/model.safetensors   the state dict (safetensors)
    {directory}/tokenizer.json      the CharTokenizer

Pre-norm blocks, grouped-query attention (`n_kv_heads` divides `n_heads`), learned
positions. Padding may be on the left: positions count real tokens only, so a prompt
gets the same logits whatever batch it is in.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import safetensors
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch import nn

from rlaunch.models.tokenizer import CharTokenizer

MODEL_TYPE = "rlaunch-tiny"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"


class ModelFormatError(ValueError):
    """A model directory or config this module cannot read."""


@dataclass(frozen=True)
class TinyConfig:
    vocab_size: int
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    max_position_embeddings: int = 64

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ModelFormatError(
                f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}"
            )
        if self.n_heads % self.n_kv_heads:
            raise ModelFormatError(
                f"n_heads {self.n_heads} is not divisible by n_kv_heads {self.n_kv_heads}"
            )

    def to_hf(self) -> dict:
        return {
            "model_type": MODEL_TYPE,
            "architectures": ["TinyLM"],
            "vocab_size": self.vocab_size,
            "hidden_size": self.d_model,
            "num_hidden_layers": self.n_layers,
            "num_attention_heads": self.n_heads,
            "num_key_value_heads": self.n_kv_heads,
            "max_position_embeddings": self.max_position_embeddings,
            # The MLP is d_model -> 4 d_model -> d_model (_Block).
            "intermediate_size": 4 * self.d_model,
            "torch_dtype": "float32",
        }

    @classmethod
    def from_hf(cls, config: dict) -> TinyConfig:
        if config.get("model_type") != MODEL_TYPE:
            raise ModelFormatError(
                f"config.json model_type is {config.get('model_type')!r}, expected {MODEL_TYPE!r}"
            )
        return cls(
            vocab_size=int(config["vocab_size"]),
            d_model=int(config["hidden_size"]),
            n_layers=int(config["num_hidden_layers"]),
            n_heads=int(config["num_attention_heads"]),
            n_kv_heads=int(config["num_key_value_heads"]),
            max_position_embeddings=int(config["max_position_embeddings"]),
        )


class _Attention(nn.Module):
    def __init__(self, config: TinyConfig) -> None:
        super().__init__()
        self.n_heads = config.n_heads
        self.n_kv_heads = config.n_kv_heads
        self.head_dim = config.d_model // config.n_heads
        self.q_proj = nn.Linear(config.d_model, config.n_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(config.d_model, config.n_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(config.d_model, config.n_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(config.n_heads * self.head_dim, config.d_model, bias=False)

    def forward(self, hidden: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        batch, length, _ = hidden.shape
        q = self.q_proj(hidden).view(batch, length, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden).view(batch, length, self.n_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden).view(batch, length, self.n_kv_heads, self.head_dim).transpose(1, 2)
        repeat = self.n_heads // self.n_kv_heads
        k = k.repeat_interleave(repeat, dim=1)
        v = v.repeat_interleave(repeat, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed.unsqueeze(1))
        return self.o_proj(out.transpose(1, 2).reshape(batch, length, -1))


class _Block(nn.Module):
    def __init__(self, config: TinyConfig) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(config.d_model)
        self.attn = _Attention(config)
        self.mlp_norm = nn.LayerNorm(config.d_model)
        self.mlp = nn.Sequential(
            nn.Linear(config.d_model, 4 * config.d_model),
            nn.GELU(),
            nn.Linear(4 * config.d_model, config.d_model),
        )

    def forward(self, hidden: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        hidden = hidden + self.attn(self.attn_norm(hidden), allowed)
        return hidden + self.mlp(self.mlp_norm(hidden))


class TinyLM(nn.Module):
    def __init__(self, config: TinyConfig) -> None:
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.position = nn.Embedding(config.max_position_embeddings, config.d_model)
        self.blocks = nn.ModuleList(_Block(config) for _ in range(config.n_layers))
        self.norm = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.apply(self._init)
        for block in self.blocks:
            nn.init.normal_(block.mlp[2].weight, std=0.02 / math.sqrt(2 * config.n_layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits [B, T, vocab] for token ids [B, T]; `attention_mask` is 1 on real tokens."""
        batch, length = input_ids.shape
        if length > self.config.max_position_embeddings:
            raise ValueError(
                f"sequence length {length} exceeds max_position_embeddings "
                f"{self.config.max_position_embeddings}"
            )
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        mask = attention_mask.bool()
        positions = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        causal = torch.ones(length, length, dtype=torch.bool, device=input_ids.device).tril()
        # A padded query still attends to itself, so its (ignored) row is never all -inf.
        eye = torch.eye(length, dtype=torch.bool, device=input_ids.device)
        allowed = (causal & mask[:, None, :]) | eye
        hidden = self.embed(input_ids) + self.position(positions)
        for block in self.blocks:
            hidden = block(hidden, allowed)
        return self.lm_head(self.norm(hidden))


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """The raw bytes of a tensor (no numpy in the runtime, so read its memory directly)."""
    contiguous = tensor.detach().cpu().contiguous()
    return ctypes.string_at(contiguous.data_ptr(), contiguous.numel() * contiguous.element_size())


def weights_sha256(state_dict: dict[str, torch.Tensor]) -> str:
    """`sha256:<hex>` over the tensors (name, dtype, shape, bytes) in name order."""
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        tensor = state_dict[name]
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor_bytes(tensor))
    return "sha256:" + digest.hexdigest()


def save_safetensors(state_dict: dict[str, torch.Tensor], path: str | Path) -> None:
    """Write a `.safetensors` file without numpy.

    `safetensors.torch.save_file` imports numpy, which the runtime lock does not have;
    the package's own `serialize_file` takes raw pointers instead."""
    alive = {name: t.detach().cpu().contiguous() for name, t in state_dict.items()}
    specs = {
        name: safetensors.TensorSpec(
            dtype=str(tensor.dtype).removeprefix("torch."),
            shape=list(tensor.shape),
            data_ptr=tensor.data_ptr(),
            data_len=tensor.numel() * tensor.element_size(),
        )
        for name, tensor in alive.items()
    }
    safetensors.serialize_file(specs, str(path), metadata={"format": "pt"})
    del alive


def save_pretrained(model: TinyLM, tokenizer: CharTokenizer, directory: str | Path) -> Path:
    """Write config.json, model.safetensors and tokenizer.json into `directory`."""
    if model.config.vocab_size != tokenizer.vocab_size:
        raise ModelFormatError(
            f"model vocab_size {model.config.vocab_size} != tokenizer vocab size "
            f"{tokenizer.vocab_size}"
        )
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    (target / CONFIG_FILE).write_text(json.dumps(model.config.to_hf(), indent=2) + "\n")
    save_safetensors(model.state_dict(), target / WEIGHTS_FILE)
    tokenizer.save(target)
    return target


def load_pretrained(directory: str | Path) -> tuple[TinyLM, CharTokenizer]:
    """The model (in eval mode) and tokenizer saved by `save_pretrained`."""
    source = Path(directory)
    missing = [name for name in (CONFIG_FILE, WEIGHTS_FILE) if not (source / name).is_file()]
    if missing:
        raise ModelFormatError(f"{source} is not a model directory: missing {', '.join(missing)}")
    config = TinyConfig.from_hf(json.loads((source / CONFIG_FILE).read_text()))
    tokenizer = CharTokenizer.load(source)
    if config.vocab_size != tokenizer.vocab_size:
        raise ModelFormatError(
            f"{source}: config vocab_size {config.vocab_size} != tokenizer vocab size "
            f"{tokenizer.vocab_size}"
        )
    model = TinyLM(config)
    model.load_state_dict(load_file(str(source / WEIGHTS_FILE)))
    model.eval()
    return model, tokenizer


__all__ = [
    "ModelFormatError",
    "TinyConfig",
    "TinyLM",
    "load_pretrained",
    "save_pretrained",
    "save_safetensors",
    "tensor_bytes",
    "weights_sha256",
]
