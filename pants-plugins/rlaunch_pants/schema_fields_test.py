from __future__ import annotations

import pytest
from pants.engine.addresses import Address
from pants.engine.target import NO_VALUE, InvalidFieldException

from rlaunch_pants import plan_fields as pf
from rlaunch_pants import schema
from rlaunch_pants.fields import Key, SchemaDictField, key_check
from rlaunch_pants.schema_fields import build_value, key_field, spec_field_set, wrapped

CLUSTER = Address("experiments/x", target_name="cluster")


def error_of(field: type, value: object) -> str:
    with pytest.raises(InvalidFieldException) as error:
        field(value, CLUSTER)
    return str(error.value)


def test_a_key_with_bounds_is_range_checked_when_the_build_file_is_parsed() -> None:
    max_retries = pf.EXECUTION_FIELD["max_retries"]
    assert error_of(max_retries, -1) == (
        "The 'max_retries' field in target experiments/x:cluster must be an integer >= 0, but "
        "was -1."
    )
    assert error_of(pf.EXECUTION_FIELD["timeout_minutes"], 0) == (
        "The 'timeout_minutes' field in target experiments/x:cluster must be a positive "
        "integer, but was 0."
    )
    seed = key_check({"type": "int", "bounds": {"ge": 0, "lt": 2**32}})
    assert seed is not None
    refused = "an integer >= 0 and < 4294967296"
    assert (seed(2**32), seed(True), seed(0)) == (refused, refused, None)


def test_the_model_default_is_the_field_default_and_in_the_help() -> None:
    priority = pf.EXECUTION_FIELD["priority"]
    assert (priority.required, priority.default, priority(NO_VALUE, CLUSTER).value) == (
        False, "normal", "normal")
    assert pf.EXECUTION_FIELD["credentials"](NO_VALUE, CLUSTER).value == ()
    assert pf.EXECUTION_FIELD["cluster"](NO_VALUE, CLUSTER).value is None
    assert ("Scheduling priority: `low`, `normal` or `high`; for `iris`, its priority band:"
            " `production`, `interactive` or `batch` (EXEC010). Default: `\"normal\"`."
            ) in priority.help
    assert priority.help.endswith('\n\n    priority="normal"')
    assert pf.EXECUTION_FIELD["executor"].required


def test_a_dict_key_with_a_model_default_may_be_left_out_and_is_written() -> None:
    class Section(SchemaDictField):
        alias = "section"
        schema = (
            Key("count", key_check({"type": "int", "bounds": {"ge": 1}}), "A count",
                has_default=True, default=1),
            Key("name", key_check({"type": "str"}), "A name"),
        )

    assert dict(Section({"name": "x"}, CLUSTER).value or {}) == {"count": 1, "name": "x"}
    assert error_of(Section, {"name": "x", "count": 0}) == (
        "The 'section' field in target experiments/x:cluster must set 'count' to a positive "
        "integer, but was 0."
    )
    assert error_of(Section, {"count": 2}) == (
        "The 'section' field in target experiments/x:cluster is missing the key 'name' (A name);"
        " every key must be set: there are no silent defaults."
    )


def test_a_schema_key_of_a_type_with_no_build_field_is_named() -> None:
    # A built artifact's deps are addresses: artifact_fields.BuiltArtifactDepsField, by hand.
    with pytest.raises(TypeError, match="^artifacts.built.deps: no BUILD field for a schema key"):
        key_field("artifacts.built.deps")


def test_build_values_and_wrapping_keep_strings_whole() -> None:
    written = build_value({"a": [1, "b c"], "d": None, "e": True})
    assert written == 'dict(a=[1, "b c"], d=None, e=True)'
    line = "x=dict(" + ", ".join(f'k{i}="v, {i}"' for i in range(12)) + ")"
    text = wrapped(line, 40)
    assert eval(text.split("=", 1)[1], {"dict": dict}) == {  # noqa: S307
        f"k{i}": f"v, {i}" for i in range(12)}
    assert all(len(part) <= 44 for part in text.splitlines())


def test_a_spec_field_set_writes_every_key_and_names_a_key_without_a_field() -> None:
    values = {"executor": "ray", "timeout_minutes": 60,
              "allocation": dict(schema.example_value("execution.allocation"))}
    fields = {key: field(values.get(key, NO_VALUE), CLUSTER)
              for key, field in pf.EXECUTION_FIELD.items()}
    complete = spec_field_set("ExecutionFields", "execution", pf.EXECUTION_FIELD)
    attributes = complete.attributes
    written = complete(CLUSTER, **{attributes[key]: value for key, value in fields.items()})
    assert written.spec_dict({}) == {
        "executor": "ray", "address": None, "cluster": None,
        "allocation": values["allocation"], "priority": "normal", "max_retries": 0,
        "timeout_minutes": 60, "credentials": [], "wandb": None, "store_prefix": None,
    }
    # `address` is the FieldSet's own attribute: execution's address field is `address_`.
    assert attributes["address"] == "address_"
    partial = {key: field for key, field in pf.EXECUTION_FIELD.items() if key != "priority"}
    stale = spec_field_set("StaleExecutionFields", "execution", partial)
    with pytest.raises(InvalidFieldException) as error:
        stale(CLUSTER, **{stale.attributes[key]: fields[key] for key in partial}).spec_dict({})
    assert str(error.value) == (
        "experiments/x:cluster: the RunSpec key execution.priority has no field; regenerate "
        "schema.json (scripts/gen-docs) and restart pantsd."
    )
