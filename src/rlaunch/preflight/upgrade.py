"""What moving a run to another runtime release changes, when nothing but the pin changes:
`rlaunch upgrade-check SPEC --to skyrl==0.4.0`.

An upgrade is a runtime change (DESIGN.md, "Releases are data"): the same spec runs differently
where a release moved a default the run does not set, refuses a setting it no longer has, or
needs one it did not. This compares the two releases' catalogs (src/rlaunch/spec/
skyrl_fields_*.py, generated from each wheel) at every SkyRL name the run does not decide
itself, and runs spec-scope preflight on both pins to list the rules that start or stop firing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlaunch.preflight.engine.finding import Finding
from rlaunch.preflight.engine.runner import run_preflight
from rlaunch.spec.catalog import settings_catalog
from rlaunch.spec.io import SpecError, parse_spec
from rlaunch.spec.run import RunSpec
from rlaunch.spec.settings import SettingsCatalog
from rlaunch.spec.skyrl_mapping import ROWS
from rlaunch.spec.syntax import is_calendar, next_calendar

POLICY_LOSS = "trainer.algorithm.policy_loss_type"
USED_ONLY_WHEN: Mapping[str, tuple[str, str]] = {
    # skyrl/train/config/config.py `AlgorithmConfig` (0.3.0 and 0.4.0): each section is "Only
    # used when policy_loss_type=..." (and ppo_utils reads it in that loss only), so a default
    # moved inside it changes nothing for a run on another loss.
    "trainer.algorithm.cispo.": (POLICY_LOSS, "cispo"),
    "trainer.algorithm.clip_cov.": (POLICY_LOSS, "clip_cov"),
    "trainer.algorithm.kl_cov.": (POLICY_LOSS, "kl_cov"),
    "trainer.algorithm.dppo.": (POLICY_LOSS, "dppo"),
    "trainer.algorithm.sapo.": (POLICY_LOSS, "sapo"),
}
RENDERED = frozenset(row.skyrl for row in ROWS if row.value is not None)
"""SkyRL names the launch YAML always writes from the plan: no release default reaches them."""


@dataclass(frozen=True)
class SettingChange:
    name: str
    before: str
    """The effective value under the old pin, as JSON-ish text (or `(none)`)."""
    after: str
    why: str


@dataclass(frozen=True)
class UpgradeReport:
    identity: str
    version: str
    before: str
    """The old pin (`skyrl==0.3.0`)."""
    after: str
    changes: list[SettingChange] = field(default_factory=list)
    starts: list[Finding] = field(default_factory=list)
    stops: list[Finding] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    """Why the upgraded spec is not a valid RunSpec (a setting the new release lacks, ...)."""
    new_settings: int = 0
    runtime_fingerprint: str = ""
    """The old runtime's fingerprint: what `resume.compatible_runtimes` would list."""

    @property
    def changes_anything(self) -> bool:
        return bool(self.changes or self.starts or self.stops or self.refused)


def _shown(value: Any) -> str:
    return "null" if value is None else repr(value)


def _upgraded_data(spec: RunSpec, pin: str) -> dict[str, Any]:
    """The spec as data with only the runtime pin changed (its target name follows the pin)."""
    data = spec.model_dump(mode="json")
    runtime = data["runtime"]
    old_version = (runtime["package"] or "").partition("==")[2]
    new_version = pin.partition("==")[2]
    if old_version and old_version in runtime["name"]:
        runtime["name"] = runtime["name"].replace(old_version, new_version)
    runtime["package"], runtime["git"] = pin, None
    return data


def _in_use(spec: RunSpec, name: str, value_of: Any) -> bool:
    for prefix, (switch, wanted) in USED_ONLY_WHEN.items():
        if name.startswith(prefix):
            return value_of(switch) == wanted
    return True


def setting_changes(spec: RunSpec, before: SettingsCatalog,
                    after: SettingsCatalog) -> tuple[list[SettingChange], int]:
    """Every SkyRL name whose effective value differs under the two catalogs, and how many
    names only the new release has at a default (not a change: nothing read them before)."""
    settings = spec.settings
    changes: list[SettingChange] = []
    new = 0

    def old_value(name: str) -> Any:
        return settings[name] if name in settings else before.fields[name].default

    def new_value(name: str) -> Any:
        if name in settings:
            return settings[name]
        return after.fields[name].default if name in after.fields else None

    for name in before.fields:
        if name in RENDERED:
            continue
        if name not in after.fields:
            why = ("the run sets it and " if name in settings else "") + (
                f"{after.label} has no such field")
            changes.append(SettingChange(name, _shown(old_value(name)), "(none)", why))
            continue
        if name in settings or before.fields[name].required or after.fields[name].required:
            continue
        old, new_default = before.fields[name].default, after.fields[name].default
        if old == new_default or not _in_use(spec, name, old_value):
            continue
        changes.append(SettingChange(
            name, _shown(old), _shown(new_default),
            f"{after.label}'s default moved; the run does not set it (set it to {_shown(old)}"
            f" to keep {before.label}'s)"))
    for name, found in after.fields.items():
        if name in before.fields or name in RENDERED:
            continue
        section = name.rsplit(".", 1)[0] + "."
        if found.required and any(key.startswith(section) for key in settings):
            changes.append(SettingChange(
                name, "(none)", "(required)",
                f"new in {after.label} and required once its section is set (the run sets "
                f"{section[:-1]} fields)"))
        elif not found.required:
            new += 1
    return changes, new


def upgrade_check(spec: RunSpec, pin: str) -> UpgradeReport:
    """What changes for `spec` when only its runtime pin becomes `pin`. ValueError (with the
    fix) when either pin has no settings catalog."""
    runtime = spec.runtime
    before = settings_catalog(runtime.profile, package=runtime.package, commit=runtime.commit)
    after = settings_catalog(runtime.profile, package=pin, commit=None)
    if isinstance(before, str):
        raise ValueError(before)
    if isinstance(after, str):
        raise ValueError(after)
    changes, new_settings = setting_changes(spec, before, after)
    report = UpgradeReport(
        identity=spec.identity, version=spec.version, before=runtime.pin_label, after=pin,
        changes=changes, new_settings=new_settings, runtime_fingerprint=spec.runtime_fingerprint,
    )
    try:
        upgraded = parse_spec(_upgraded_data(spec, pin), f"{spec.identity} on {pin}")
    except SpecError as err:
        report.refused.extend(err.problems)
        return report
    found_before = run_preflight(spec)
    found_after = run_preflight(upgraded)
    keys_before = {(f.code, f.paths) for f in found_before}
    keys_after = {(f.code, f.paths) for f in found_after}
    report.starts.extend(f for f in found_after if (f.code, f.paths) not in keys_before)
    report.stops.extend(f for f in found_before if (f.code, f.paths) not in keys_after)
    return report


def format_upgrade(report: UpgradeReport) -> str:
    lines = [f"{report.identity}: {report.before} -> {report.after}"]
    if report.changes:
        lines.append(f"settings whose effective value changes ({len(report.changes)}):")
        width = max(len(change.name) for change in report.changes)
        lines += [f"  {change.name:<{width}}  {change.before} -> {change.after}: {change.why}"
                  for change in report.changes]
    else:
        lines.append("settings whose effective value changes: none")
    if report.refused:
        lines.append(f"the upgraded spec is refused ({len(report.refused)}):")
        lines += [f"  {problem}" for problem in report.refused]
    else:
        for title, found in (("start", report.starts), ("stop", report.stops)):
            if not found:
                lines.append(f"rules that {title} firing: none")
                continue
            lines.append(f"rules that {title} firing ({len(found)}):")
            lines += [f"  {f.severity} {f.code} {', '.join(f.paths)}: {f.message}"
                      for f in found]
    if report.new_settings:
        lines.append(f"new settings at their defaults: {report.new_settings} (`rlaunch settings"
                     f" --runtime {report.after}` lists them)")
    if is_calendar(report.version):
        lines.append(
            f"version: {report.version} is a calendar version; if it was launched on"
            f" {report.before}, launching it on {report.after} is refused (VER006): use a fresh"
            f" version ({next_calendar(report.version)}), or, if its checkpoints load in"
            f" {report.after}, state resume.compatible_runtimes:"
            f" [\"{report.runtime_fingerprint}\"]")
    return "\n".join(lines) + "\n"
