"""Another run's export as a model: identity `run@version`, fingerprint from the run's."""

from __future__ import annotations

import pytest

from rlaunch.spec import SpecError, fingerprint, identity, parse_spec
from rlaunch.spec.examples import worked_example


def test_the_export_is_named_and_fingerprinted_after_its_run() -> None:
    spec = parse_spec(worked_example("grpo-stage2"))
    upstream = parse_spec(worked_example("colocated-1x8"))
    assert identity(spec.model) == "colocated-1x8@2026.11.29"
    assert spec.model.kind == "model"
    assert spec.model.facts == upstream.model.facts
    assert [path for path, _ in spec.run_exports()] == ["model"]
    other = worked_example("grpo-stage2")
    other["model"]["run"]["algorithm"]["learning_rate"] = 1e-5
    changed = parse_spec(other)
    assert fingerprint(changed.model) != fingerprint(spec.model)
    assert changed.fingerprint != spec.fingerprint


def test_where_the_upstream_runs_changes_no_fingerprint() -> None:
    data = worked_example("grpo-stage2")
    before = parse_spec(data)
    data["model"]["run"]["execution"]["priority"] = "high"
    data["model"]["run"]["execution"]["store_prefix"] = "s3://elsewhere"
    after = parse_spec(data)
    assert fingerprint(after.model) == fingerprint(before.model)
    assert after.fingerprint == before.fingerprint


def test_an_export_named_after_another_run_is_refused() -> None:
    data = worked_example("grpo-stage2")
    data["model"]["name"] = "other"
    with pytest.raises(SpecError) as error:
        parse_spec(data, "stage2.json")
    assert "a run export is named after its run: other@2026.11.29 names the export of " \
        "colocated-1x8@2026.11.29; write name 'colocated-1x8' and version '2026.11.29'" \
        in error.value.render()
