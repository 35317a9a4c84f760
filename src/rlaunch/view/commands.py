"""`rlaunch ls | show | plot`: the runs of a store, from the ledger and the files on record."""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import click

from rlaunch.paths import resolve_store_prefix, run_paths
from rlaunch.view.plot import default_output, write_png
from rlaunch.view.runs import Curve, RunStore, ViewError, age, parse_identity, summarize
from rlaunch.view.table import table

_STORE = click.option(
    "--store", metavar="PREFIX",
    help="Artifact store prefix (directory or fsspec URL); default: $RLAUNCH_STORE or "
         "~/.cache/rlaunch/store.")
_JSON = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def open_store(store: str | None) -> RunStore:
    try:
        return RunStore(resolve_store_prefix(store))
    except ViewError as err:
        raise click.ClickException(str(err)) from None


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@click.command("ls")
@_STORE
@_JSON
def ls_command(store: str | None, as_json: bool) -> None:
    """List every run in the store's ledger: status, last attempt, steps, first and last
    training reward, last eval reward, W&B project, and time since its record changed."""
    runs = open_store(store)
    try:
        summaries = [summarize(runs, name, version) for name, version in runs.identities()]
    except ViewError as err:
        raise click.ClickException(str(err)) from None
    if as_json:
        click.echo(json.dumps([s.to_dict() for s in summaries], indent=2))
        return
    if not summaries:
        click.echo(f"no runs in the ledger of {runs.prefix}")
        return
    rows = [
        [s.identity, s.status, s.last_attempt or "-", str(s.steps),
         f"{_number(s.reward_first)} -> {_number(s.reward_last)}", _number(s.eval_reward),
         age(s.updated_at), s.wandb or "-"]
        for s in summaries
    ]
    headers = ["RUN", "STATUS", "LAST ATTEMPT", "STEPS", "REWARD first -> last", "EVAL", "AGE",
               "W&B"]
    for line in table(headers, rows):
        click.echo(line)


def _show_lines(identity: str, detail: dict[str, Any]) -> list[str]:
    record = detail["record"]
    lines = [
        f"{identity}: {record.get('status')}"
        + (f" (smoke of {record['smoke_of']})" if record.get("smoke_of") else ""),
        f"  fingerprint          {record.get('fingerprint') or '-'}",
        f"  runtime fingerprint  {record.get('runtime_fingerprint') or '-'}",
        f"  launcher commit      {record.get('launcher_commit') or '-'}",
        f"  launch YAML digest   {record.get('yaml_digest') or '-'}",
        f"  geometry             {json.dumps(record.get('geometry'), sort_keys=True)}",
        "attempts:",
    ]
    rows = []
    for attempt in record.get("attempts") or []:
        submission = attempt.get("submission") or {}
        job = (f"{submission.get('executor')} {submission.get('submission_id')}"
               if submission else "-")
        rows.append([attempt.get("attempt_id") or "-", attempt.get("status") or "-",
                     attempt.get("started_at") or "-", attempt.get("finished_at") or "-", job,
                     attempt.get("error") or ""])
    lines += ["  " + line for line in table(
        ["ATTEMPT", "STATUS", "STARTED", "FINISHED", "JOB", "ERROR"], rows)]
    summary = detail["summary"]
    lines.append(f"steps: {summary['steps']}, reward {_number(summary['reward_first'])} -> "
                 f"{_number(summary['reward_last'])}, eval {_number(summary['eval_reward'])}"
                 + (f", W&B {summary['wandb']}" if summary["wandb"] else ""))
    smokes = record.get("smoke_results") or []
    lines.append("smoke results:" if smokes else "smoke results: none recorded")
    for smoke in smokes:
        lines.append(f"  {smoke.get('smoke')} attempt {smoke.get('attempt_id')}: "
                     f"{smoke.get('status')} at {smoke.get('recorded_at')}")
    inputs = detail["inputs"]
    if inputs is None:
        lines.append("inputs: unknown (the last attempt's launch YAML is no longer at "
                     f"{detail['yaml_path']})")
    else:
        lines.append("inputs:")
        for slot, entry in inputs.items():
            lines.append(f"  {slot:<16} {entry['identity']}  {entry['uri']}")
    lines.append("paths:")
    for key, path in detail["paths"].items():
        lines.append(f"  {key:<18} {path}")
    return lines


@click.command("show")
@click.argument("identity", metavar="NAME@VERSION")
@_STORE
@_JSON
def show_command(identity: str, store: str | None, as_json: bool) -> None:
    """Show one run from the ledger: fingerprints, every attempt, smoke results, its inputs (from
    the last launch YAML) and where its files are."""
    runs = open_store(store)
    try:
        name, version = parse_identity(identity)
        record = runs.record(name, version)
        summary = summarize(runs, name, version)
    except ViewError as err:
        raise click.ClickException(str(err)) from None
    document = runs.launch_document(record)
    paths = run_paths(runs.prefix, name, version)
    terminal = runs.terminal(name, version)
    detail = {
        "record": record,
        "summary": summary.to_dict(),
        "yaml_path": ((record.get("attempts") or [{}])[-1]).get("yaml_path"),
        "inputs": None if document is None else {
            slot: entry.model_dump(mode="json") for slot, entry in document.inputs.items()
        },
        "terminal": terminal,
        "paths": {
            "run_root": paths.run_root, "checkpoints": paths.checkpoint_root,
            "export": paths.export_root, "attempts": paths.attempts_root,
            "terminal_manifest": paths.terminal_manifest, "ledger_record": paths.ledger_record,
        },
    }
    if terminal is not None and isinstance(terminal.get("export_path"), str):
        # What a stage reading this run's export gets (SkyRL: the last global_step_N/policy).
        detail["paths"]["exported_model"] = terminal["export_path"]
    if as_json:
        click.echo(json.dumps(detail, indent=2, sort_keys=True))
        return
    for line in _show_lines(f"{name}@{version}", detail):
        click.echo(line)


def select(runs: RunStore, patterns: tuple[str, ...]) -> list[tuple[str, str]]:
    """The identities named, in the order given; a pattern with `*`, `?` or `[` matches every
    identity of the store it fits (sorted)."""
    known = [f"{name}@{version}" for name, version in runs.identities()]
    chosen: list[str] = []
    for pattern in patterns:
        if any(char in pattern for char in "*?["):
            matched = fnmatch.filter(known, pattern)
            if not matched:
                raise ViewError(f"{pattern!r} matches no run in the store {runs.prefix}; "
                                f"`rlaunch ls` lists them")
        else:
            parse_identity(pattern)
            matched = [pattern]
        chosen += [identity for identity in matched if identity not in chosen]
    return [parse_identity(identity) for identity in chosen]


def curves_of(runs: RunStore, identities: list[tuple[str, str]]) -> list[Curve]:
    curves = []
    for name, version in identities:
        curve = runs.curve(name, version, runs.record(name, version))
        if not curve.steps and not curve.evals:
            raise ViewError(
                f"{name}@{version} has no metrics on record: no attempt of it wrote "
                f"metrics.jsonl under {run_paths(runs.prefix, name, version).attempts_root}")
        curves.append(curve)
    return curves


@click.command("plot")
@click.argument("identities", metavar="NAME@VERSION...", nargs=-1, required=True)
@_STORE
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the PNG (default dist/plots/<first run>[-and-<n>-more].png).")
def plot_command(identities: tuple[str, ...], store: str | None, out: Path | None) -> None:
    """Plot training reward, eval reward and KL against step for one or several runs into one
    PNG, and print its path. A NAME@VERSION may be a pattern (`'countdown-lr*@dev'`) matching
    every run of the store it fits, e.g. all points of a sweep."""
    runs = open_store(store)
    try:
        chosen = select(runs, identities)
        curves = curves_of(runs, chosen)
    except ViewError as err:
        raise click.ClickException(str(err)) from None
    path = out or default_output([curve.identity for curve in curves])
    write_png(curves, path)
    click.echo(str(path))
