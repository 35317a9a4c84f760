"""Text and JSON presentation of findings."""

from __future__ import annotations

import json

from rlaunch.preflight import Finding, format_json, format_text, spec_report

ERROR = Finding("GEO003", "error", ("role_plan.policy.num_nodes", "role_plan.policy.tp"),
                "policy world 12 is not divisible by 8", "Make TP a divisor of 12.")
WARNING = Finding("BATCH010", "warning", ("train_data.rows",), "49 rows dropped",
                  "Accept the tail.")


def test_text_groups_one_spec_errors_first() -> None:
    assert format_text([WARNING, ERROR], "runs/a.yaml", "a@2026.11.29") == (
        "runs/a.yaml (a@2026.11.29): refused, 1 error, 1 warning\n"
        "error GEO003 role_plan.policy.num_nodes, role_plan.policy.tp: policy world 12 is not"
        " divisible by 8\n"
        "    fix: Make TP a divisor of 12.\n"
        "warning BATCH010 train_data.rows: 49 rows dropped\n"
        "    fix: Accept the tail.\n"
    )
    assert format_text([], "runs/b.yaml") == "runs/b.yaml: ok, 0 errors, 0 warnings\n"


def test_json_report() -> None:
    report = spec_report("runs/a.yaml", "a@2026.11.29", [ERROR])
    assert json.loads(format_json([report])) == {
        "specs": [{
            "source": "runs/a.yaml", "identity": "a@2026.11.29", "valid": True, "errors": 1,
            "warnings": 0,
            "findings": [{
                "code": "GEO003", "severity": "error",
                "paths": ["role_plan.policy.num_nodes", "role_plan.policy.tp"],
                "message": "policy world 12 is not divisible by 8",
                "fix": "Make TP a divisor of 12.",
            }],
        }]
    }
    invalid = spec_report("bad.yaml", None, [], ["seed: required key is missing"])
    assert (invalid["valid"], invalid["problems"]) == (False, ["seed: required key is missing"])
