"""The `skyrl` subtree's names and its command-line form (what SkyRL's entrypoint takes)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlaunch.render import launch_document, skyrl_cli_args
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import WORKED_EXAMPLES, worked_example
from rlaunch.spec.settings import PLAN_OWNED
from rlaunch.spec.skyrl_mapping import rows

REFERENCE_NAME = "skyrl-0.3.0-config-fields.txt"


def leaf_paths(tree: dict, prefix: str = "") -> list[str]:
    paths = []
    for key, value in tree.items():
        if isinstance(value, dict):
            paths.extend(leaf_paths(value, f"{prefix}{key}."))
        else:
            paths.append(f"{prefix}{key}")
    return paths


def reference_fields() -> set[str]:
    # SkyRL 0.3.0's config fields as its dataclasses list them (a copy of the project's shared
    # reference): `name: type = default` is a field; `name: [ClassName]` is a section.
    path = Path(__file__).with_name(REFERENCE_NAME)
    fields = (line.split(": ", 1) for line in path.read_text().splitlines() if ": " in line)
    return {name for name, rest in fields if not rest.startswith("[")}


@pytest.mark.parametrize("name", sorted(WORKED_EXAMPLES))
def test_every_skyrl_leaf_is_a_skyrl_0_3_0_config_field(name):
    subtree = launch_document(parse_spec(worked_example(name)), store_prefix="/s",
                              launcher_commit=None)["skyrl"]
    unknown = sorted(set(leaf_paths(subtree)) - reference_fields())
    assert unknown == []


def test_cli_args_carry_every_leaf_as_yaml_in_subtree_order():
    subtree = {
        "data": {"train_data": ["gs://b/x,y/2026.11.01"], "val_data": []},
        "trainer": {
            "policy": {"optimizer_config": {"lr": 1e-06}},
            "resume_path": None,
            "placement": {"colocate_all": True},
            "max_training_steps": 10,
            "run_name": "run@2026.11.29",
            "project_name": "yes",
            "algorithm": {"eps_clip_low": 0.2},
        },
    }
    args = skyrl_cli_args(subtree)
    assert args == [
        'data.train_data=["gs://b/x,y/2026.11.01"]',
        "data.val_data=[]",
        "trainer.policy.optimizer_config.lr=1.0e-06",
        "trainer.resume_path=null",
        "trainer.placement.colocate_all=true",
        "trainer.max_training_steps=10",
        'trainer.run_name="run@2026.11.29"',
        'trainer.project_name="yes"',
        "trainer.algorithm.eps_clip_low=0.2",
    ]
    # SkyRL's parser reads each value as YAML: every value comes back as written.
    for arg, leaf in zip(args, leaf_paths(subtree), strict=True):
        key, value = arg.split("=", 1)
        assert key == leaf
    values = [yaml.safe_load(arg.split("=", 1)[1]) for arg in args]
    assert values == [["gs://b/x,y/2026.11.01"], [], 1e-06, None, True, 10, "run@2026.11.29",
                      "yes", 0.2]


def test_cli_args_of_a_worked_example_cover_the_whole_subtree():
    subtree = launch_document(parse_spec(worked_example("megatron-moe-5x8")),
                              store_prefix="gs://b/s", launcher_commit=None)["skyrl"]
    args = skyrl_cli_args(subtree)
    assert [arg.split("=", 1)[0] for arg in args] == leaf_paths(subtree)
    assert "trainer.policy.megatron_config.expert_model_parallel_size=8" in args
    assert "generator.inference_engine.data_parallel_size=8" in args
    assert 'data.train_data=["gs://b/s/gsm8k-train-prompts/2026.11.30/prompts.parquet"]' in args


def test_a_value_without_a_command_line_form_is_an_error():
    with pytest.raises(TypeError) as caught:
        skyrl_cli_args({"trainer": {"tags": ("a",)}})
    assert str(caught.value) == "no SkyRL command-line form for tuple: ('a',)"


@pytest.mark.parametrize("name", sorted(WORKED_EXAMPLES))
def test_the_subtree_is_exactly_the_mapping_rows_with_a_value_in_their_order(name):
    # Every rendered name is a row, so PLAN_OWNED has it and no setting can repeat it.
    subtree = launch_document(parse_spec(worked_example(name)), store_prefix="/s",
                              launcher_commit=None)["skyrl"]
    assert leaf_paths(subtree) == [row.skyrl for row in rows() if row.value is not None]
    assert sorted(set(leaf_paths(subtree)) - set(PLAN_OWNED)) == []


def test_settings_land_at_their_dotted_names_beside_the_rendered_keys():
    data = {**worked_example("colocated-1x8"), "settings": {
        "trainer.policy.optimizer_config.weight_decay": 0.0,
        "trainer.policy.model.lora.rank": 16,
        "generator.inference_engine.gpu_memory_utilization": 0.85,
    }}
    skyrl = launch_document(parse_spec(data), store_prefix="/s", launcher_commit=None)["skyrl"]
    policy = skyrl["trainer"]["policy"]
    assert policy["optimizer_config"] == {"lr": 1e-6, "weight_decay": 0.0}
    assert policy["model"]["lora"] == {"rank": 16}
    assert policy["model"]["path"].endswith("/qwen2.5-1.5b-instruct/2026.11.01")
    assert skyrl["generator"]["inference_engine"]["gpu_memory_utilization"] == 0.85
    assert "generator.inference_engine.gpu_memory_utilization=0.85" in skyrl_cli_args(skyrl)
