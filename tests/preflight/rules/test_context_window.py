"""Context rules (rlaunch/preflight/rules/context_window.py)."""

from __future__ import annotations

from preflight.helpers import example, findings, messages


def test_ctx001_lengths_are_positive() -> None:
    data = example(edits={"lengths.max_generate_length": 0, "lengths.max_turns": 0})
    assert messages(data, "CTX001") == [
        "lengths.max_generate_length is 0; lengths and max_turns must be at least 1",
        "lengths.max_turns is 0; lengths and max_turns must be at least 1",
    ]
    assert messages(example(), "CTX001") == []


def test_ctx002_prompt_plus_generation_fits_the_window() -> None:
    [finding] = findings(example(edits={"lengths.max_generate_length": 32768}), "CTX002")
    assert finding.message == (
        "lengths.max_prompt_length 512 + max_generate_length 32768 = 33280 exceeds"
        " model.facts.max_position_embeddings 32768"
    )
    assert finding.fix == "Shorten the prompt or the generation to at most 32768 tokens together."
    multi_turn = example(edits={"lengths.max_turns": 4, "lengths.max_input_length": 32000})
    assert messages(multi_turn, "CTX002") == [
        "lengths.max_input_length 32000 + max_generate_length 1024 = 33024 exceeds"
        " model.facts.max_position_embeddings 32768"
    ]
    exactly = example(edits={"lengths.max_generate_length": 32768 - 512})
    assert messages(exactly, "CTX002") == []


def test_ctx003_input_length_against_prompt_length() -> None:
    assert messages(example(edits={"lengths.max_input_length": 1024}), "CTX003") == [
        "single-turn (max_turns 1) needs max_input_length == max_prompt_length, but"
        " max_input_length 1024 != max_prompt_length 512"
    ]
    short = example(edits={"lengths.max_turns": 3, "lengths.max_input_length": 256})
    assert messages(short, "CTX003") == [
        "multi-turn (max_turns 3) needs max_input_length >= max_prompt_length, but"
        " max_input_length 256 < max_prompt_length 512"
    ]
    longer = example(edits={"lengths.max_turns": 3, "lengths.max_input_length": 4096})
    assert messages(longer, "CTX003") == []
    assert messages(example(), "CTX003") == []
