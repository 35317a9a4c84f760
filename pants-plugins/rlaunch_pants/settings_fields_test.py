from __future__ import annotations

import pytest
from pants.engine.addresses import Address
from pants.engine.internals.scheduler import ExecutionError
from pants.engine.target import InvalidFieldException
from pants.testutil.rule_runner import QueryRule, RuleRunner

from rlaunch_pants import register
from rlaunch_pants.settings_fields import FIELDS, PLAN_OWNED, SkyrlSettingsField
from rlaunch_pants.specs import RunSpecDocument, RunSpecRequest
from rlaunch_pants.testutil import COLOCATED_BUILD

RUN = Address("experiments/x", target_name="run")


def error_of(value: object) -> str:
    with pytest.raises(InvalidFieldException) as error:
        SkyrlSettingsField(value, RUN)
    return str(error.value)


def test_the_catalog_comes_from_the_library_schema() -> None:
    assert FIELDS["generator.inference_engine.gpu_memory_utilization"] == {
        "type": "float", "nullable": False}
    assert PLAN_OWNED["trainer.train_batch_size"] == "role_plan.batch.train_batch_size"


def test_good_settings_are_kept_flat_and_frozen() -> None:
    value = SkyrlSettingsField({
        "trainer.policy.optimizer_config.adam_betas": [0.9, 0.95],
        "generator.inference_engine.gpu_memory_utilization": 0.85,
        "generator.sampling_params.stop": None,
    }, RUN).value
    assert list(value) == [
        "generator.inference_engine.gpu_memory_utilization",
        "generator.sampling_params.stop",
        "trainer.policy.optimizer_config.adam_betas",
    ]
    assert value["trainer.policy.optimizer_config.adam_betas"] == (0.9, 0.95)


def test_a_typo_names_the_closest_setting() -> None:
    assert error_of({"trainer.eval_intervall": 10}) == (
        "The 'settings' field in target experiments/x:run has an unknown SkyRL setting "
        "'trainer.eval_intervall' (did you mean 'trainer.eval_interval'?): settings use the "
        "dotted names of SkyRL's config fields (docs/spec-format.md, `settings`)."
    )


def test_a_wrong_type_names_the_type_and_the_value() -> None:
    assert error_of({"generator.inference_engine.gpu_memory_utilization": "0.9"}) == (
        "The 'settings' field in target experiments/x:run must set "
        "'generator.inference_engine.gpu_memory_utilization' to a number (SkyRL types it as "
        "float), but was '0.9'."
    )
    assert "to an integer (SkyRL types it as int), but was True" in error_of(
        {"trainer.policy.model.lora.rank": True})
    assert "to a list of strings or None (SkyRL types it as list[str]), but was 'x'" in (
        error_of({"generator.sampling_params.stop": "x"}))


def test_a_plan_owned_key_names_the_plan_field_to_set() -> None:
    assert error_of({"generator.inference_engine.num_engines": 4}) == (
        "The 'settings' field in target experiments/x:run sets "
        "'generator.inference_engine.num_engines', which the plan decides: set "
        "role_plan.rollout.num_engines instead (rlaunch renders it into the launch YAML)."
    )


def test_a_section_and_several_problems_are_listed_together() -> None:
    assert error_of({"trainer.policy.model.lora": 8, "trainer.seed": 1}) == (
        "The 'settings' field in target experiments/x:run has 2 problems:\n"
        "  - sets 'trainer.policy.model.lora', a section of SkyRL's config (SkyRLLoraConfig), "
        "not a setting: set its fields one by one, e.g. 'trainer.policy.model.lora.rank'\n"
        "  - sets 'trainer.seed', which the plan decides: set seed instead (rlaunch renders it "
        "into the launch YAML)"
    )
    assert error_of(["trainer.seed"]) == (
        "The 'settings' field in target experiments/x:run must be a dict of SkyRL settings "
        "(dotted name -> value), but was ['trainer.seed']."
    )


@pytest.fixture
def rule_runner() -> RuleRunner:
    return RuleRunner(
        rules=[*register.rules(), QueryRule(RunSpecDocument, [RunSpecRequest])],
        target_types=register.target_types(),
        isolated_local_store=True,
    )


SHARED = """
skyrl_settings(
    name="lora",
    settings={
        "trainer.policy.model.lora.rank": 32,
        "trainer.policy.model.lora.alpha": 64,
    },
)
"""


def test_a_run_takes_shared_settings_and_its_own_override_them(rule_runner: RuleRunner) -> None:
    build = COLOCATED_BUILD.replace(
        'role_plan=":plan",',
        'role_plan=":plan", skyrl_settings=":lora", settings={'
        '"trainer.policy.model.lora.rank": 16, "trainer.eval_interval": 10},',
    )
    assert build != COLOCATED_BUILD
    rule_runner.write_files({"experiments/x/BUILD": build + SHARED})
    spec = rule_runner.request(RunSpecDocument, [RunSpecRequest(RUN)]).data()
    assert spec["settings"] == {
        "trainer.eval_interval": 10,
        "trainer.policy.model.lora.alpha": 64,
        "trainer.policy.model.lora.rank": 16,
    }
    sources = spec["build_sources"]
    assert sources[""]["fields"]["settings.trainer.eval_interval"] == (
        'settings["trainer.eval_interval"]')
    assert sources["settings.trainer.policy.model.lora.alpha"]["address"] == "experiments/x:lora"
    assert sources["settings.trainer.policy.model.lora.alpha"]["fields"] == {
        "": 'settings["trainer.policy.model.lora.alpha"]'}
    # The overridden name is the run's.
    assert "settings.trainer.policy.model.lora.rank" not in sources


def test_skyrl_settings_must_name_a_skyrl_settings_target(rule_runner: RuleRunner) -> None:
    build = COLOCATED_BUILD.replace('role_plan=":plan",',
                                    'role_plan=":plan", skyrl_settings=":plan",')
    rule_runner.write_files({"experiments/x/BUILD": build})
    with pytest.raises(ExecutionError) as error:
        rule_runner.request(RunSpecDocument, [RunSpecRequest(RUN)])
    assert str(error.value.wrapped_exceptions[0]) == (
        "The 'skyrl_settings' field in target experiments/x:run must name a target of type "
        "skyrl_settings, but ':plan' (experiments/x:plan) is of type role_plan."
    )
