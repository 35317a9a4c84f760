"""`rlaunch pin` against a local Hub (tests/hubserver.py) with the real huggingface_hub client:
a branch resolved to its commit, the facts read there, the target printed or written into a
BUILD file, and what the snapshot builder then accepts or refuses."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hubserver import hub_environment, serve_hub
from modelrepo import TINY_QWEN, model_files, parameter_count
from rlaunch.builders import BuildError, build_artifact
from rlaunch.cli import main
from rlaunch.spec.artifacts import HFModel

COMMIT = "5" * 40
OLD_COMMIT = "6" * 40
SHARDED_COMMIT = "7" * 40
REPOS = {
    ("models", "org/qwen-tiny", COMMIT): model_files(TINY_QWEN),
    ("models", "org/qwen-tiny", OLD_COMMIT): model_files({**TINY_QWEN, "vocab_size": 90}),
    ("models", "org/qwen-sharded", SHARDED_COMMIT): model_files(TINY_QWEN, shards=3),
    ("models", "org/no-layers", COMMIT): model_files(TINY_QWEN) | {
        "config.json": json.dumps({k: v for k, v in TINY_QWEN.items()
                                   if k != "num_hidden_layers"}).encode()},
}
REFS = {("models", "org/qwen-tiny", "main"): COMMIT,
        ("models", "org/qwen-sharded", "main"): SHARDED_COMMIT}
PARAMS = parameter_count(TINY_QWEN)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with serve_hub(REPOS, REFS) as (url, _):
        for key, value in hub_environment(url).items():
            monkeypatch.setenv(key, value)
        yield url


def pin(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["pin", *args])
    return result.exit_code, result.stdout, result.stderr


def literal(node: ast.expr) -> object:
    """A BUILD value: a literal, or `dict(key=literal, ...)`."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "dict":
        return {keyword.arg: literal(keyword.value) for keyword in node.keywords}
    return ast.literal_eval(node)


def hf_model_kwargs(text: str) -> dict:
    call = ast.parse(text).body[0].value
    return {keyword.arg: literal(keyword.value) for keyword in call.keywords}


def test_the_parameter_count_of_the_test_model_is_the_qwen2_formula() -> None:
    # embed 96x64 (tied) + final norm 64 + 2 layers x (q 64x64+64, k and v 32x64+32 each,
    # o 64x64, MLP 3 x 64x160, two norms 64)
    layer = 64 * 64 + 64 + 2 * (32 * 64 + 32) + 64 * 64 + 3 * 64 * 160 + 2 * 64
    assert PARAMS == 96 * 64 + 64 + 2 * layer == 92_736


def test_pin_resolves_a_branch_and_prints_the_target_with_its_facts(hub: str) -> None:
    code, out, err = pin("org/qwen-tiny", "--revision", "main", "--name", "qwen-tiny",
                         "--version", "2026.12.01")
    assert (code, err) == (0, "")
    assert hf_model_kwargs(out) == {
        "name": "qwen-tiny", "repo_id": "org/qwen-tiny", "revision": COMMIT,
        "facts": {"num_attention_heads": 4, "num_key_value_heads": 2,
                  "max_position_embeddings": 2048, "num_experts": None,
                  "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 160,
                  "vocab_size": 96, "head_dim": None, "torch_dtype": "bfloat16",
                  "num_parameters": PARAMS},
        "version": "2026.12.01",
    }
    assert f"# `rlaunch pin` resolved 'main' at {hub} on " in out


def test_a_sharded_model_counts_every_shard(hub: str) -> None:
    code, out, _ = pin("org/qwen-sharded", "--version", "dev")
    assert code == 0
    assert hf_model_kwargs(out)["facts"]["num_parameters"] == PARAMS
    assert "name" not in hf_model_kwargs(out)


def test_write_replaces_the_target_of_that_name_and_keeps_the_rest(
    hub: str, tmp_path: Path
) -> None:
    build = tmp_path / "BUILD"
    build.write_text(
        "# Qwen tiny, pinned by rlaunch pin.\n"
        'hf_model(\n    name="qwen-tiny",\n    repo_id="org/qwen-tiny",\n'
        f'    revision="{OLD_COMMIT}",\n    facts=dict(num_attention_heads=4),\n'
        '    version="2026.01.01",\n)\n\n'
        'hf_model(name="other", repo_id="org/other", revision="' + "8" * 40 + '", facts=None,'
        ' version="dev")\n'
    )
    code, out, err = pin("org/qwen-tiny", "--name", "qwen-tiny", "--version", "2026.12.01",
                         "--write", str(build))
    assert (code, err) == (0, "")
    assert out == f"{build}: replaced hf_model qwen-tiny at {COMMIT}\n"
    text = build.read_text()
    assert text.startswith("# Qwen tiny, pinned by rlaunch pin.\nhf_model(\n")
    calls = [hf_model_kwargs(ast.unparse(node)) for node in ast.parse(text).body]
    assert [(c["name"], c["revision"]) for c in calls] == [("qwen-tiny", COMMIT),
                                                            ("other", "8" * 40)]
    assert calls[0]["facts"]["vocab_size"] == 96


def test_write_adds_a_target_to_a_build_file_without_it(hub: str, tmp_path: Path) -> None:
    build = tmp_path / "models" / "BUILD"
    code, out, _ = pin("org/qwen-tiny", "--revision", COMMIT, "--version", "dev",
                       "--write", str(build))
    assert (code, out) == (0, f"{build}: added hf_model org/qwen-tiny at {COMMIT}\n")
    assert hf_model_kwargs(build.read_text())["revision"] == COMMIT


def test_the_pinned_target_is_what_the_snapshot_builder_accepts(
    hub: str, tmp_path: Path
) -> None:
    _, out, _ = pin("org/qwen-tiny", "--name", "qwen-tiny", "--version", "dev")
    fields = hf_model_kwargs(out)
    artifact = HFModel.model_validate({
        "type": "hf_model", **fields, "tokenizer_repo_id": fields["repo_id"],
        "tokenizer_revision": fields["revision"]})
    result = build_artifact(artifact, str(tmp_path / "store"), log=lambda line: None)
    assert (result.local_path / "config.json").is_file()


def test_the_snapshot_builder_refuses_each_mismatched_fact_with_the_pin_command(
    hub: str, tmp_path: Path
) -> None:
    _, out, _ = pin("org/qwen-tiny", "--name", "qwen-tiny", "--version", "dev")
    fields = hf_model_kwargs(out)
    fields["facts"] |= {"hidden_size": 128, "num_parameters": 1_000_000, "head_dim": 16}
    artifact = HFModel.model_validate({
        "type": "hf_model", **fields, "tokenizer_repo_id": fields["repo_id"],
        "tokenizer_revision": fields["revision"]})
    with pytest.raises(BuildError) as raised:
        build_artifact(artifact, str(tmp_path / "store"), log=lambda line: None)
    source = f"org/qwen-tiny@{COMMIT}"
    assert str(raised.value) == (
        "qwen-tiny@dev: the declared facts do not match the model:\n"
        f"  - facts.hidden_size: declared 128, but config.json of {source} has hidden_size = 64\n"
        f"  - facts.head_dim: declared 16, but config.json of {source} has no head_dim\n"
        f"  - facts.num_parameters: declared 1000000, but the safetensors files of {source} "
        f"hold {PARAMS} parameters\n"
        f"  Fix: `rlaunch pin org/qwen-tiny --revision {COMMIT} --name qwen-tiny --version dev`"
        " prints the facts of this pin (or fix the pin, if it points at the wrong model)."
    )


def test_an_unknown_revision_and_a_missing_fact_are_named(hub: str) -> None:
    code, out, err = pin("org/qwen-tiny", "--revision", "v9")
    assert (code, out) == (1, "")
    assert err.startswith("error: rlaunch pin org/qwen-tiny --revision v9: revision 'v9' does "
                          "not exist in model repo org/qwen-tiny at http://127.0.0.1:")
    code, _, err = pin("org/no-layers", "--revision", COMMIT)
    assert code == 1
    assert err == (f"error: rlaunch pin org/no-layers --revision {COMMIT}: config.json of "
                   f"org/no-layers@{COMMIT} has no num_hidden_layers: an hf_model needs them as "
                   f"facts (multimodal configs are read from text_config)\n")


def test_a_bad_version_is_refused_before_the_hub_is_asked() -> None:
    code, _, err = pin("org/qwen-tiny", "--version", "latest")
    assert code == 2
    assert "Invalid value for --version: 'latest' is not YYYY.MM.DD[.N] nor dev" in err
