"""Path rules (rlaunch/preflight/rules/paths.py)."""

from __future__ import annotations

import pytest

from preflight.helpers import example, findings, messages


@pytest.mark.parametrize(
    ("name", "problem", "suggestion"),
    [
        ("../escape", "contains '/'", "escape"),
        ("a..b", "contains '..'", "a.b"),
        ("~me", "starts with '~'", "me"),
        ("My Run", "is not made of lower-case letters, digits, '.', '_' and '-' starting with a"
                   " letter or digit", "my-run"),
        ("_ledger", "is not made of lower-case letters, digits, '.', '_' and '-' starting with a"
                    " letter or digit", "ledger"),
    ],
)
def test_path001_names_are_safe_segments(name: str, problem: str, suggestion: str) -> None:
    [finding] = findings(example(edits={"name": name}), "PATH001")
    assert finding.message == f"name {name!r} is not a safe path segment: it {problem}"
    assert finding.fix == f"Rename it, e.g. name {suggestion!r}."


def test_path001_a_name_longer_than_a_path_segment() -> None:
    """A 5000-character run name passed check; the launch then failed making its checkpoint
    root (OSError: File name too long)."""
    [finding] = findings(example(edits={"name": "x" * 5000}), "PATH001")
    assert finding.message == (
        f"name {'x' * 60!r}... is not a safe path segment: it is 5000 characters long; a path"
        " segment holds at most 255"
    )
    assert finding.fix == "Shorten name to at most 255 characters."
    assert messages(example(edits={"name": "x" * 255}), "PATH001") == []


def test_path001_checks_artifact_names_too() -> None:
    assert messages(example(edits={"train_data.name": "GSM8K/train"}), "PATH001") == [
        "train_data.name 'GSM8K/train' is not a safe path segment: it contains '/'"
    ]
    assert messages(example(), "PATH001") == []


def test_path002_run_root_is_no_artifact_root() -> None:
    data = example(edits={"name": "gsm8k-train-prompts", "version": "2026.11.30"})
    assert messages(data, "PATH002") == [
        "the run gsm8k-train-prompts@2026.11.30 and train_data gsm8k-train-prompts@2026.11.30"
        " derive the same root gs://rlaunch-example/store/gsm8k-train-prompts/2026.11.30/"
    ]
    assert messages(example(edits={"name": "gsm8k-train-prompts"}), "PATH002") == []


def test_path002_a_smoke_is_not_its_own_full_run() -> None:
    def smoke_of_itself(data: dict) -> None:
        data["smoke_of"] = {
            "name": data["name"], "version": data["version"], "role_plan": data["role_plan"],
            "runtime": data["runtime"], "allocation": data["execution"]["allocation"],
            "handoff_kinds": {"model": "model"},
        }

    assert messages(example(edits=smoke_of_itself), "PATH002") == [
        "the smoke run colocated-1x8@2026.11.29 names itself as its full run (smoke_of"
        " colocated-1x8@2026.11.29); both would write"
        " gs://rlaunch-example/store/colocated-1x8/2026.11.29/"
    ]


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [
        ("~/rlaunch-store", "is relative to a home directory"),
        ("$HOME/store", "expands an environment variable"),
        ("store/local", "is a relative path"),
        ("http://host/store", "uses a scheme the store does not support (gs://, s3://, file://)"),
        ("gs://", "has no bucket or path"),
        ("file://store", "is a file:// URL without an absolute path"),
        ("/srv/../etc", "contains '..'"),
    ],
)
def test_path003_store_prefix_is_real(prefix: str, problem: str) -> None:
    data = example(edits={"execution.store_prefix": prefix})
    assert messages(data, "PATH003") == [f"execution.store_prefix {prefix!r} {problem}"]


@pytest.mark.parametrize(
    "prefix", ["gs://bucket/rlaunch", "s3://bucket", "file:///srv/store", "/srv/store", None],
)
def test_path003_accepts_urls_absolute_paths_and_the_default(prefix: str | None) -> None:
    assert messages(example(edits={"execution.store_prefix": prefix}), "PATH003") == []
