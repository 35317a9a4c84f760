"""What the runtime reads from a rendered launch YAML (rlaunch/runtimes/smoke/config.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from rlaunch.render import LaunchDocument, LaunchError, launch_document
from rlaunch.runtimes.smoke.config import (
    SmokeConfigError,
    check_runnable,
    geometry_of,
    load_config,
)
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import WORKED_EXAMPLES, worked_example

from .demo import render_smoke, smoke_spec


@pytest.fixture(scope="module")
def document() -> dict:
    return render_smoke(smoke_spec(), "/store")[1]


def test_reads_geometry_batches_and_paths_from_the_rendered_yaml(document: dict) -> None:
    config = _load(document)
    assert (config.run_id, config.seed, config.resume_mode) == ("countdown-smoke@dev", 7, "latest")
    assert config.geometry.policy.world == 2 and config.geometry.rollout_world == 2
    assert config.geometry.colocate_all and config.geometry.use_reference
    assert (config.train_batch_size, config.policy_mini_batch_size,
            config.micro_train_batch_size_per_gpu, config.n_samples_per_prompt) == (16, 8, 16, 8)
    assert config.checkpoint_root == Path("/store/countdown-smoke/dev/checkpoints")
    assert config.model_dir == Path("/store/countdown-smoke-sft/dev")
    assert config.reference_dir == config.model_dir  # no reference_model slot: the initial policy
    assert config.train_dir == config.eval_dir == Path("/store/countdown-smoke-data/dev")
    # Not rendered: SkyRL 0.3.0's defaults, from the typed launch document.
    assert config.grpo_norm_by_std is True and config.max_grad_norm == 1.0
    assert config.num_sim_gpus == 2
    check_runnable(config)


def _load(document: dict):
    return load_config(LaunchDocument.parse(document, "launch.yaml"))


def _changed(document: dict, path: str, value) -> dict:
    changed = copy.deepcopy(document)
    node = changed
    *parents, leaf = path.split(".")
    for part in parents:
        node = node[part]
    if value is KeyError:
        del node[leaf]
    else:
        node[leaf] = value
    return changed


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("skyrl.environment.env_class", "gsm8k",
         "skyrl.environment.env_class is 'gsm8k'; the smoke runtime has the task(s) countdown"),
        ("skyrl.trainer.algorithm.advantage_estimator", "gae",
         "advantage_estimator is 'gae'; the smoke runtime runs grpo and rloo"),
        ("skyrl.trainer.critic.model.path", "/store/critic",
         "skyrl.trainer.critic.model.path is set: the smoke runtime has no critic role"),
        ("artifacts.checkpoint_root", "gs://bucket/ckpt",
         "artifacts.checkpoint_root is 'gs://bucket/ckpt': the smoke runtime reads and writes "
         "local paths only"),
    ],
)
def test_what_the_smoke_runtime_cannot_run_is_named(
    document: dict, path: str, value, message: str
) -> None:
    with pytest.raises(SmokeConfigError) as caught:
        _load(_changed(document, path, value))
    assert message in str(caught.value)


def test_a_mistyped_field_is_refused_by_the_document_before_the_runtime_reads_it(
    document: dict,
) -> None:
    with pytest.raises(LaunchError) as caught:
        _load(_changed(document, "skyrl.trainer.train_batch_size", "16"))
    assert "skyrl.trainer.train_batch_size: Input should be a valid integer (got '16')" in (
        str(caught.value)
    )


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("skyrl.trainer.policy_mini_batch_size", 5,
         "train_batch_size 16 is not divisible by policy_mini_batch_size 5"),
        ("skyrl.trainer.micro_train_batch_size_per_gpu", 5,
         "per-GPU mini batch 32 sequences (= 8 x 8 / DP 2) is not divisible by "
         "micro_train_batch_size_per_gpu 5"),
        ("skyrl.trainer.max_ckpts_to_keep", 0,
         "skyrl.trainer.max_ckpts_to_keep is 0, which would keep no checkpoint"),
        ("skyrl.trainer.resume_mode", "from_path",
         "resume_mode is from_path but skyrl.trainer.resume_path is null"),
    ],
)
def test_batch_and_resume_rules_are_checked_again(document: dict, path: str, value,
                                                  message: str) -> None:
    config = _load(_changed(document, path, value))
    with pytest.raises(SmokeConfigError) as caught:
        check_runnable(config)
    assert message in str(caught.value)


def test_policy_dp_odd_split_is_refused(document: dict) -> None:
    changed = _changed(document, "skyrl.trainer.policy_mini_batch_size", 1)
    changed = _changed(changed, "skyrl.generator.n_samples_per_prompt", 3)
    config = _load(changed)
    with pytest.raises(SmokeConfigError, match=r"policy mini batch 1 x n_samples_per_prompt 3 = "
                                               r"3 sequences do not split over policy DP 2"):
        check_runnable(config)


@pytest.mark.parametrize("name", sorted(WORKED_EXAMPLES))
def test_the_runtime_derives_the_sizes_the_role_plan_owns(name: str) -> None:
    spec = parse_spec(worked_example(name))
    launch = LaunchDocument.parse(
        launch_document(spec, store_prefix="/store", launcher_commit=None), "launch.yaml"
    )
    geometry = geometry_of(launch)
    plan = spec.role_plan
    assert geometry.policy == plan.policy_parallelism
    assert geometry.policy_dp == plan.policy_parallelism.data_parallel
    assert (geometry.gpus_per_engine, geometry.rollout_world) == (
        plan.rollout.gpus_per_engine, plan.rollout.total_gpus)
