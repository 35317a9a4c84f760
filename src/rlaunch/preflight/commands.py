"""`rlaunch rules` and `rlaunch preflight SPEC...`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import click

from rlaunch.ledger import Ledger
from rlaunch.ledger.checkpoints import list_checkpoints
from rlaunch.paths import resolve_store_prefix
from rlaunch.preflight.docs import rules_json, rules_markdown, rules_table
from rlaunch.preflight.engine.report import format_json, format_text, spec_report
from rlaunch.preflight.engine.runner import run_preflight
from rlaunch.preflight.engine.world import World, current_world
from rlaunch.preflight.upgrade import format_upgrade, upgrade_check
from rlaunch.spec.catalog import PROFILES, settings_catalog
from rlaunch.spec.io import SpecError, load_spec
from rlaunch.spec.run import RunSpec
from rlaunch.store.probe import StoreProbe, StoreUnavailable, probe_store

EXIT_CLEAN, EXIT_ERRORS, EXIT_INVALID = 0, 1, 2


def with_ledger(world: World, spec: RunSpec, probes: dict[str, StoreProbe]) -> World:
    """The world with the launch ledger of the spec's store (read only): launched records,
    checkpoint runtimes and smoke results, as the launch itself sees them. The store is probed
    once per prefix (`probes` keeps what each probe found); when it is unavailable, the lookups
    raise StoreUnavailable and EXEC009 reports the store once."""
    prefix = resolve_store_prefix(None, spec.execution.store_prefix)
    if prefix not in probes:
        probes[prefix] = probe_store(prefix)
    probe = probes[prefix]
    if not probe.reachable:
        def unavailable(*args: str) -> None:
            raise StoreUnavailable(probe)

        return replace(world, ledger=unavailable, checkpoint_runtime=unavailable,
                       smoke_record=unavailable, checkpoints=unavailable, store_prefix=prefix,
                       store_probe=probe)
    ledger = Ledger(prefix)
    return replace(
        world, ledger=ledger.launched_record, checkpoint_runtime=ledger.checkpoint_runtime,
        smoke_record=ledger.smoke_result, checkpoints=list_checkpoints,
        store_prefix=ledger.prefix, store_probe=probe,
    )


@click.command("rules")
@click.option(
    "--format", "output_format", type=click.Choice(["table", "markdown", "json"]),
    default="table", show_default=True,
    help="markdown is docs/rules.md, with a real example finding for every rule.",
)
def rules(output_format: str) -> None:
    """List every preflight rule: code, family, scope (spec or world) and what it checks."""
    if output_format == "markdown":
        click.echo(rules_markdown(), nl=False)
    elif output_format == "json":
        click.echo(rules_json(), nl=False)
    else:
        click.echo(rules_table(), nl=False)


@click.command("settings")
@click.argument("pattern", default="")
@click.option(
    "--runtime", "pin", default="skyrl==0.3.0", show_default=True,
    help="The runtime pin whose settings to list, e.g. skyrl==0.3.0 or rlaunch==0.1.0 (the smoke"
    " runtime).",
)
@click.option(
    "--release", default=None, metavar="X.Y.Z",
    help="A SkyRL release (0.3.0, 0.4.0): the same as --runtime skyrl==X.Y.Z.",
)
def settings_command(pattern: str, pin: str, release: str | None) -> None:
    """List the extra settings a runtime release takes (a run's `settings`): every config field
    whose dotted name contains PATTERN, with its type and the release's default, and the plan
    field to set instead for a name the plan decides."""
    if release is not None:
        pin = f"skyrl=={release}"
    package, _, _ = pin.partition("==")
    profile = next((p.name for p in PROFILES.values() if p.package == package), package)
    catalog = settings_catalog(profile, package=pin, commit=None)
    if isinstance(catalog, str):
        raise click.ClickException(catalog)
    lines = catalog.table(pattern)
    if not lines:
        raise click.ClickException(f"{catalog.label} has no setting whose name contains "
                                   f"{pattern!r}")
    click.echo("\n".join(lines))


@click.command("preflight")
@click.argument("specs", nargs=-1, required=True, metavar="SPEC...")
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text",
    show_default=True,
    help='json: {"specs": [{"source", "identity", "valid", "errors", "warnings", "findings",'
    ' "text"}]}.',
)
@click.option(
    "--scope", type=click.Choice(["spec", "all"]), default="spec", show_default=True,
    help="spec: rules decided by the spec alone. all: also world rules (this environment, the"
    " git state of the current directory, the store's ledger and checkpoint roots).",
)
def preflight(specs: tuple[str, ...], output_format: str, scope: str) -> None:
    """Preflight RunSpec files (YAML or JSON): report every finding of every spec.

    Exit status: 0 when no spec has an error (warnings are allowed), 1 when a spec has an
    error finding, 2 when a spec cannot be read or is not a valid RunSpec (the others are
    still reported).
    """
    world: World | None = current_world() if scope == "all" else None
    probes: dict[str, StoreProbe] = {}
    reports: list[dict[str, Any]] = []
    texts: list[str] = []
    invalid = refused = 0
    for source in specs:
        try:
            spec = load_spec(source)
        except SpecError as err:
            invalid += 1
            texts.append(err.render() + "\n")
            reports.append(spec_report(source, None, [], err.problems, texts[-1]))
            continue
        if world is None:
            findings = run_preflight(spec)
        else:
            findings = run_preflight(spec, scope="all", world=with_ledger(world, spec, probes))
        refused += any(finding.is_error for finding in findings)
        texts.append(format_text(findings, source, spec.identity, spec.build_sources))
        reports.append(spec_report(source, spec.identity, findings, text=texts[-1]))
    if output_format == "json":
        click.echo(format_json(reports), nl=False)
    else:
        click.echo("\n".join(texts), nl=False)
        if len(specs) > 1:
            clean = len(specs) - invalid - refused
            click.echo(f"\n{len(specs)} specs: {clean} ok, {refused} refused, {invalid} invalid")
    status = EXIT_INVALID if invalid else EXIT_ERRORS if refused else EXIT_CLEAN
    click.get_current_context().exit(status)


@click.command("upgrade-check")
@click.argument("spec_path", metavar="SPEC")
@click.option("--to", "pin", required=True, metavar="PIN",
              help="The runtime pin to move to, e.g. skyrl==0.4.0.")
def upgrade_check_command(spec_path: str, pin: str) -> None:
    """What changes for a run when only its runtime pin changes: every SkyRL setting whose
    effective value moves (a default the release moved, a field it no longer has, a new
    required one), and the preflight rules that start or stop firing. SPEC is a RunSpec file,
    e.g. the spec.json `./pants package` writes beside a launch YAML.

    Exit status: 0 when nothing changes, 1 when something does, 2 when the spec cannot be
    read or a pin has no catalog.
    """
    try:
        spec = load_spec(spec_path)
    except SpecError as err:
        click.echo(err.render(), err=True)
        click.get_current_context().exit(EXIT_INVALID)
    try:
        report = upgrade_check(spec, pin)
    except ValueError as err:
        click.echo(f"Error: {err}", err=True)
        click.get_current_context().exit(EXIT_INVALID)
    click.echo(format_upgrade(report), nl=False)
    click.get_current_context().exit(EXIT_ERRORS if report.changes_anything else EXIT_CLEAN)
