"""LAUNCH002/LAUNCH003 on real tokenizers: trained and saved by `tokenizers` and `transformers`
in the SkyRL contract env (tests/contract/make_tokenizer.py), served as model repos by the
local Hub (tests/hubserver.py), materialized into a real store (a folder, S3 on moto, the GCS
emulator) and compared by the launch's own step (`rlaunch.launch.materialize_inputs`)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contract.skyrl_env import contract_python
from hubserver import hub_environment, serve_hub
from modelrepo import TINY_QWEN, model_files, parameter_count
from rlaunch.launch import LaunchRefused, Plan, materialize_inputs
from rlaunch.preflight.engine.registry import launch_checks
from rlaunch.preflight.launch_checks.tokenizer_gate import (
    tokenizer_findings,
    tokenizer_mismatches,
    tokenizer_rows,
)
from rlaunch.spec.examples import worked_example
from rlaunch.spec.io import parse_spec
from rlaunch.store.tokenizers import TokenizerContents, read_tokenizer

CONTRACT = Path(__file__).resolve().parents[2] / "contract"
SMALL = {**TINY_QWEN, "vocab_size": 20}
VARIANTS = {
    "chatml": [],
    "other-template": ["--other-chat-template"],
    "shifted": ["--swap-im-tokens"],
    "eos-endoftext": ["--eos-endoftext"],
}
COMMITS = {name: f"{index + 1}" * 40 for index, name in enumerate([*VARIANTS, "small"])}
DATA_COMMIT = "9" * 40
FACTS = {"num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 2048,
         "num_experts": None, "num_hidden_layers": 2, "hidden_size": 64,
         "intermediate_size": 160, "vocab_size": 96, "head_dim": None,
         "torch_dtype": "bfloat16", "num_parameters": parameter_count(TINY_QWEN)}
# What transformers loads from each folder: its vocabulary (added tokens included) and the
# named special tokens, to hold the reader to.
DUMP = """
import json, sys
from transformers import AutoTokenizer
out = {}
for folder in sys.argv[1:]:
    tok = AutoTokenizer.from_pretrained(folder)
    out[folder] = {"vocab": tok.get_vocab(), "special": {
        name: getattr(tok, name) for name in ("bos_token", "eos_token", "pad_token", "unk_token")}}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each variant's folder, as transformers' `save_pretrained` wrote it."""
    python, root = contract_python(), tmp_path_factory.mktemp("tokenizers")
    # Every variant in one run of make_tokenizer.py (one transformers import).
    subprocess.run([python, str(CONTRACT / "make_tokenizer.py"),
                    *(arg for name, flags in VARIANTS.items()
                      for arg in (str(root / name), *flags))],
                   check=True, capture_output=True, timeout=300)
    return {name: root / name for name in VARIANTS}


def _repo(folder: Path, config: dict[str, Any] = TINY_QWEN) -> dict[str, bytes]:
    files = {path.name: path.read_bytes() for path in folder.iterdir()}
    return files | model_files(config)


@pytest.fixture
def hub(tokenizers: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> Iterator[None]:
    repos = {("models", f"org/{name}", COMMITS[name]): _repo(folder)
             for name, folder in tokenizers.items()}
    # A model whose embeddings have 20 rows, shipped with a tokenizer of 45 ids.
    repos[("models", "org/small", COMMITS["small"])] = _repo(tokenizers["chatml"], SMALL)
    repos[("datasets", "org/data", DATA_COMMIT)] = {"train.jsonl": b'{"q": 1}\n'}
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with serve_hub(repos) as (url, _):
        for key, value in hub_environment(url).items():
            monkeypatch.setenv(key, value)
        yield


def _model(name: str) -> dict[str, Any]:
    facts = FACTS if name != "small" else {
        **FACTS, "vocab_size": 20, "num_parameters": parameter_count(SMALL)}
    return {"type": "hf_model", "name": f"tiny-{name}", "version": "2026.11.01",
            "repo_id": f"org/{name}", "revision": COMMITS[name],
            "tokenizer_repo_id": f"org/{name}", "tokenizer_revision": COMMITS[name],
            "facts": facts}


def _plan(reference: str, store: str) -> Plan:
    data = worked_example("colocated-1x8")
    data["model"] = data["tokenizer"] = _model("chatml")
    data["reference_model"] = _model(reference)
    data["train_data"] = {"type": "hf_dataset", "name": "data", "version": "2026.11.01",
                          "repo_id": "org/data", "revision": DATA_COMMIT, "config": None,
                          "split": "train", "rows": None}
    data["eval_data"] = None
    return Plan(parse_spec(data, "test"), store, None, (), None)


def test_the_reader_reads_what_transformers_loads(tokenizers: dict[str, Path]) -> None:
    done = subprocess.run([contract_python(), "-c", DUMP, *map(str, tokenizers.values())],
                          check=True, capture_output=True, text=True, timeout=300)
    loaded = json.loads(done.stdout)
    for folder in tokenizers.values():
        contents = read_tokenizer(folder)
        assert {token: token_id for token_id, token in contents.tokens.items()} == (
            loaded[str(folder)]["vocab"])
        assert contents.special == loaded[str(folder)]["special"]
        assert contents.source == "tokenizer.json + tokenizer_config.json"
    assert read_tokenizer(tokenizers["shifted"]).special_id("eos_token") == 3
    assert read_tokenizer(tokenizers["chatml"]).special_id("eos_token") == 4


def test_a_reference_from_another_repo_with_another_chat_template_passes(
    hub: None, tmp_path: Path
) -> None:
    said: list[str] = []
    materialize_inputs(_plan("other-template", str(tmp_path / "store")), said.append)
    assert not [line for line in said if "LAUNCH00" in line]


@pytest.mark.parametrize("where", ["local", "s3_store", "gcs_store"])
def test_a_reference_whose_special_tokens_shifted_is_refused_after_materializing(
    hub: None, tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    store = (str(tmp_path / "store") if where == "local"
             else request.getfixturevalue(where))
    with pytest.raises(LaunchRefused) as refused:
        materialize_inputs(_plan("shifted", store), lambda line: None)
    assert str(refused.value) == (
        "the materialized inputs (colocated-1x8@2026.11.29): refused, 1 error, 0 warnings\n"
        "error LAUNCH002 tokenizer, reference_model: reference_model tiny-shifted@2026.11.01 "
        f"comes with tokenizer org/shifted@{COMMITS['shifted']}, the run's tokenizer is "
        f"tiny-chatml@2026.11.01 (org/chatml@{COMMITS['chatml']}), and their files in the "
        "store differ: 2 of the 45 ids both have map to other strings (id 3 is "
        "'<|im_start|>' in the run's tokenizer, '<|im_end|>' in reference_model's; id 4 is "
        "'<|im_end|>' in the run's tokenizer, '<|im_start|>' in reference_model's); and "
        "special tokens differ: eos_token '<|im_end|>' (id 4) in the run's tokenizer, "
        "'<|im_end|>' (id 3) in reference_model's: reference_model would read the run's token "
        "ids as other strings\n"
        "    fix: Use a reference_model trained with the run's tokenizer, or a tokenizer with "
        "its vocabulary and special tokens (only the chat template may differ).\n"
    )


def test_another_eos_with_the_same_vocabulary_is_a_warning(hub: None, tmp_path: Path) -> None:
    said: list[str] = []
    materialize_inputs(_plan("eos-endoftext", str(tmp_path / "store")), said.append)
    [report] = [line for line in said if "LAUNCH002" in line]
    assert "ok, 0 errors, 1 warning" in report.splitlines()[0]
    assert ("warning LAUNCH002 tokenizer, reference_model: reference_model "
            "tiny-eos-endoftext@2026.11.01 comes with tokenizer org/eos-endoftext@") in report
    assert ("the same vocabulary, but the special tokens differ: eos_token '<|im_end|>' (id 4) "
            "in the run's tokenizer, '<|endoftext|>' (id 2) in reference_model's. Ids mean the "
            "same strings") in report


def test_a_model_with_fewer_rows_than_the_tokenizer_has_ids_is_refused(
    hub: None, tmp_path: Path
) -> None:
    with pytest.raises(LaunchRefused) as refused:
        materialize_inputs(_plan("small", str(tmp_path / "store")), lambda line: None)
    assert str(refused.value).splitlines()[1:] == [
        "error LAUNCH003 tokenizer, reference_model.facts.vocab_size: the run's tokenizer "
        "tiny-chatml@2026.11.01 has ids up to 44 ('user'), but reference_model "
        "tiny-small@2026.11.01 has vocab_size 20 embedding rows: 45 > 20, so ids 20..44 have "
        "no row and the embedding lookup fails",
        "    fix: Use a tokenizer with at most 20 ids, or a reference_model whose embeddings "
        "were resized to at least 45 rows.",
    ]


def test_one_tokenizer_pin_is_not_read_twice(tmp_path: Path) -> None:
    """A model that shares the run's tokenizer pin is not compared: its payload is not read."""
    spec = parse_spec(worked_example("colocated-1x8"), "test")
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text(json.dumps(
        {"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1}}, "added_tokens": []}))
    payloads = {"tokenizer": tmp_path / "tok", "model": tmp_path / "no-such-folder"}
    assert tokenizer_findings(spec, payloads) == []


def test_the_examples_fire_their_checks() -> None:
    checks = {check.code: check for check in launch_checks()}
    assert checks["LAUNCH002"].func is tokenizer_mismatches
    assert checks["LAUNCH003"].func is tokenizer_rows
    for code in ("LAUNCH002", "LAUNCH003"):
        assert [finding.code for finding in checks[code].example()] == [code]


def test_a_model_without_tokenizer_files_is_a_warning_naming_it() -> None:
    data = worked_example("colocated-1x8")
    data["reference_model"] = dict(data["model"], name="bare", tokenizer_repo_id="org/bare")
    spec = parse_spec(data, "test")
    mine = TokenizerContents({0: "a"}, {}, {}, "tokenizer.json")
    [finding] = tokenizer_mismatches(spec, {"tokenizer": mine, "reference_model": None})
    assert finding.severity == "warning"
    assert finding.message.endswith(
        "and reference_model has no tokenizer files in the store: their vocabularies were not "
        "compared")


def test_a_tokenizer_file_of_another_shape_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    data = worked_example("colocated-1x8")
    data["reference_model"] = dict(data["model"], name="odd", tokenizer_repo_id="org/odd")
    spec = parse_spec(data, "test")
    for name, text in (("tok", '{"model": {"vocab": {"a": 0}}}'), ("odd", '{"model": "old"}')):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tokenizer.json").write_text(text)
    [finding] = tokenizer_findings(
        spec, {"tokenizer": tmp_path / "tok", "reference_model": tmp_path / "odd"})
    assert (finding.code, finding.severity, finding.paths) == (
        "LAUNCH002", "warning", ("tokenizer", "reference_model"))
    assert finding.message == (
        f"a tokenizer file of tokenizer, reference_model cannot be read "
        f"({tmp_path / 'odd' / 'tokenizer.json'} has no model.vocab (a mapping or a list)): the "
        f"run's tokenizer and its models were not compared")


def test_a_string_moved_past_the_other_vocabulary_is_refused_with_its_ids() -> None:
    data = worked_example("colocated-1x8")
    data["critic_model"] = dict(data["model"], name="critic", tokenizer_repo_id="org/critic")
    spec = parse_spec(data, "test")
    special = dict.fromkeys(("bos_token", "eos_token", "pad_token", "unk_token"))
    mine = TokenizerContents({0: "a", 1: "b", 5: "<tool>"}, special, {}, "tokenizer.json")
    theirs = TokenizerContents({0: "a", 1: "b", 2: "<tool>"}, special, {}, "tokenizer.json")
    [finding] = tokenizer_mismatches(spec, {"tokenizer": mine, "critic_model": theirs})
    assert finding.is_error
    assert finding.message.endswith(
        "and their files in the store differ: 1 strings moved to ids the other does not have "
        "('<tool>' is id 5 in the run's tokenizer, 2 in critic_model's): critic_model would "
        "read the run's token ids as other strings")
