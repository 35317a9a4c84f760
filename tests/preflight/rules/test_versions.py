"""Version rules (rlaunch/preflight/rules/versions.py), including the world-scope ledger rules."""

from __future__ import annotations

import pytest

from preflight.helpers import example, findings, messages
from rlaunch.preflight import World
from rlaunch.spec import parse_spec
from rlaunch.spec.syntax import is_calendar, is_dev, next_calendar

OLD = "sha256:" + "0" * 64
OTHER_RUNTIME = "sha256:" + "1" * 64


def world(**given: object) -> World:
    return World(**{"store_prefix": "/srv/rlaunch-store", "git_dirty": False, **given})


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("2026.11.29", True), ("2026.11.29.3", True), ("2024.02.29", True), ("dev", True),
        ("my-label-dev", True), ("sweep.3-dev", True),
        ("2026.02.30", False), ("2025.02.29", False), ("2026.13.01", False),
        ("2026.11.29.0", False), ("2026.1.2", False), ("-dev", False), ("Dev", False),
        ("v1", False), ("latest", False), ("", False),
    ],
)
def test_version_syntax_table(version: str, ok: bool) -> None:
    assert (is_calendar(version) or is_dev(version)) is ok


def test_ver001_every_version_is_checked_with_the_reason() -> None:
    data = example(edits={"version": "2026.02.30", "train_data.version": "v1"})
    assert messages(data, "VER001") == [
        "version '2026.02.30' is not a real date",
        "train_data.version 'v1' is neither a calendar version (YYYY.MM.DD or YYYY.MM.DD.N, a"
        " real date) nor dev or <label>-dev",
    ]
    assert messages(example(edits={"version": "smoke-dev"}), "VER001") == []


def test_ver002_calendar_version_is_immutable() -> None:
    data = example()
    current = parse_spec(data).fingerprint
    record = {"fingerprint": OLD, "runtime_fingerprint": OTHER_RUNTIME, "status": "succeeded"}
    [finding] = findings(data, "VER002", world=world(ledger=lambda name, version: record))
    assert finding.message == (
        f"colocated-1x8@2026.11.29 was launched before (status succeeded) with fingerprint {OLD};"
        f" this spec's fingerprint is {current}, and a calendar version is immutable"
    )
    assert finding.fix == "Bump the version to 2026.11.29.1 (or restore the launched spec)."
    same = {"fingerprint": current, "runtime_fingerprint": OTHER_RUNTIME, "status": "failed"}
    assert messages(data, "VER002", world=world(ledger=lambda name, version: same)) == []
    dev = example(edits={"version": "dev"})
    assert messages(dev, "VER002", world=world(ledger=lambda name, version: record)) == []
    # Spec scope never reads the ledger.
    assert messages(data, "VER002") == []


def test_ver002_a_fingerprint_edited_in_the_ledger_is_called_an_edit() -> None:
    data = example()
    current = parse_spec(data).fingerprint
    attempts = [{"attempt_id": "a1", "fingerprint": OLD}, {"attempt_id": "a2", "fingerprint": OLD}]
    # The record's fingerprint edited to the new spec's, to get past immutability.
    forged = {"fingerprint": current, "status": "SUCCEEDED", "attempts": attempts}
    [finding] = findings(data, "VER002", world=world(ledger=lambda name, version: forged))
    assert finding.message == (
        f"the ledger record of colocated-1x8@2026.11.29 was edited by hand or damaged: it"
        f" records fingerprint {current}, but its last attempt a2 was launched with {OLD}"
        f" (this spec's fingerprint is {current})"
    )
    assert finding.fix == (
        f"Restore the record's fingerprint to {OLD}; if this spec's content changed since that"
        f" launch, also bump the version to 2026.11.29.1."
    )
    # The fingerprint edited while the spec is the launched one.
    edited = {"fingerprint": OLD, "status": "SUCCEEDED",
              "attempts": [{"attempt_id": "a1", "fingerprint": current}]}
    [finding] = findings(data, "VER002", world=world(ledger=lambda name, version: edited))
    assert finding.message.endswith(
        f"but its last attempt a1 was launched with {current} (this spec's fingerprint too)"
    )
    # Consistent: the launched spec passes, another one is told to bump the version.
    consistent = {"fingerprint": current, "status": "SUCCEEDED",
                  "attempts": [{"attempt_id": "a1", "fingerprint": current}]}
    assert messages(data, "VER002", world=world(ledger=lambda name, version: consistent)) == []
    other = {**consistent, "fingerprint": OLD,
             "attempts": [{"attempt_id": "a1", "fingerprint": OLD}]}
    [finding] = findings(data, "VER002", world=world(ledger=lambda name, version: other))
    assert finding.fix == "Bump the version to 2026.11.29.1 (or restore the launched spec)."


def test_ver002_looks_up_the_run_identity() -> None:
    asked: list[tuple[str, str]] = []

    def ledger(name: str, version: str) -> None:
        asked.append((name, version))

    messages(example(), "VER002", world=world(ledger=ledger))
    # VER002 and VER005 both read the run's own record, and nothing else.
    assert set(asked) == {("colocated-1x8", "2026.11.29")}


def test_ver003_resume_latest_against_another_runtime() -> None:
    data = example()
    runtime = parse_spec(data).runtime_fingerprint
    roots: list[str] = []

    def recorded(root: str) -> str:
        roots.append(root)
        return OTHER_RUNTIME

    [finding] = findings(data, "VER003", world=world(checkpoint_runtime=recorded))
    root = "gs://rlaunch-example/store/colocated-1x8/2026.11.29/checkpoints"
    assert roots == [root]
    assert finding.message == (
        f"resume.mode latest would load {root}, written by runtime {OTHER_RUNTIME}, but this"
        f" run's runtime skyrl-0.3.0 is {runtime}"
    )
    declared = example(edits={"resume.compatible_runtimes": [OTHER_RUNTIME]})
    assert messages(declared, "VER003", world=world(checkpoint_runtime=recorded)) == []
    fresh = example(edits={"resume.mode": "none"})
    assert messages(fresh, "VER003", world=world(checkpoint_runtime=recorded)) == []
    same = world(checkpoint_runtime=lambda root: runtime)
    assert messages(data, "VER003", world=same) == []


def test_ver003_uses_the_world_store_when_the_spec_has_none() -> None:
    roots: list[str] = []
    data = example(edits={"execution.store_prefix": None})
    messages(data, "VER003", world=world(checkpoint_runtime=lambda root: roots.append(root)))
    assert roots == ["/srv/rlaunch-store/colocated-1x8/2026.11.29/checkpoints"]


def test_ver004_clean_launcher_tree_for_calendar_versions() -> None:
    dirty = world(git_dirty=True, launcher_commit="4" * 40)
    assert messages(example(), "VER004", world=dirty) == [
        "calendar version 2026.11.29 launched from a launcher tree with uncommitted changes"
        f" or untracked files (launcher commit {'4' * 40}); the launch could not be reproduced"
    ]
    [unknown] = findings(example(), "VER004", world=world(git_dirty=None))
    assert (unknown.severity, unknown.message) == (
        "warning",
        "calendar version 2026.11.29: cannot tell whether the launcher tree is clean (not a git"
        " checkout)",
    )
    assert messages(example(edits={"version": "dev"}), "VER004", world=dirty) == []
    assert messages(example(), "VER004", world=world(git_dirty=False)) == []


def test_next_calendar() -> None:
    assert [next_calendar(v) for v in ("2026.11.29", "2026.11.29.1", "dev")] == [
        "2026.11.29.1", "2026.11.29.2", "dev",
    ]


def test_ver005_a_finished_calendar_version_is_not_launched_again() -> None:
    record = {"fingerprint": parse_spec(example()).fingerprint, "status": "FAILED", "attempts": [
        {"attempt_id": "a1", "status": "SUCCEEDED"}, {"attempt_id": "a2", "status": "FAILED"}]}
    [finding] = findings(example(), "VER005", world=world(ledger=lambda name, version: record))
    assert finding.message == (
        "colocated-1x8@2026.11.29 already finished (attempt a1 SUCCEEDED; terminal manifest "
        "gs://rlaunch-example/store/colocated-1x8/2026.11.29/terminal.json); a calendar version "
        "runs once, so a second launch would overwrite its outputs"
    )
    assert finding.fix == "Bump the version to 2026.11.29.1 to train again."
    # A failed or stopped attempt may be launched again (it resumes); dev versions always may.
    failed = {**record, "attempts": [{"attempt_id": "a2", "status": "FAILED"}]}
    assert findings(example(), "VER005", world=world(ledger=lambda n, v: failed)) == []
    dev = example(edits={"version": "dev"})
    assert findings(dev, "VER005", world=world(ledger=lambda n, v: record)) == []


def _launched_on_0_3_0() -> tuple[dict, dict]:
    """The worked example as launched on skyrl==0.3.0 (its ledger record), and the same run
    with only the pin moved to skyrl==0.4.0."""
    launched = parse_spec(example())
    record = {
        "fingerprint": launched.fingerprint, "runtime_fingerprint": launched.runtime_fingerprint,
        "runtime_pin": "skyrl==0.3.0",
        "fingerprint_beside_runtime": launched.fingerprint_beside_runtime, "status": "FAILED",
    }
    upgraded = example(edits={"runtime.package": "skyrl==0.4.0", "runtime.name": "skyrl-0.4.0"})
    return upgraded, record


def test_ver006_an_upgraded_run_at_the_same_calendar_version_is_refused_with_the_fix() -> None:
    upgraded, record = _launched_on_0_3_0()
    spec = parse_spec(upgraded)
    ledger = world(ledger=lambda name, version: record)
    [finding] = findings(upgraded, "VER006", world=ledger)
    assert finding.message == (
        f"colocated-1x8@2026.11.29 was launched on skyrl==0.3.0 (runtime"
        f" {record['runtime_fingerprint']}); this spec pins skyrl==0.4.0 (runtime"
        f" {spec.runtime_fingerprint}): a runtime change is a fresh version, and the spec states"
        " no checkpoint compatibility with the runtime it was launched on")
    assert finding.fix == (
        "Bump the version to 2026.11.29.1 (a fresh checkpoint root; `rlaunch upgrade-check`"
        " lists what skyrl==0.4.0 changes), or, if the checkpoints skyrl==0.3.0 wrote load in"
        " skyrl==0.4.0, state it: resume.compatible_runtimes:"
        f" [\"{record['runtime_fingerprint']}\"].")
    # Only the runtime changed: VER006's to judge, not VER002's.
    assert messages(upgraded, "VER002", world=ledger) == []
    fresh = dict(upgraded, version="2026.11.29.1")
    assert messages(fresh, "VER006", world=world(ledger=lambda name, version: None)) == []


def test_ver006_stated_compatibility_keeps_the_version_and_ver003_still_guards_resume() -> None:
    upgraded, record = _launched_on_0_3_0()
    upgraded["resume"]["compatible_runtimes"] = [record["runtime_fingerprint"]]
    ledger = world(ledger=lambda name, version: record,
                   checkpoint_runtime=lambda root: record["runtime_fingerprint"])
    assert messages(upgraded, "VER006", world=ledger) == []
    assert messages(upgraded, "VER002", world=ledger) == []
    assert messages(upgraded, "VER003", world=ledger) == []
    # A root written by a release the spec does not name is still refused on resume.
    elsewhere = world(ledger=lambda name, version: record,
                      checkpoint_runtime=lambda root: OTHER_RUNTIME)
    assert messages(upgraded, "VER003", world=elsewhere) == [
        "resume.mode latest would load gs://rlaunch-example/store/colocated-1x8/2026.11.29/"
        f"checkpoints, written by runtime {OTHER_RUNTIME}, but this run's runtime skyrl-0.4.0 is"
        f" {parse_spec(upgraded).runtime_fingerprint}"]
    # Anything else changed too: VER002 refuses, compatibility or not.
    upgraded["seed"] = 7
    assert len(messages(upgraded, "VER002", world=ledger)) == 1
