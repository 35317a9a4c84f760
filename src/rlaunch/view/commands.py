"""`rlaunch ls | show | plot`: the runs of a store, from the ledger and the files on record."""

from __future__ import annotations

import json
from typing import Any

import click

from rlaunch.paths import resolve_store_prefix, run_paths
from rlaunch.view.runs import RunStore, ViewError, age, parse_identity, summarize
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
    detail = {
        "record": record,
        "summary": summary.to_dict(),
        "yaml_path": ((record.get("attempts") or [{}])[-1]).get("yaml_path"),
        "inputs": None if document is None else {
            slot: entry.model_dump(mode="json") for slot, entry in document.inputs.items()
        },
        "terminal": runs.terminal(name, version),
        "paths": {
            "run_root": paths.run_root, "checkpoints": paths.checkpoint_root,
            "export": paths.export_root, "attempts": paths.attempts_root,
            "terminal_manifest": paths.terminal_manifest, "ledger_record": paths.ledger_record,
        },
    }
    if as_json:
        click.echo(json.dumps(detail, indent=2, sort_keys=True))
        return
    for line in _show_lines(f"{name}@{version}", detail):
        click.echo(line)
