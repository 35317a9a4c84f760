"""Context budget: prompt and generation lengths against the model's context window."""

from __future__ import annotations

from collections.abc import Iterator

from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error
from rlaunch.preflight.engine.registry import Example, rule

LENGTHS = ("max_prompt_length", "max_generate_length", "max_input_length", "max_turns")


@rule(
    "CTX001",
    "Every length and max_turns is at least 1.",
    example=Example(edits={"lengths.max_generate_length": 0}),
    reads_plan=False,
)
def positive_lengths(check: Check) -> Iterator[Finding]:
    """Error. A length or turn count below 1 leaves nothing to generate. Beyond SkyRL."""
    lengths = check.spec.lengths
    for name in LENGTHS:
        value = getattr(lengths, name)
        if value < 1:
            yield error(
                "CTX001", (f"lengths.{name}",),
                f"lengths.{name} is {value}; lengths and max_turns must be at least 1",
                f"Set lengths.{name} to a positive integer.",
            )


@rule(
    "CTX002",
    "Prompt (or multi-turn input) plus generation fits in the model's context window.",
    example=Example(edits={"lengths.max_generate_length": 32768}),
    reads_plan=False,
)
def fits_context_window(check: Check) -> Iterator[Finding]:
    """Error. vLLM refuses a `max_model_len` beyond the model's `max_position_embeddings`, and
    prompt plus generation must fit in it. Beyond SkyRL's `validate_cfg`."""
    facts = check.facts
    if facts is None:
        return
    lengths = check.spec.lengths
    # Multi-turn input grows with the conversation; SkyRL budgets input + generation.
    first = "max_input_length" if lengths.max_turns > 1 else "max_prompt_length"
    prompt = getattr(lengths, first)
    total = prompt + lengths.max_generate_length
    window = facts.max_position_embeddings
    if total > window:
        yield error(
            "CTX002",
            (f"lengths.{first}", "lengths.max_generate_length",
             "model.facts.max_position_embeddings"),
            f"lengths.{first} {prompt} + max_generate_length {lengths.max_generate_length}"
            f" = {total} exceeds model.facts.max_position_embeddings {window}",
            f"Shorten the prompt or the generation to at most {window} tokens together.",
        )


@rule(
    "CTX003",
    "Single-turn: input length == prompt length; multi-turn: input length >= prompt length.",
    example=Example(edits={"lengths.max_input_length": 1024}),
    reads_plan=False,
)
def input_matches_prompt(check: Check) -> Iterator[Finding]:
    """Error. Mirrors skyrl/train/utils/utils.py `validate_generator_cfg`: single-turn needs
    `max_input_length == max_prompt_length`, multi-turn `>=`."""
    lengths = check.spec.lengths
    paths = ("lengths.max_input_length", "lengths.max_prompt_length", "lengths.max_turns")
    if lengths.max_turns == 1 and lengths.max_input_length != lengths.max_prompt_length:
        yield error(
            "CTX003", paths,
            f"single-turn (max_turns 1) needs max_input_length == max_prompt_length, but"
            f" max_input_length {lengths.max_input_length} != max_prompt_length"
            f" {lengths.max_prompt_length}",
            f"Set lengths.max_input_length to {lengths.max_prompt_length}.",
        )
    elif lengths.max_turns > 1 and lengths.max_input_length < lengths.max_prompt_length:
        yield error(
            "CTX003", paths,
            f"multi-turn (max_turns {lengths.max_turns}) needs max_input_length >="
            f" max_prompt_length, but max_input_length {lengths.max_input_length} <"
            f" max_prompt_length {lengths.max_prompt_length}",
            f"Set lengths.max_input_length to at least {lengths.max_prompt_length}.",
        )
