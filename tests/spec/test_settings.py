"""A run's extra SkyRL settings: names from the release's catalog, typed values, the plan's own
keys refused, and the accessor the memory rules read."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlaunch.spec import SpecError, parse_spec
from rlaunch.spec import skyrl_fields_0_3_0 as generated
from rlaunch.spec.catalog import SMOKE_SETTINGS, settings_catalog
from rlaunch.spec.examples import worked_example
from rlaunch.spec.settings import PLAN_OWNED

REFERENCE = Path(__file__).parents[1] / "render" / "skyrl-0.3.0-config-fields.txt"


def _with(settings: dict, example: str = "colocated-1x8", **changes) -> dict:
    return {**worked_example(example), "settings": settings, **changes}


def _problems(data: dict, sources: dict | None = None) -> list[str]:
    if sources is not None:
        data = {**data, "build_sources": sources}
    with pytest.raises(SpecError) as caught:
        parse_spec(data, "/tmp/x.json")
    return caught.value.render().splitlines()


def test_the_generated_catalog_has_exactly_the_reference_field_names() -> None:
    names = {line.split(": ", 1)[0]: line.split(": ", 1)[1]
             for line in REFERENCE.read_text().splitlines()}
    leaves = {name for name, rest in names.items() if not rest.startswith("[")}
    assert set(generated.FIELDS) == leaves
    assert set(generated.SECTIONS) == set(names) - leaves
    assert generated.FIELDS["generator.inference_engine.gpu_memory_utilization"] == {
        "type": "float", "nullable": False, "default": 0.8}
    assert generated.FIELDS["trainer.policy.fsdp_config.reshard_after_forward"]["type"] == (
        "bool|int")


def test_every_plan_owned_name_is_a_skyrl_field() -> None:
    assert sorted(set(PLAN_OWNED) - set(generated.FIELDS)) == []


def test_realistic_settings_are_accepted_and_read_through_the_accessor() -> None:
    spec = parse_spec(_with({
        "generator.inference_engine.gpu_memory_utilization": 0.85,
        "trainer.policy.optimizer_config.weight_decay": 0,
        "trainer.policy.optimizer_config.adam_betas": [0.9, 0.95],
        "trainer.policy.model.lora.rank": 32,
        "trainer.eval_interval": 10,
        "generator.sampling_params.stop": None,
        "trainer.policy.fsdp_config.reshard_after_forward": 2,
    }))
    assert spec.skyrl_setting("generator.inference_engine.gpu_memory_utilization") == 0.85
    assert spec.skyrl_setting("trainer.policy.model.lora.rank") == 32
    # Not set: the caller's default, else SkyRL 0.3.0's own.
    assert spec.skyrl_setting("trainer.policy.fsdp_config.cpu_offload") is False
    assert spec.skyrl_setting("trainer.policy.fsdp_config.cpu_offload", True) is True
    assert spec.skyrl_setting("trainer.ref.model.lora.rank") == 0
    with pytest.raises(KeyError):
        spec.skyrl_setting("trainer.no_such_field")


def test_no_settings_keeps_the_fingerprint_settings_change_it() -> None:
    plain = parse_spec(worked_example("colocated-1x8"))
    empty = parse_spec(_with({}))
    tuned = parse_spec(_with({"trainer.eval_interval": 10}))
    assert empty.fingerprint == plain.fingerprint
    assert tuned.fingerprint != plain.fingerprint


def test_a_typo_a_wrong_type_a_plan_key_and_a_section_each_name_the_fix() -> None:
    assert _problems(_with({
        "trainer.eval_intervall": 10,
        "generator.inference_engine.gpu_memory_utilization": "0.9",
        "trainer.train_batch_size": 512,
        "trainer.policy.model.lora": {"rank": 8},
    })) == [
        "/tmp/x.json: not a valid RunSpec (4 problem(s))",
        "  - settings.trainer.eval_intervall: SkyRL 0.3.0 has no config field "
        "'trainer.eval_intervall' (did you mean 'trainer.eval_interval'?); settings use its "
        "dotted names (docs/spec-format.md, `settings`) (got 10)",
        "  - settings.generator.inference_engine.gpu_memory_utilization: SkyRL 0.3.0 types "
        "'generator.inference_engine.gpu_memory_utilization' as float: write a number "
        '(got "0.9")',
        "  - settings.trainer.train_batch_size: 'trainer.train_batch_size' is decided by the "
        "plan, not a setting: set role_plan.batch.train_batch_size instead (rlaunch renders it "
        "into the launch YAML) (got 512)",
        "  - settings.trainer.policy.model.lora: 'trainer.policy.model.lora' is a section of "
        "SkyRL 0.3.0's config (SkyRLLoraConfig), not a setting: set its fields one by one, e.g. "
        "'trainer.policy.model.lora.rank' (got {...})",
        "  The format is documented in docs/spec-format.md.",
    ]


@pytest.mark.parametrize(("value", "requirement"), [
    (True, "write an integer"),
    (4.0, "write an integer"),
    (None, "write an integer"),
])
def test_an_integer_setting_takes_only_integers(value, requirement) -> None:
    (problem,) = _problems(_with({"trainer.eval_interval": value}))[1:2]
    assert requirement in problem


def test_a_nullable_list_and_a_union_describe_every_member() -> None:
    lines = _problems(_with({"generator.sampling_params.stop": "###",
                             "trainer.policy.fsdp_config.reshard_after_forward": "yes"}))
    assert "as list[str] or None: write a list of strings or None (got \"###\")" in lines[1]
    assert "as bool|int: write a boolean or an integer (got \"yes\")" in lines[2]


def test_a_release_the_catalog_does_not_list_is_named_with_the_fix() -> None:
    data = _with({"trainer.eval_interval": 10})
    data["runtime"] = {**data["runtime"], "package": "skyrl==0.5.0"}
    lines = _problems(data)
    assert lines[1] == (
        "  - settings: skyrl==0.5.0 is not a release rlaunch's catalog lists settings for "
        "(catalogued skyrl releases: 0.3.0, 0.4.0); pin a catalogued release, or add this one "
        "to src/rlaunch/spec/catalog.py with its field list (scripts/gen-skyrl-fields) "
        "(got {...})"
    )


def _on(release: str, settings: dict) -> dict:
    data = _with(settings)
    data["runtime"] = {**data["runtime"], "package": f"skyrl=={release}"}
    return data


def test_a_setting_of_another_release_is_refused_naming_the_release_that_has_it() -> None:
    kv_offload = {"generator.inference_engine.offload_kv_for_weight_sync": True}
    lines = _problems(_on("0.3.0", kv_offload))
    assert lines[1] == (
        "  - settings.generator.inference_engine.offload_kv_for_weight_sync: SkyRL 0.3.0 has no "
        "config field 'generator.inference_engine.offload_kv_for_weight_sync'; SkyRL 0.4.0 has "
        "it: pin that release in the run's runtime (a runtime change: a fresh version, "
        "docs/launching.md), or drop the setting (got true)"
    )
    spec = parse_spec(_on("0.4.0", kv_offload))
    assert spec.skyrl_setting("generator.inference_engine.offload_kv_for_weight_sync") is True


def test_each_release_has_its_own_defaults_and_literal_choices() -> None:
    cispo_low = "trainer.algorithm.cispo.cispo_eps_clip_low"
    assert parse_spec(_on("0.3.0", {})).skyrl_setting(cispo_low) == 0.0
    assert parse_spec(_on("0.4.0", {})).skyrl_setting(cispo_low) == 1.0
    load_format = "generator.inference_engine.delta_weight_sync.checkpoint_load_format"
    lines = _problems(_on("0.4.0", {load_format: "safetensors"}))
    assert lines[1] == (
        f"  - settings.{load_format}: SkyRL 0.4.0 types '{load_format}' as str: write one of "
        '"vllm_multi_thread_safetensors", "vllm_fastsafetensors" (got "safetensors")'
    )


def test_the_smoke_runtime_takes_only_the_settings_it_reads() -> None:
    smoke = settings_catalog("smoke", package="rlaunch==0.1.0", commit=None)
    assert not isinstance(smoke, str)
    assert smoke.problem("trainer.policy.optimizer_config.max_grad_norm", 0.5) is None
    assert smoke.problem("trainer.eval_interval", 5) == (
        "the smoke runtime 0.1.0 does not read 'trainer.eval_interval'; it reads "
        + ", ".join(sorted(SMOKE_SETTINGS))
    )


def test_a_setting_from_a_shared_target_names_that_target() -> None:
    sources = {
        "": {"address": "exp/x:grpo", "build_file": "exp/x/BUILD", "line": 40,
             "fields": {"settings.trainer.eval_intervall": 'settings["trainer.eval_intervall"]'}},
        "settings.trainer.policy.model.lora.rank": {
            "address": "exp/x:lora", "build_file": "exp/x/BUILD", "line": 3,
            "fields": {"": 'settings["trainer.policy.model.lora.rank"]'}},
    }
    lines = _problems(_with({"trainer.eval_intervall": 10,
                             "trainer.policy.model.lora.rank": "8"}), sources)
    assert lines[0] == "exp/x:grpo (exp/x/BUILD:40): not a valid RunSpec (2 problem(s))"
    assert lines[2] == '      in exp/x/BUILD:40 (exp/x:grpo): settings["trainer.eval_intervall"]'
    assert lines[4] == (
        '      in exp/x/BUILD:3 (exp/x:lora): settings["trainer.policy.model.lora.rank"]')
