"""The typed launch document (rlaunch/render/launchdoc.py): what executors and runtimes read."""

from __future__ import annotations

import pytest

from rlaunch.render import LaunchDocument, LaunchError, launch_document, loads_launch, render_launch
from rlaunch.render.skyrl import skyrl_cli_args
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import WORKED_EXAMPLES, worked_example

PREFIX = "/srv/rlaunch-store"


def rendered(name: str) -> dict:
    spec = parse_spec(worked_example(name))
    return launch_document(spec, store_prefix=PREFIX, launcher_commit=None)


@pytest.mark.parametrize("name", sorted(WORKED_EXAMPLES))
def test_every_worked_example_reads_back_typed_and_whole(name: str) -> None:
    spec = parse_spec(worked_example(name))
    text = render_launch(spec, store_prefix=PREFIX, launcher_commit=None)
    launch = loads_launch(text, "launch.yaml")
    assert launch.run.id == spec.identity
    allocation = spec.execution.allocation
    assert launch.execution.allocation.total_gpus == allocation.num_nodes * allocation.gpus_per_node
    assert launch.skyrl.trainer.train_batch_size == spec.role_plan.batch.train_batch_size
    assert list(launch.inputs) == list(rendered(name)["inputs"])
    # The adapter hands SkyRL the subtree exactly as written: every key, in the file's order.
    assert launch.skyrl_tree() == rendered(name)["skyrl"]
    assert skyrl_cli_args(launch.skyrl_tree()) == skyrl_cli_args(rendered(name)["skyrl"])


def test_settings_the_renderer_leaves_to_skyrl_carry_skyrl_0_3_0_defaults() -> None:
    # skyrl/train/config/config.py: OptimizerConfig (adam_betas [0.9, 0.999], weight_decay 1e-2,
    # max_grad_norm 1.0) and AlgorithmConfig.grpo_norm_by_std True.
    launch = LaunchDocument.parse(rendered("colocated-1x8"))
    optimizer = launch.skyrl.trainer.policy.optimizer_config
    assert (optimizer.adam_betas, optimizer.weight_decay, optimizer.max_grad_norm) == (
        [0.9, 0.999], 0.01, 1.0)
    assert launch.skyrl.trainer.algorithm.grpo_norm_by_std is True
    # ... and they stay out of what SkyRL is handed: SkyRL applies its own defaults.
    assert "weight_decay" not in launch.skyrl_tree()["trainer"]["policy"]["optimizer_config"]


def test_an_unknown_key_in_a_section_rlaunch_writes_is_refused_with_its_path() -> None:
    data = rendered("colocated-1x8")
    data["execution"]["allocation"]["gpu_count"] = 8
    with pytest.raises(LaunchError) as caught:
        LaunchDocument.parse(data, "dist/launch.yaml")
    assert str(caught.value) == (
        "dist/launch.yaml: not a launch YAML (schema_version 1) this rlaunch reads: "
        "execution.allocation.gpu_count: Extra inputs are not permitted (got 8); render it again "
        "with `rlaunch render SPEC -o FILE` (docs/launch-yaml.md lists every field)"
    )


def test_every_bad_field_is_named_at_once() -> None:
    data = rendered("colocated-1x8")
    data["execution"]["allocation"]["num_nodes"] = "2"
    data["skyrl"]["trainer"]["strategy"] = "deepspeed"
    del data["run"]["seed"]
    with pytest.raises(LaunchError) as caught:
        LaunchDocument.parse(data, "l.yaml")
    message = str(caught.value)
    assert "run.seed: Field required;" in message
    assert "execution.allocation.num_nodes: Input should be a valid integer (got '2');" in message
    assert "skyrl.trainer.strategy: Input should be 'fsdp' or 'megatron' (got 'deepspeed');" in (
        message
    )


def test_a_job_is_named_by_its_run_and_attempt() -> None:
    launch = LaunchDocument.parse(rendered("colocated-1x8"))
    assert launch.submission_name("a1") == "rlaunch-colocated-1x8-2026.11.29-a1"
