"""Properties of rendering over generated specs: deterministic, stable through the spec's own file
format, independent of the key order a spec was written in, and always in the documented order."""

from __future__ import annotations

import copy
import string
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlaunch.render import INPUT_SLOTS, SECTIONS, launch_document, render_launch
from rlaunch.spec import dumps_spec, loads_spec, parse_spec
from rlaunch.spec.examples import GSM8K_TEST, QWEN25_1_5B, WORKED_EXAMPLES, worked_example

# Every fixed mapping of a launch document and its keys, in the order docs/launch-yaml.md gives.
EXPECTED_KEYS: dict[str, list[str]] = {
    "": list(SECTIONS),
    "run": ["id", "name", "version", "seed", "fingerprint"],
    "runtime": ["name", "profile", "package", "git", "entrypoint", "required_fixes",
                "fingerprint", "launcher_commit"],
    "execution": ["executor", "address", "cluster", "priority", "max_retries", "timeout_minutes",
                  "allocation", "env", "wandb"],
    "execution.allocation": ["num_nodes", "gpus_per_node", "accelerator", "cpus_per_node",
                             "memory_gb_per_node", "disk_gb_per_node"],
    "artifacts": ["store_prefix", "run_root", "checkpoint_root", "export_root", "attempts_root",
                  "terminal_manifest"],
    "resume": ["mode", "path", "compatible_runtimes"],
    "skyrl": ["data", "trainer", "generator", "environment"],
    "skyrl.data": ["train_data", "val_data"],
    "skyrl.trainer": [
        "placement", "strategy", "policy", "ref", "critic", "algorithm", "fully_async", "seed",
        "resume_mode", "resume_path", "ckpt_path", "max_ckpts_to_keep", "ckpt_interval",
        "hf_save_interval", "export_path", "epochs", "max_training_steps", "train_batch_size",
        "policy_mini_batch_size", "critic_mini_batch_size", "micro_train_batch_size_per_gpu",
        "micro_forward_batch_size_per_gpu", "eval_batch_size", "max_prompt_length",
        "project_name", "run_name", "tags", "logger", "log_path",
    ],
    "skyrl.trainer.placement": [
        "colocate_all", "colocate_policy_ref", "policy_num_nodes", "policy_num_gpus_per_node",
        "critic_num_nodes", "critic_num_gpus_per_node", "ref_num_nodes", "ref_num_gpus_per_node",
    ],
    "skyrl.trainer.policy": ["model", "optimizer_config", "sequence_parallel_size",
                             "megatron_config"],
    "skyrl.trainer.policy.megatron_config": [
        "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
        "expert_model_parallel_size", "expert_tensor_parallel_size",
    ],
    "skyrl.trainer.ref": ["model", "sequence_parallel_size", "megatron_config"],
    "skyrl.trainer.critic": ["model", "sequence_parallel_size"],
    "skyrl.trainer.algorithm": ["advantage_estimator", "use_kl_loss", "use_kl_in_reward",
                                "kl_loss_coef", "kl_estimator_type", "eps_clip_low",
                                "eps_clip_high"],
    "skyrl.trainer.fully_async": ["enabled"],
    "skyrl.generator": ["inference_engine", "n_samples_per_prompt", "max_turns",
                        "max_input_length", "sampling_params"],
    "skyrl.generator.inference_engine": [
        "num_engines", "backend", "weight_sync_backend", "tensor_parallel_size",
        "pipeline_parallel_size", "data_parallel_size", "expert_parallel_size",
    ],
    "skyrl.generator.sampling_params": ["max_generate_length", "temperature"],
    "skyrl.environment": ["env_class"],
}
INPUT_KEYS = ["identity", "kind", "type", "fingerprint", "uri", "source"]
SOURCE_KEYS = {
    "hf_model": ["repo_id", "revision"],
    "hf_dataset": ["repo_id", "revision", "config"],
    "adopted": ["uri", "sha256"],
    "built": ["builder", "config"],
    "run_export": ["run", "run_fingerprint"],
}

PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

safe_names = st.text(string.ascii_lowercase + string.digits + "-.", min_size=1, max_size=24)
# Any text YAML can carry: quotes, colons, `yes`, `null`, `1.0`, leading spaces, non-ASCII.
# Within the BMP: a JSON spec file escapes astral characters as surrogate pairs, which the YAML
# reader of rlaunch.spec.io reads back as two lone surrogates (a spec-io issue, reported). No NUL:
# a spec refuses it in every string (rlaunch.spec.base, tests/hostile/test_spec_files.py).
any_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00",
                  max_codepoint=0xFFFF), min_size=1, max_size=16
)
counts = st.integers(min_value=-2, max_value=4096)
floats = st.floats(allow_nan=False, allow_infinity=False, width=64)
plain_values = st.one_of(st.none(), st.booleans(), st.integers(), floats, any_text)
free_config = st.recursive(
    st.dictionaries(any_text, plain_values, max_size=4),
    lambda inner: st.dictionaries(any_text, st.one_of(inner, st.lists(inner, max_size=2)),
                                  max_size=3),
    max_leaves=8,
)


@st.composite
def spec_data(draw: st.DrawFn) -> dict[str, Any]:
    data = worked_example(draw(st.sampled_from(sorted(WORKED_EXAMPLES))))
    data["name"] = draw(safe_names)
    data["version"] = draw(st.sampled_from(["2026.11.29", "2027.01.02.3", "dev", "exp-dev"]))
    data["seed"] = draw(st.integers(min_value=0, max_value=2**32 - 1))
    batch = data["role_plan"]["batch"]
    for key in ("train_batch_size", "policy_mini_batch_size", "micro_train_batch_size_per_gpu",
                "n_samples_per_prompt"):
        batch[key] = draw(counts)
    policy = data["role_plan"]["policy"]
    policy["sequence_parallel_size"] = draw(st.integers(1, 8))
    policy["tensor_parallel_size"] = draw(st.integers(1, 8))
    data["role_plan"]["placement"]["colocate_all"] = draw(st.booleans())
    if draw(st.booleans()):
        data["role_plan"]["reference"] = None
    if draw(st.booleans()):
        critic = copy.deepcopy(QWEN25_1_5B)
        critic["name"] = draw(safe_names)
        data["critic_model"] = critic
        data["role_plan"]["critic"] = {"colocated_with_policy": draw(st.booleans()),
                                       "num_nodes": draw(counts), "num_gpus_per_node": 8}
        batch["critic_mini_batch_size"] = draw(counts)
    data["eval_data"] = draw(st.sampled_from([None, GSM8K_TEST]))
    if data["eval_data"] is not None:
        # Any config name: `null`, `yes`, `1.0` must come back from the YAML as the same string.
        data["eval_data"] = {**data["eval_data"], "config": draw(st.one_of(st.none(), any_text))}
    algorithm = data["algorithm"]
    algorithm["learning_rate"] = draw(floats)
    # In their documented ranges (the models refuse the rest; tests/spec/test_ranges.py).
    algorithm["clip_ratio"] = draw(st.floats(min_value=0, max_value=1, exclude_min=True,
                                             exclude_max=True))
    algorithm["kl"]["kl_loss_coef"] = draw(st.floats(min_value=0, allow_infinity=False))
    algorithm["max_training_steps"] = draw(st.one_of(st.none(), counts))
    algorithm["fully_async"] = draw(st.booleans())
    algorithm["environment"] = draw(any_text)
    data["logger"] = draw(st.sampled_from(["console", "wandb"]))
    execution = data["execution"]
    execution["allocation"]["accelerator"] = draw(any_text)
    execution["credentials"] = draw(st.lists(st.sampled_from(
        ["WANDB_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY"]), max_size=4))
    if draw(st.booleans()):
        execution["wandb"] = {"entity": draw(any_text), "project": draw(any_text)}
    if draw(st.booleans()):
        data["train_data"] = {
            "type": "built", "name": draw(safe_names), "version": "2026.11.02",
            "kind": "dataset", "builder": draw(any_text), "config": draw(free_config),
            "deps": {}, "facts": None, "rows": None,
        }
    return data


prefixes = st.sampled_from(["/srv/rlaunch-store", "gs://bucket/rl/", "s3://b", "/"])
commits = st.one_of(st.none(), st.text("0123456789abcdef", min_size=40, max_size=40))


def reversed_keys(value: Any) -> Any:
    """The same data with every mapping's keys in reverse order."""
    if isinstance(value, dict):
        return {key: reversed_keys(value[key]) for key in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_keys(item) for item in value]
    return value


def key_order_problems(document: dict[str, Any]) -> list[str]:
    problems = []
    for path, expected in EXPECTED_KEYS.items():
        node: Any = document
        for part in filter(None, path.split(".")):
            node = node[part]
        if list(node) != expected:
            problems.append(f"{path or '<top>'}: {list(node)}")
    slots = list(document["inputs"])
    if slots != [slot for slot in INPUT_SLOTS if slot in slots]:
        problems.append(f"inputs: {slots}")
    for slot, entry in document["inputs"].items():
        if list(entry) != INPUT_KEYS or list(entry["source"]) != SOURCE_KEYS[entry["type"]]:
            problems.append(f"inputs.{slot}: {list(entry)} / {list(entry['source'])}")
    return problems


@PROPERTY_SETTINGS
@given(data=spec_data(), prefix=prefixes, commit=commits)
def test_rendering_is_deterministic(data, prefix, commit):
    first = render_launch(parse_spec(copy.deepcopy(data)), store_prefix=prefix,
                          launcher_commit=commit)
    second = render_launch(parse_spec(copy.deepcopy(data)), store_prefix=prefix,
                           launcher_commit=commit)
    assert first == second


@PROPERTY_SETTINGS
@given(data=spec_data(), prefix=prefixes, fmt=st.sampled_from(["yaml", "json"]))
def test_spec_file_round_trip_renders_the_same_bytes(data, prefix, fmt):
    spec = parse_spec(data)
    original = render_launch(spec, store_prefix=prefix, launcher_commit=None)
    reloaded = loads_spec(dumps_spec(spec, fmt))
    assert render_launch(reloaded, store_prefix=prefix, launcher_commit=None) == original


@PROPERTY_SETTINGS
@given(data=spec_data(), prefix=prefixes)
def test_the_order_keys_were_written_in_does_not_matter(data, prefix):
    forward = render_launch(parse_spec(data), store_prefix=prefix, launcher_commit=None)
    backward = render_launch(parse_spec(reversed_keys(data)), store_prefix=prefix,
                             launcher_commit=None)
    assert forward == backward


@PROPERTY_SETTINGS
@given(data=spec_data(), prefix=prefixes, commit=commits)
def test_keys_are_always_in_documented_order_and_the_yaml_reads_back_equal(data, prefix, commit):
    spec = parse_spec(data)
    document = launch_document(spec, store_prefix=prefix, launcher_commit=commit)
    assert key_order_problems(document) == []
    text = render_launch(spec, store_prefix=prefix, launcher_commit=commit)
    # The YAML reads back equal (typing it is LaunchDocument's job, for specs preflight passes).
    loaded = yaml.safe_load(text)
    assert loaded == document
    assert yaml.safe_dump(loaded, sort_keys=False) == yaml.safe_dump(document, sort_keys=False)
    config = document["inputs"]["train_data"]["source"].get("config")
    if spec.train_data.type == "built":
        assert list(config) == sorted(config)
    if spec.eval_data is not None:
        assert document["inputs"]["eval_data"]["source"]["config"] == spec.eval_data.config
