"""TinyLM: HF-style files, padding invariance, sampling and SFT on real torch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from rlaunch.models.generate import completion_logprobs, pack, sample
from rlaunch.models.sft import mean_reward, sft_train
from rlaunch.models.tiny import (
    ModelFormatError,
    TinyConfig,
    TinyLM,
    load_pretrained,
    save_pretrained,
    weights_sha256,
)
from rlaunch.models.tokenizer import CharTokenizer
from rlaunch.tasks.countdown import make_problems

TOKENIZER = CharTokenizer()
SMALL = dict(vocab_size=TOKENIZER.vocab_size, d_model=32, n_layers=1, n_heads=4, n_kv_heads=2,
             max_position_embeddings=32)


@pytest.fixture(autouse=True)
def one_thread():
    # Reproducible and fair on a shared 2-core machine.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _model(seed: int = 0) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM(TinyConfig(**SMALL)).eval()


def test_config_uses_hugging_face_keys() -> None:
    config = TinyConfig(**SMALL)
    assert config.to_hf() == {
        "model_type": "rlaunch-tiny", "architectures": ["TinyLM"], "vocab_size": 50,
        "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 32, "intermediate_size": 128,
        "torch_dtype": "float32",
    }
    assert TinyConfig.from_hf(config.to_hf()) == config


def test_config_rejects_heads_that_do_not_divide() -> None:
    with pytest.raises(ModelFormatError, match="n_heads 4 is not divisible by n_kv_heads 3"):
        TinyConfig(vocab_size=50, d_model=32, n_heads=4, n_kv_heads=3)


def test_save_load_round_trip(tmp_path: Path) -> None:
    model = _model()
    save_pretrained(model, TOKENIZER, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "config.json", "model.safetensors", "tokenizer.json"]
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "rlaunch-tiny"
    loaded, tokenizer = load_pretrained(tmp_path)
    assert tokenizer == TOKENIZER
    assert weights_sha256(loaded.state_dict()) == weights_sha256(model.state_dict())
    ids = torch.tensor([TOKENIZER.encode("1 2 3 to 6:", bos=True)])
    assert torch.equal(loaded(ids), model(ids))


def test_load_names_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ModelFormatError, match=f"{tmp_path} is not a model directory: missing "
                                               "config.json, model.safetensors"):
        load_pretrained(tmp_path)


def test_left_padding_does_not_change_a_prompts_logits() -> None:
    model = _model()
    short = TOKENIZER.encode("1 2 3 to 6:", bos=True)
    long = TOKENIZER.encode("9 9 9 to 81:", bos=True)
    batch = pack([short, long], [[], []], TOKENIZER.pad_id)
    together = model(batch.input_ids, batch.attention_mask)
    alone = model(torch.tensor([short]))
    offset = len(long) - len(short)
    assert torch.allclose(together[0, offset:], alone[0], atol=1e-5)


def test_sample_is_reproducible_and_logprobs_match_a_forward_pass() -> None:
    model = _model()
    prompts = ["1 2 3 to 6:", "4 5 6 to 9:", "7 8 9 to 24:"]
    first = sample(model, TOKENIZER, prompts, max_new_tokens=6, temperature=1.0,
                   generator=torch.Generator().manual_seed(5))
    again = sample(model, TOKENIZER, prompts, max_new_tokens=6, temperature=1.0,
                   generator=torch.Generator().manual_seed(5))
    assert first == again
    assert all(1 <= len(ids) <= 6 for ids in first.token_ids)
    batch = pack([TOKENIZER.encode(p, bos=True) for p in prompts], first.token_ids,
                 TOKENIZER.pad_id)
    recomputed = completion_logprobs(model, batch)
    for row, logprobs in enumerate(first.logprobs):
        assert torch.allclose(recomputed[row, : len(logprobs)], torch.tensor(logprobs), atol=1e-5)


def test_sft_lowers_the_loss_and_is_deterministic() -> None:
    problems = make_problems(0, 200)
    losses = sft_train(_model(1), TOKENIZER, problems, steps=30, seed=3, batch_size=32)
    assert losses == sft_train(_model(1), TOKENIZER, problems, steps=30, seed=3, batch_size=32)
    assert sum(losses[-5:]) / 5 < 0.8 * losses[0]
    assert 0.0 <= mean_reward(_model(1), TOKENIZER, problems[:20]) <= 1.0
