from __future__ import annotations

import pytest
from pants.engine.addresses import Address
from pants.engine.internals.scheduler import ExecutionError
from pants.engine.target import NO_VALUE, InvalidFieldException, RequiredFieldMissingException
from pants.testutil.rule_runner import RuleRunner

from rlaunch_pants import artifact_fields as af
from rlaunch_pants import plan_fields as pf
from rlaunch_pants import register, schema
from rlaunch_pants import run_fields as rf
from rlaunch_pants import target_types as tt
from rlaunch_pants.fields import SchemaDictField
from rlaunch_pants.testutil import COLOCATED_BUILD

QWEN = Address("experiments/x", target_name="qwen")
PLAN = Address("experiments/x", target_name="plan")


def error_of(field: type, value: object, address: Address = QWEN) -> str:
    with pytest.raises(InvalidFieldException) as error:
        field(value, address)
    return str(error.value)


def test_revision_must_be_a_commit_sha() -> None:
    assert error_of(af.HF_MODEL_FIELD["revision"], "main") == (
        "The 'revision' field in target experiments/x:qwen must be a 40-character hex commit "
        "sha, but was 'main'."
    )
    # Uppercase hex is another spelling of the sha: the Hub and git print lowercase.
    assert "40-character" in error_of(
        af.HF_MODEL_FIELD["revision"], "989AA7980E4CF806F80C7FEF2B1ADB7BC71AA306"
    )
    commit = "989aa7980e4cf806f80c7fef2b1adb7bc71aa306"
    assert af.HF_MODEL_FIELD["revision"](commit, QWEN).value == commit


def test_version_must_be_a_real_calendar_date_or_dev() -> None:
    assert error_of(af.HF_MODEL_FIELD["version"], "2026.02.30") == (
        "The 'version' field in target experiments/x:qwen must be a calendar version "
        "YYYY.MM.DD or YYYY.MM.DD.N (a real date), or `dev` or `<label>-dev`; 2026-02-30 is not "
        "a date, but was '2026.02.30'."
    )
    assert error_of(af.HF_MODEL_FIELD["version"], "v1") == (
        "The 'version' field in target experiments/x:qwen must be a calendar version "
        "YYYY.MM.DD or YYYY.MM.DD.N (a real date), or `dev` or `<label>-dev`, but was 'v1'."
    )
    for good in ("2026.11.29", "2024.02.29", "2026.11.29.2", "dev", "sft-dev", "exp.3-dev"):
        assert af.HF_MODEL_FIELD["version"](good, QWEN).value == good
    for bad in ("2026.11.29.0", "2025.02.29", "Dev", "-dev", "dev-1"):
        error_of(af.HF_MODEL_FIELD["version"], bad)


def test_counts_must_be_positive_integers() -> None:
    assert error_of(af.HF_DATASET_FIELD["rows"], -5) == (
        "The 'rows' field in target experiments/x:qwen must be a positive integer, but was -5."
    )
    # `True` is an int to Python, but never what a count means.
    assert "positive integer, but was True" in error_of(af.HF_DATASET_FIELD["rows"], True)


def test_sha256_must_be_64_hex() -> None:
    assert error_of(af.ADOPTED_FIELD["sha256"], "sha256:abc") == (
        "The 'sha256' field in target experiments/x:qwen must be a 64-character hex sha256 "
        "digest of the content, but was 'sha256:abc'."
    )


def test_a_choice_lists_the_choices() -> None:
    assert error_of(af.ADOPTED_FIELD["kind"], "checkpoint") == (
        "The 'kind' field in target experiments/x:qwen must be one of 'model', 'tokenizer', "
        "'dataset', 'report', but was 'checkpoint'."
    )


# The worked example's policy, as schema.json carries it.
POLICY = dict(schema.example_value("role_plan.policy"))


def test_role_plan_dict_reports_each_problem_with_the_key_as_written() -> None:
    policy_field = pf.ROLE_PLAN_FIELD["policy"]
    assert error_of(policy_field, {**POLICY, "tensor_parallel_size": "4"}, PLAN) == (
        "The 'policy' field in target experiments/x:plan must set 'tensor_parallel_size' to an "
        "integer, but was '4'."
    )
    misspelt = {key: value for key, value in POLICY.items() if key != "sequence_parallel_size"}
    misspelt["tensor_paralel_size"] = misspelt.pop("tensor_parallel_size")
    assert error_of(policy_field, misspelt, PLAN) == (
        "The 'policy' field in target experiments/x:plan has 3 problems:\n"
        "  - has an unknown key 'tensor_paralel_size' (did you mean 'tensor_parallel_size'?); "
        f"the keys are: {', '.join(schema.section_keys('role_plan.policy'))}\n"
        "  - is missing the key 'tensor_parallel_size' (Megatron TP; 1 for FSDP); every key "
        "must be set: there are no silent defaults\n"
        "  - is missing the key 'sequence_parallel_size' (FSDP (Ulysses) sequence parallel size; "
        "1 for Megatron); every key must be set: there are no silent defaults"
    )


def test_nested_dict_keys_are_named_by_path() -> None:
    algorithm = {
        "advantage_estimator": "ppo",
        "kl": {
            "use_kl_loss": True,
            "use_kl_in_reward": False,
            "kl_loss_coef": 0.001,
            "kl_estimator_type": "k9",
        },
        "learning_rate": 1e-6,
        "epochs": 1,
        "max_training_steps": None,
        "temperature": 1.0,
        "clip_ratio": 0.2,
        "fully_async": False,
        "environment": "gsm8k",
    }
    assert error_of(rf.RUN_KEY_FIELD["algorithm"], algorithm, PLAN) == (
        "The 'algorithm' field in target experiments/x:plan has 2 problems:\n"
        "  - must set 'advantage_estimator' to one of 'grpo', 'gae', 'rloo', 'reinforce++', "
        "but was 'ppo'\n"
        "  - must set 'kl.kl_estimator_type' to one of 'k1', 'k2', 'k3', 'abs', but was 'k9'"
    )


def test_reference_and_critic_must_be_written_even_as_none() -> None:
    assert pf.ROLE_PLAN_FIELD["critic"](None, PLAN).value is None
    assert error_of(pf.ROLE_PLAN_FIELD["critic"], NO_VALUE, PLAN) == (
        "The 'critic' field in target experiments/x:plan must be written, as a dict or as None: "
        "a role plan has no silent defaults (`critic=None` says there is none)."
    )
    with pytest.raises(RequiredFieldMissingException):
        pf.ROLE_PLAN_FIELD["batch"](None, PLAN)


def test_a_dict_field_value_is_frozen_with_sorted_keys() -> None:
    value = rf.RUN_KEY_FIELD["lengths"](
        {
            "max_turns": 1,
            "max_prompt_length": 512,
            "max_generate_length": 1024,
            "max_input_length": 512,
        },
        PLAN,
    ).value
    assert value is not None
    assert list(value) == [
        "max_generate_length",
        "max_input_length",
        "max_prompt_length",
        "max_turns",
    ]
    hash(value)


def test_built_artifact_config_must_be_json() -> None:
    message = error_of(af.BUILT_FIELD["config"], {"seed": 1, "shape": {1, 2}})
    assert message == (
        "The 'config' field in target experiments/x:qwen must be a dict of JSON values "
        "(strings, numbers, booleans, None, lists and dicts with string keys), but shape was "
        "{1, 2} (a set)."
    )


@pytest.fixture
def rule_runner() -> RuleRunner:
    return RuleRunner(
        rules=register.rules(), target_types=register.target_types(), isolated_local_store=True
    )


def _target_error(rule_runner: RuleRunner, build: str, name: str) -> str:
    rule_runner.write_files({"experiments/x/BUILD": build})
    with pytest.raises(ExecutionError) as error:
        rule_runner.get_target(Address("experiments/x", target_name=name))
    (wrapped,) = error.value.wrapped_exceptions
    return str(wrapped)


def test_bad_field_fails_when_the_build_file_is_parsed(rule_runner: RuleRunner) -> None:
    build = COLOCATED_BUILD.replace("989aa7980e4cf806f80c7fef2b1adb7bc71aa306", "main")
    message = _target_error(rule_runner, build, "qwen2.5-1.5b-instruct")
    assert message.endswith(
        "The 'revision' field in target experiments/x:qwen2.5-1.5b-instruct must be a "
        "40-character hex commit sha, but was 'main'."
    )


def test_a_runtime_git_pin_comes_together(rule_runner: RuleRunner) -> None:
    # That exactly one of package or git pins the runtime, and the commit's syntax, are RT001's
    # (goals/check_test.py): the library says it once, with the fix.
    build = 'rl_runtime(name="rt", profile="skyrl", entrypoint="m", git=dict(repo="o/n"))'
    assert _target_error(rule_runner, build, "rt").endswith(
        "The 'git' field in target experiments/x:rt is missing the key 'commit' (40-hex commit "
        "sha); every key must be set: there are no silent defaults."
    )


def test_model_facts_come_together(rule_runner: RuleRunner) -> None:
    build = (
        'adopted_artifact(name="ckpt", uri="gs://b/c", sha256="' + "0" * 64 + '", kind="model",'
        ' facts=dict(num_attention_heads=32, num_key_value_heads=True, num_hidden_layers=32,'
        ' hidden_size=4096, intermediate_size=11008, vocab_size=32000, head_dim=None,'
        ' torch_dtype="bfloat16", num_parameters=6738415616), version="2026.10.14")'
    )
    assert _target_error(rule_runner, build, "ckpt") == (
        "experiments/x/BUILD:1: The 'facts' field in target experiments/x:ckpt has 3 problems:\n"
        "  - must set 'num_key_value_heads' to an integer, but was True\n"
        "  - is missing the key 'max_position_embeddings' (Context window in tokens: prompt + "
        "generation must fit in it); every key must be set: there are no silent defaults\n"
        "  - is missing the key 'num_experts' (Routed experts for an MoE model; null for a dense "
        "model); every key must be set: there are no silent defaults"
    )


def test_wandb_identity_comes_together(rule_runner: RuleRunner) -> None:
    build = COLOCATED_BUILD.replace(
        'store_prefix="gs://rlaunch-example/store",',
        'store_prefix="gs://rlaunch-example/store", wandb=dict(entity="team"),',
    )
    line = build[: build.index('name="cluster"')].count("\n")  # the line of `rl_execution(`
    assert _target_error(rule_runner, build, "cluster") == (
        f"experiments/x/BUILD:{line}: The 'wandb' field in target experiments/x:cluster is "
        "missing the key 'project' (The W&B project); every key must be set: there are no "
        "silent defaults."
    )


def test_every_target_type_has_documented_fields() -> None:
    for target_type in tt.ALL_TARGET_TYPES:
        assert "    " in str(target_type.help), f"{target_type.alias} help has no BUILD example"
        for field in target_type.core_fields:
            assert field.help, f"{target_type.alias}.{field.alias} has no help"
            has_default = "default" in field.__dict__ or any(
                "default" in base.__dict__ for base in field.__mro__[1:-1]
            )
            assert field.required or has_default, f"{field.alias}: neither required nor default"


# Fields of Pants' own whose help is Pants' text, not ours.
PANTS_OWN_FIELDS = ("description", "tags")


@pytest.mark.parametrize("target_type", register.target_types(), ids=lambda t: t.alias)
def test_every_field_help_shows_how_to_write_it_in_a_build_file(target_type: type) -> None:
    """`./pants help <target>` alone is enough to write a BUILD file: each field's help has an
    indented example line that writes the field (`alias=...`)."""
    missing = []
    for field in target_type.core_fields:
        if field.alias in PANTS_OWN_FIELDS:
            continue
        help_text = field.help if isinstance(field.help, str) else field.help()
        example = [
            line
            for line in help_text.splitlines()
            if line.startswith("    ") and line.strip().startswith(f"{field.alias}=")
        ]
        if not example:
            missing.append(field.alias)
    assert missing == []


def _examples(help_text: str, call: str) -> list[str]:
    """Every indented `<call>(...)` in a help text, as one expression (to its closing paren)."""
    found = []
    lines = help_text.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("    ") or not line.strip().startswith(f"{call}("):
            continue
        text = line.strip()
        rest = iter(lines[index + 1 :])
        while text.count("(") > text.count(")"):
            text += "\n" + next(rest)
        found.append(text[: text.rindex(")") + 1] if "#" in text else text)
    return found


def _dict_fields(target_type: type) -> dict:
    return {
        field.alias: field
        for field in target_type.core_fields
        if isinstance(field, type) and issubclass(field, SchemaDictField)
    }


@pytest.mark.parametrize("target_type", register.target_types(), ids=lambda t: t.alias)
def test_the_help_examples_are_valid_build_values(target_type: type) -> None:
    """The BUILD examples in `./pants help` name the schema's keys (a renamed or added key in
    the library makes them fail here): the target's example and each dict field's own."""
    dict_fields = _dict_fields(target_type)
    written: list[tuple[str, object]] = []

    def capture(**kwargs: object) -> None:
        written.extend((alias, kwargs[alias]) for alias in dict_fields if alias in kwargs)

    for example in _examples(str(target_type.help), target_type.alias):
        eval(example, {target_type.alias: capture, "dict": dict})  # noqa: S307
    for alias, field in dict_fields.items():
        for example in _examples(str(field.help), f"{alias}=dict"):
            if "=..." not in example:  # generated from the schema: `key=...` placeholders
                written.append((alias, eval(example.split("=", 1)[1], {"dict": dict})))  # noqa: S307
    for alias, value in written:
        dict_fields[alias](value, PLAN)  # raises InvalidFieldException if a key drifted
    if target_type.alias in ("role_plan", "rl_run", "rl_execution", "hf_model"):
        assert written, f"{target_type.alias}: no dict example found in its help"


def test_a_builder_config_is_checked_against_its_builder_at_parse(rule_runner: RuleRunner) -> None:
    # The keys and types of rlaunch's own builders' configs come from schema.json; values are
    # preflight's (ART010). A module:Class builder's config is its own.
    rule_runner.write_files({
        "m/BUILD": (
            'built_artifact(name="sft", builder="sft_model", kind="model", version="dev",'
            ' config={"d_model": 64, "n_layrs": 2, "n_heads": 4, "n_kv_heads": 2,'
            ' "max_position_embeddings": 64, "steps": "3", "seed": 0})\n'
            'built_artifact(name="own", builder="lab.builders:SFT", kind="model",'
            ' version="dev", config={"n_layrs": 2})\n'
        ),
    })
    with pytest.raises(ExecutionError) as raised:
        rule_runner.get_target(Address("m", target_name="sft"))
    assert (
        "m/BUILD:1: The 'config' field in target m:sft does not fit builder 'sft_model': "
        "config.n_layrs is not a key of it; did you mean 'n_layers'? (its keys: d_model, "
        "n_layers, n_heads, n_kv_heads, max_position_embeddings, steps, seed, batch_size, "
        "learning_rate); config.n_layers is missing; config.steps must be an integer, but was "
        "'3'."
    ) in str(raised.value)
    assert rule_runner.get_target(Address("m", target_name="own")).address.target_name == "own"
