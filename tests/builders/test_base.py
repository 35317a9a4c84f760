"""Finding builders by plugin name or `module:Class`."""

from __future__ import annotations

import pytest

from builders import helpers
from rlaunch.builders import BuildError, load_builder
from rlaunch.builders.hf_snapshot import HFSnapshotBuilder
from rlaunch.plugins import BUILTIN


def test_every_registered_builtin_builder_loads() -> None:
    for name, target in BUILTIN["rlaunch.builders"].items():
        builder, loaded_from = load_builder(name)
        assert builder.name == name
        assert loaded_from == target


def test_plugin_names_resolve_through_the_registry() -> None:
    builder, target = load_builder("hf_snapshot")
    assert isinstance(builder, HFSnapshotBuilder)
    assert target == "rlaunch.builders.hf_snapshot:HFSnapshotBuilder"


def test_an_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(BuildError) as raised:
        load_builder("nope")
    assert str(raised.value) == (
        "no plugin 'nope' in group 'rlaunch.builders'; registered: adopt, char_tokenizer, "
        "countdown_data, greedy_eval, hf_snapshot, prompt_parquet, sft_model; register it as "
        "an entry point of 'rlaunch.builders'"
    )


def test_module_class_names_load_directly() -> None:
    builder, target = load_builder(helpers.builder_ref(helpers.CountingBuilder))
    assert isinstance(builder, helpers.CountingBuilder)
    assert target == helpers.builder_ref(helpers.CountingBuilder)


def test_a_class_without_build_is_refused() -> None:
    with pytest.raises(BuildError, match=r"is not a builder: it needs a `name` attribute and a "
                                         r"`build\(artifact, deps, out_dir, log\)` method"):
        load_builder(helpers.builder_ref(helpers.NotABuilder))


def test_an_unimportable_module_is_named() -> None:
    with pytest.raises(BuildError, match=r"builder 'no_such_module:X' cannot be loaded"):
        load_builder("no_such_module:X")
