"""The SkyRL mapping table: every role-plan field is rendered or exempt with a reason, every
row names a real RunSpec field and SkyRL field, and what derives from it agrees."""

from __future__ import annotations

import typing

from pydantic import BaseModel

from rlaunch.spec import RolePlan, RunSpec
from rlaunch.spec import skyrl_fields_0_3_0 as generated
from rlaunch.spec.roleplan import PolicyRole
from rlaunch.spec.settings import PLAN_OWNED
from rlaunch.spec.skyrl_mapping import (
    NOT_RENDERED,
    ROWS,
    SKYRL_RELEASE,
    Row,
    data_slots,
    kept,
    plan,
    plan_owned,
    rows,
)


def leaves(model: type[BaseModel], prefix: str) -> list[str]:
    """Every leaf field path of a model, through nested (and nullable) models."""
    found = []
    for name, info in model.model_fields.items():
        nested = [arg for arg in (info.annotation, *typing.get_args(info.annotation))
                  if isinstance(arg, type) and issubclass(arg, BaseModel)]
        if nested:
            found.extend(leaves(nested[0], f"{prefix}.{name}"))
        else:
            found.append(f"{prefix}.{name}")
    return found


def unmapped(model: type[BaseModel], table: tuple[Row, ...], exempt: typing.Mapping[str, str]
             ) -> list[str]:
    """Role-plan fields neither rendered by a row nor exempt."""
    rendered = {row.path for row in table if row.value is not None}
    return [leaf for leaf in leaves(model, "role_plan") if leaf not in rendered | set(exempt)]


def test_every_role_plan_field_is_rendered_or_exempt_with_a_reason():
    assert unmapped(RolePlan, rows(), NOT_RENDERED) == []
    assert all(reason for reason in NOT_RENDERED.values())


def test_an_exemption_names_a_field_that_is_not_rendered():
    rendered = {row.path for row in rows() if row.value is not None}
    assert sorted(set(NOT_RENDERED) & rendered) == []
    assert sorted(set(NOT_RENDERED) - set(leaves(RolePlan, "role_plan"))) == []


def test_a_new_role_plan_field_without_a_row_is_found():
    class WiderPolicy(PolicyRole):
        expert_model_parallel_buckets: int

    class WiderPlan(RolePlan):
        policy: WiderPolicy

    assert unmapped(WiderPlan, rows(), NOT_RENDERED) == [
        "role_plan.policy.expert_model_parallel_buckets"]
    with_row = (*rows(), plan("role_plan.policy.expert_model_parallel_buckets", "trainer.x"))
    assert unmapped(WiderPlan, with_row, NOT_RENDERED) == []
    # A row that writes nothing does not count as rendering the field.
    without_value = (*rows(), kept("role_plan.policy.expert_model_parallel_buckets", "trainer.x"))
    assert unmapped(WiderPlan, without_value, NOT_RENDERED) == [
        "role_plan.policy.expert_model_parallel_buckets"]


IDENTITY_WORDS = "name and version"


def test_every_row_names_a_runspec_field_or_section():
    fields = set(leaves(RunSpec, "")) | {
        f".{name}" for name in RunSpec.model_fields} | {".role_plan.policy", ".role_plan.reference",
                                                         ".role_plan.critic", ".role_plan.rollout"}
    unknown = [row.path for row in ROWS
               if row.path != IDENTITY_WORDS and f".{row.path}" not in fields]
    assert unknown == []


def test_every_row_names_a_skyrl_0_3_0_field_once():
    names = [row.skyrl for row in rows("0.3.0")]
    assert sorted(set(names) - set(generated.FIELDS)) == []
    assert len(names) == len(set(names))


def test_what_derives_from_the_table_agrees_with_it():
    assert dict(PLAN_OWNED) == {row.skyrl: row.owner for row in ROWS}
    assert PLAN_OWNED["trainer.critic.sequence_parallel_size"] == (
        "role_plan.policy.sequence_parallel_size (the critic runs the policy's)")
    assert PLAN_OWNED["trainer.policy.megatron_config.expert_tensor_parallel_size"] == (
        "role_plan.policy.expert_tensor_parallel_size")
    assert dict(data_slots()) == {"train_data": "data.train_data", "eval_data": "data.val_data"}


def test_a_row_applies_only_to_its_releases():
    later = plan("seed", "trainer.seed", releases=("0.4.0",))
    assert later.applies_to("0.4.0") and not later.applies_to("0.3.0")
    assert all(row.applies_to(SKYRL_RELEASE) for row in ROWS)
    assert rows("0.2.0") == () and plan_owned("0.2.0") == {}


def test_every_computed_value_says_what_it_is():
    # docs/launch-yaml.md shows `how`; a value read as written needs no words.
    computed = [row.skyrl for row in ROWS if row.value is not None and not row.how
                and not row.value.__qualname__.startswith("_read.")]
    assert computed == []
