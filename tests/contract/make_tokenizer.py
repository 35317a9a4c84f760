"""Run inside a SkyRL contract env (scripts/skyrl-contract-env RELEASE), not under pytest.

    python make_tokenizer.py OUT_DIR [--no-chat-template | --other-chat-template]
                                     [--swap-im-tokens] [--eos-endoftext] [OUT_DIR [FLAGS]]...

Trains a small word-level tokenizer with `tokenizers` on GSM8K-shaped text and saves it in
Hugging Face format (tokenizer.json, tokenizer_config.json with a ChatML-style chat template)
with transformers' PreTrainedTokenizerFast, the way a model folder carries its tokenizer. Only
the SkyRL envs have tokenizers and transformers, so the tests make the tokenizer there.
Variants for the tokenizer checks: `--other-chat-template` (same vocabulary, another
template), `--swap-im-tokens` (`<|im_end|>` before `<|im_start|>`: both ids shift, the eos
among them), `--eos-endoftext` (the same vocabulary with `<|endoftext|>` as the eos).
Several folders in one run (each OUT_DIR followed by its own flags) import transformers once:
a process per folder imported it again (about 7 CPU-s each here).
"""

from __future__ import annotations

import sys
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

SPECIALS = ["<unk>", "<pad>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
OTHER_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] | upper }}: "
    "{{ message['content'] }}<|im_end|>{% endfor %}"
)
CORPUS = [
    "Ann has 3 apples and buys 1000 more. How many apples has she?",
    "Let's think step by step and output the final answer after \"####\".",
    "user assistant system #### 0 1 2 3 4 5 6 7 8 9 + = .",
]


def main(out_dir: str, *flags: str) -> int:
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = list(SPECIALS)
    if "--swap-im-tokens" in flags:
        specials[3], specials[4] = specials[4], specials[3]
    tokenizer.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=specials))
    eos = "<|endoftext|>" if "--eos-endoftext" in flags else "<|im_end|>"
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>",
        eos_token=eos, bos_token=None,
    )
    if "--other-chat-template" in flags:
        fast.chat_template = OTHER_CHAT_TEMPLATE
    elif "--no-chat-template" not in flags:
        fast.chat_template = CHAT_TEMPLATE
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out_dir)
    return 0


def each(argv: list[str]) -> list[list[str]]:
    """The command line's folders, each with the flags after it."""
    groups: list[list[str]] = []
    for arg in argv:
        if arg.startswith("--") and groups:
            groups[-1].append(arg)
        else:
            groups.append([arg])
    return groups


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(max(main(*group) for group in each(sys.argv[1:])))
