"""The schema the Pants plugin reads is the library's: written from the models, never stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlaunch.buildschema import SCHEMA_PATH, SchemaGap, build_schema, model_keys, schema_text
from rlaunch.spec.base import SpecModel
from rlaunch.spec.roleplan import PolicyRole

REPO_ROOT = Path(__file__).resolve().parents[2]
POLICY_KEYS = (
    "num_nodes", "num_gpus_per_node", "tensor_parallel_size", "pipeline_parallel_size",
    "context_parallel_size", "expert_parallel_size", "expert_tensor_parallel_size",
    "sequence_parallel_size",
)


def test_the_checked_in_schema_is_what_the_models_say() -> None:
    checked_in = (REPO_ROOT / SCHEMA_PATH).read_text()
    assert checked_in == schema_text(), (
        f"{SCHEMA_PATH} is stale: a RunSpec model changed. Run scripts/gen-docs and commit it."
    )


def test_the_schema_names_the_runspec_keys_with_their_types_and_meaning() -> None:
    schema = build_schema()
    policy = schema["run_spec"]["role_plan"]["keys"]["policy"]["keys"]
    # In the model's order; a key added to the policy role adds itself here.
    assert list(policy) == list(PolicyRole.model_fields)
    assert [key for key in policy if key in POLICY_KEYS] == list(POLICY_KEYS)
    assert policy["tensor_parallel_size"] == {
        "type": "int", "nullable": False, "doc": "Megatron TP; 1 for FSDP.",
    }
    strategy = schema["run_spec"]["role_plan"]["keys"]["strategy"]
    assert strategy["choices"] == ["fsdp", "megatron"]
    critic = schema["run_spec"]["role_plan"]["keys"]["critic"]
    assert (critic["type"], critic["nullable"]) == ("dict", True)
    assert schema["artifact_slots"] == [
        "model", "tokenizer", "reference_model", "critic_model", "train_data", "eval_data",
        "environment_data",
    ]
    assert [rule["code"] for rule in schema["world_rules"]] == [
        "EXEC004", "EXEC009", "PIPE003", "RES001", "RES002", "RES003", "RES004", "VER002",
        "VER003", "VER004", "VER005", "VER006",
    ]
    assert schema["run_export_slots"] == ["model", "reference_model", "critic_model"]
    assert schema["patterns"]["commit"] == "[0-9a-f]{40}"


def test_a_field_without_a_docstring_has_no_help_and_is_refused() -> None:
    class Section(SpecModel):
        documented: int
        """Has help."""
        undocumented: int

    with pytest.raises(SchemaGap, match="^plan.undocumented: write a docstring under the field"):
        model_keys(Section, "plan")


def test_a_type_the_plugin_cannot_check_is_refused() -> None:
    class Section(SpecModel):
        ratio: tuple[int, int]
        """A pair."""

    with pytest.raises(SchemaGap, match="^ratio: the plugin has no BUILD type for"):
        model_keys(Section)


def test_the_schema_carries_bounds_defaults_examples_variants_and_targets() -> None:
    schema = build_schema()
    execution = schema["run_spec"]["execution"]["keys"]
    # Bounds a coded rule checks (EXEC006) and a default the plugin held before the model did.
    assert execution["max_retries"] == {
        "type": "int", "nullable": False,
        "doc": "How many times a failed job is resubmitted (EXEC006).",
        "bounds": {"ge": 0}, "default": 0, "example": 1,
    }
    assert execution["timeout_minutes"]["bounds"] == {"ge": 1}
    assert "default" not in execution["timeout_minutes"]
    assert (execution["priority"]["default"], execution["credentials"]["default"]) == ("normal", [])
    assert schema["run_spec"]["seed"]["bounds"] == {"ge": 0, "lt": 2**32}
    assert sorted(schema["artifacts"]) == ["adopted", "built", "hf_dataset", "hf_model"]
    assert schema["artifacts"]["built"]["keys"]["deps"]["values"] == "artifact"
    assert schema["artifacts"]["adopted"]["keys"]["kind"]["choices"] == [
        "model", "tokenizer", "dataset", "report"]
    assert schema["artifacts"]["hf_dataset"]["keys"]["rows"]["bounds"] == {"ge": 1}
    # Syntax a preflight rule checks, named so that the plugin checks the BUILD value too.
    hf_model = schema["artifacts"]["hf_model"]["keys"]
    assert (hf_model["revision"]["syntax"], hf_model["version"]["syntax"]) == ("commit", "version")
    assert schema["artifacts"]["adopted"]["keys"]["sha256"]["syntax"] == "sha256"
    assert schema["artifacts"]["built"]["keys"]["config"]["default"] == {}
    assert schema["targets"]["role_plan"] == {"section": "role_plan"}
    assert schema["targets"]["hf_model"] == {"artifact": "hf_model"}
    assert schema["example"]["role_plan"]["rollout"]["num_engines"] == 8
