"""Issue 26, done when: a new integer field of the policy role is three hand-written edits (the
model, the SkyRL mapping table, one example) plus regenerating schema.json, and then it is
documented by `./pants help role_plan`, accepted and range-checked in a BUILD file, named by
`./pants check`, rendered into the launch YAML under its SkyRL name, and accepted by SkyRL's own
loader. In a scratch copy of the repository, through the real ./pants.

The field: `max_loras`, the LoRA adapters served in one batch (SkyRL 0.3.0
`trainer.policy.model.lora.max_loras`, an int, default 1: `LoRAConfig` in
skyrl/train/config/config.py, passed to vLLM's `max_loras`). No code of this repository reads
that name yet (a setting another rule reads, such as `lora.rank`, would need that rule to read
the field as well), so these three edits are the whole change: with scripts/gen-docs and
tests/render/update_golden.py (every launch YAML then writes the default), the library's and the
plugin's own tests pass unchanged.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pants_scratch import ScratchRepo
from test_experiments import run_harness

from rlaunch.render import skyrl_cli_args

MODEL = "src/rlaunch/spec/roleplan.py"
MAPPING = "src/rlaunch/spec/skyrl_mapping.py"
EXAMPLE = "experiments/qwen2.5-1.5b-gsm8k/BUILD"
SCHEMA = "pants-plugins/rlaunch_pants/schema.json"
RUN = "experiments/qwen2.5-1.5b-gsm8k:grpo"
PLAN = "experiments/qwen2.5-1.5b-gsm8k:colocated-1x8"

FIELD = (
    "    max_loras: Annotated[int, Field(ge=1)] = 1\n"
    '    """LoRA adapters served in one batch (vLLM max_loras)."""\n'
)
ROW = '    plan("role_plan.policy.max_loras", "trainer.policy.model.lora.max_loras"),\n'


def add_the_field(root: Path) -> None:
    """The three edits a developer makes, as text."""
    model = (root / MODEL).read_text()
    header = re.search(r"^class PolicyRole\(.*\):\n(    \"\"\"(?:.|\n)*?\"\"\"\n\n)?", model, re.M)
    assert header is not None, "PolicyRole not found"
    model = model[: header.end()] + FIELD + model[header.end():]
    model = model.replace("from typing import ", "from typing import Annotated, ", 1)
    if "from pydantic import Field" not in model:
        model = model.replace("\nfrom rlaunch.", "\nfrom pydantic import Field\n\nfrom rlaunch.", 1)
    (root / MODEL).write_text(model)

    mapping = (root / MAPPING).read_text()
    anchor = ('    plan("model", "trainer.policy.model.path", _uri("model"),'
              ' how="`inputs.model.uri`"),\n')
    assert mapping.count(anchor) == 1, anchor
    (root / MAPPING).write_text(mapping.replace(anchor, anchor + ROW))

    example = (root / EXAMPLE).read_text()
    anchor = "        sequence_parallel_size=1,\n    ),\n    reference=dict("
    assert example.count(anchor) == 1, anchor
    (root / EXAMPLE).write_text(example.replace(
        anchor, "        sequence_parallel_size=1, max_loras=2,\n    ),\n    reference=dict("))


@pytest.fixture(scope="module")
def scratch(repo_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScratchRepo]:
    repo = ScratchRepo(repo_root, tmp_path_factory.mktemp("repo"))
    repo.commit_all("the repository as it is")
    add_the_field(repo.root)
    regenerate = [repo.runtime_python(), "-m", "rlaunch.buildschema", "--write"]
    done = subprocess.run(regenerate, cwd=repo.root, env={**repo.env, "PYTHONPATH": "src"},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    yield repo
    repo.close()


def test_three_hand_written_files_and_the_regenerated_schema_change(scratch: ScratchRepo) -> None:
    changed = sorted(line[3:] for line in scratch.git("status", "--porcelain").splitlines())
    assert changed == sorted([EXAMPLE, SCHEMA, MODEL, MAPPING])


def test_the_field_is_documented_by_pants_help(scratch: ScratchRepo) -> None:
    result = scratch.pants("help", "role_plan")
    assert result.returncode == 0, result.stderr
    assert (
        "        max_loras: LoRA adapters served in one batch (vLLM max_loras) (default: 1)\n"
    ) in result.stdout


def test_the_field_reaches_check_the_yaml_and_skyrls_own_loader(
    scratch: ScratchRepo, repo_root: Path, tmp_path: Path
) -> None:
    result = scratch.pants("check", RUN)
    assert result.returncode == 0, result.stderr
    assert "✓ rlaunch-preflight succeeded." in result.stderr
    result = scratch.pants("package", RUN)
    assert result.returncode == 0, result.stderr
    folder = scratch.root / "dist/experiments/qwen2.5-1.5b-gsm8k/grpo"
    spec = json.loads((folder / "spec.json").read_text())
    assert spec["role_plan"]["policy"]["max_loras"] == 2
    skyrl = yaml.safe_load((folder / "launch.yaml").read_text())["skyrl"]
    assert skyrl["trainer"]["policy"]["model"]["lora"] == {"max_loras": 2}
    # With wandb, validate_cfg reads WANDB_API_KEY: a launch-time fact, not a config one.
    skyrl["trainer"]["logger"] = "console"
    cases = tmp_path / "cases.yaml"
    cases.write_text(yaml.safe_dump(
        {"max_loras": {"skyrl": skyrl, "cli_args": skyrl_cli_args(skyrl)}}, sort_keys=False))
    outcome = run_harness(repo_root, "skyrl_harness.py", cases, tmp_path)["max_loras"]
    assert (outcome["accepted"], outcome.get("error")) == (True, None)
    assert outcome["held"]["trainer"]["policy"]["model"]["lora"]["max_loras"] == 2
    assert outcome["cli_equals_yaml"] is True


def check_edited(scratch: ScratchRepo, old: str, new: str) -> str:
    """`./pants check` of the run with one edit of the example's BUILD file (undone after): its
    output, on one line; the command must fail."""
    example = scratch.root / EXAMPLE
    original = example.read_text()
    assert old in original, old
    example.write_text(original.replace(old, new, 1))
    try:
        result = scratch.pants("check", RUN)
    finally:
        example.write_text(original)
    assert result.returncode != 0
    return " ".join(result.stderr.split())


def test_the_field_is_range_checked_in_the_build_file(scratch: ScratchRepo) -> None:
    assert (
        f"The 'policy' field in target {PLAN} must set 'max_loras' to a positive integer, but "
        "was 0."
    ) in check_edited(scratch, "max_loras=2,", "max_loras=0,")


def test_a_setting_of_its_skyrl_name_is_refused_naming_the_field(scratch: ScratchRepo) -> None:
    warmup = '"trainer.policy.optimizer_config.num_warmup_steps": 10,'
    assert (
        "sets 'trainer.policy.model.lora.max_loras', which the plan decides: set "
        "role_plan.policy.max_loras instead"
    ) in check_edited(scratch, warmup, warmup + ' "trainer.policy.model.lora.max_loras": 4,')
