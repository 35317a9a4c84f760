"""`rlaunch render SPEC -o FILE`: the command line front of rlaunch.render."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rlaunch.render import render_launch
from rlaunch.render.commands import render
from rlaunch.spec import dump_spec, parse_spec
from rlaunch.spec.examples import worked_example

SRC = Path(__file__).resolve().parents[2] / "src"
COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def write_spec(tmp_path: Path, name: str = "colocated-1x8", edit=None, suffix: str = "yaml"):
    data = worked_example(name)
    if edit is not None:
        edit(data)
    spec = parse_spec(data)
    path = tmp_path / f"spec.{suffix}"
    dump_spec(spec, path)
    return spec, path


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(render, list(args), env=env, catch_exceptions=False)


def test_writes_the_launch_yaml_with_the_spec_store_prefix(tmp_path):
    spec, path = write_spec(tmp_path)
    out = tmp_path / "dist" / "launch.yaml"
    result = invoke(str(path), "-o", str(out), "--launcher-commit", COMMIT)
    assert result.exit_code == 0, result.output
    assert result.stderr == f"rendered colocated-1x8@2026.11.29 -> {out}\n"
    assert out.read_text() == render_launch(
        spec, store_prefix="gs://rlaunch-example/store", launcher_commit=COMMIT
    )


def test_json_spec_to_stdout(tmp_path):
    spec, path = write_spec(tmp_path, "megatron-moe-5x8", suffix="json")
    result = invoke(str(path), "-o", "-")
    assert result.exit_code == 0
    assert result.stdout == render_launch(
        spec, store_prefix="gs://rlaunch-example/store", launcher_commit=None
    )


def test_store_prefix_option_wins_and_a_local_one_is_made_absolute(tmp_path, monkeypatch):
    _, path = write_spec(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = invoke(str(path), "-o", "-", "--store", "store/")
    doc = yaml.safe_load(result.stdout)
    assert doc["artifacts"]["store_prefix"] == str(tmp_path.resolve() / "store")
    result = invoke(str(path), "-o", "-", "--store", "s3://bucket/rl")
    assert yaml.safe_load(result.stdout)["artifacts"]["run_root"] == (
        "s3://bucket/rl/colocated-1x8/2026.11.29"
    )


def test_without_any_prefix_the_local_default_store_is_used(tmp_path):
    def no_prefix(data):
        data["execution"]["store_prefix"] = None

    _, path = write_spec(tmp_path, edit=no_prefix)
    result = invoke(str(path), "-o", "-", env={"RLAUNCH_STORE": str(tmp_path / "store")})
    doc = yaml.safe_load(result.stdout)
    assert doc["artifacts"]["store_prefix"] == str(tmp_path / "store")
    assert doc["inputs"]["model"]["uri"] == str(
        tmp_path / "store" / "qwen2.5-1.5b-instruct" / "2026.11.01"
    )


def test_an_invalid_spec_prints_every_problem_and_exits_2(tmp_path):
    path = tmp_path / "bad.yaml"
    data = worked_example("colocated-1x8")
    data["sede"] = data.pop("seed")
    path.write_text(yaml.safe_dump(data))
    out = tmp_path / "launch.yaml"
    result = invoke(str(path), "-o", str(out))
    assert result.exit_code == 2
    assert result.stderr == (
        f"{path}: not a valid RunSpec (2 problem(s))\n"
        "  - seed: required key is missing (a run spec has no silent defaults)\n"
        "  - sede: unknown key (remove it or check its spelling)\n"
        "  The format is documented in docs/spec-format.md.\n"
    )
    assert not out.exists()


def test_a_missing_spec_file_exits_2(tmp_path):
    result = invoke(str(tmp_path / "nope.yaml"), "-o", "-")
    assert result.exit_code == 2
    assert result.stderr == (
        f"{tmp_path / 'nope.yaml'}: not a valid RunSpec (1 problem(s))\n"
        "  - cannot read the file: No such file or directory\n"
        "  The format is documented in docs/spec-format.md.\n"
    )


def test_a_bad_launcher_commit_exits_2_with_the_fix(tmp_path):
    _, path = write_spec(tmp_path)
    result = invoke(str(path), "-o", "-", "--launcher-commit", "HEAD")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: launcher commit: must be a 40-hex lowercase git commit sha or omitted "
        "(got 'HEAD'); use `git rev-parse HEAD` of the launcher checkout\n"
    )


def test_an_unwritable_output_exits_1(tmp_path):
    _, path = write_spec(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = invoke(str(path), "-o", str(blocker / "launch.yaml"))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: cannot write the launch YAML to {blocker}/launch.yaml")


def test_a_spec_preflight_refuses_is_still_rendered(tmp_path):
    _, path = write_spec(tmp_path, "tp8-on-42-heads")
    result = invoke(str(path), "-o", "-")
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["run"]["name"] == "tp8-on-42-heads"


@pytest.mark.parametrize("hash_seed", ["1", "2"])
def test_python_m_rlaunch_render_gives_the_same_bytes_in_any_process(tmp_path, hash_seed):
    spec, path = write_spec(tmp_path, "megatron-moe-5x8")
    out = tmp_path / f"launch-{hash_seed}.yaml"
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-m", "rlaunch", "render", str(path), "-o", str(out),
         "--store", "gs://b/store"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == render_launch(
        spec, store_prefix="gs://b/store", launcher_commit=None
    ).encode()
