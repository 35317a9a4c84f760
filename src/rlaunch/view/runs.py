"""Reading a store's runs: ledger records, per-attempt metrics and logs, terminal manifests.

    {prefix}/_ledger/{name}/{version}.json            the ledger record (rlaunch.ledger.records)
    {prefix}/{name}/{version}/attempts/<id>/          job.log, metrics.jsonl, submission.json
    {prefix}/{name}/{version}/terminal.json           the terminal manifest, written last

A resumed run writes each attempt's steps into that attempt's folder; the curve of a run is the
steps of all its attempts in order, a step trained again by a later attempt replacing the earlier.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rlaunch.ledger import Ledger, LedgerError, last_attempt
from rlaunch.paths import join, run_paths
from rlaunch.render import LaunchDocument, LaunchError, load_launch
from rlaunch.store.fs import StoreError, open_location

METRICS_FILE = "metrics.jsonl"
JOB_LOG = "job.log"


class ViewError(RuntimeError):
    """A run cannot be shown: the message names the identity, the store and what to check."""


@dataclass(frozen=True)
class Curve:
    """One run's numbers by step: training steps, and evals (initial/final) by the step they
    were taken at."""

    identity: str
    steps: list[dict[str, Any]] = field(default_factory=list)
    evals: list[dict[str, Any]] = field(default_factory=list)

    def series(self, key: str) -> tuple[list[int], list[float]]:
        """(steps, values) of a training metric, leaving out steps without it."""
        points = [(int(r["step"]), float(r[key])) for r in self.steps if _number(r.get(key))]
        return [s for s, _ in points], [v for _, v in points]

    def eval_series(self) -> tuple[list[int], list[float]]:
        points = [(int(r["step"]), float(r["reward_mean"])) for r in self.evals
                  if _number(r.get("reward_mean"))]
        return [s for s, _ in points], [v for _, v in points]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class RunSummary:
    """One line of `rlaunch ls`."""

    identity: str
    status: str
    last_attempt: str | None
    attempts: int
    steps: int
    reward_first: float | None
    reward_last: float | None
    eval_reward: float | None
    wandb: str | None
    updated_at: str | None
    smoke_of: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def parse_identity(text: str) -> tuple[str, str]:
    name, sep, version = text.partition("@")
    if not sep or not name or not version or "/" in version:
        raise ViewError(f"{text!r} is not a run identity; write it as name@version "
                        f"(`rlaunch ls` lists the identities in the store)")
    return name, version


class RunStore:
    """The runs of one store prefix, read-only."""

    def __init__(self, prefix: str) -> None:
        try:
            self._location = open_location(prefix)
            self.ledger = Ledger(prefix)
        except (StoreError, LedgerError) as err:
            raise ViewError(str(err)) from None

    @property
    def prefix(self) -> str:
        return self._location.prefix

    def _fs_path(self, path: str) -> str:
        if self._location.is_local:
            return path
        return self._location.root + path[len(self.prefix):]

    def read_text(self, path: str) -> str | None:
        """The file's text, None when it does not exist."""
        try:
            return self._location.fs.cat_file(self._fs_path(path)).decode("utf-8", "replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except OSError as err:
            raise ViewError(f"cannot read {path}: {err}") from None

    def identities(self) -> list[tuple[str, str]]:
        """Every (name, version) with a ledger record, sorted."""
        pattern = join(self._location.root, "_ledger", "*", "*.json")
        found = []
        for path in self._location.fs.glob(pattern):
            name = path.rstrip("/").split("/")[-2]
            version = path.rstrip("/").split("/")[-1][: -len(".json")]
            found.append((name, version))
        return sorted(found)

    def record(self, name: str, version: str) -> dict[str, Any]:
        try:
            record = self.ledger.read(name, version)
        except LedgerError as err:
            raise ViewError(str(err)) from None
        if record is None:
            raise ViewError(
                f"{name}@{version} has no ledger record in the store {self.prefix} "
                f"({self.ledger.record_path(name, version)}); `rlaunch ls --store PREFIX` lists "
                f"the runs of a store"
            )
        return record

    def attempt_file(self, name: str, version: str, attempt_id: str, filename: str) -> str:
        return join(run_paths(self.prefix, name, version).attempts_root, attempt_id, filename)

    def job_log(self, name: str, version: str, attempt_id: str) -> str | None:
        return self.read_text(self.attempt_file(name, version, attempt_id, JOB_LOG))

    def terminal(self, name: str, version: str) -> dict[str, Any] | None:
        text = self.read_text(run_paths(self.prefix, name, version).terminal_manifest)
        if text is None:
            return None
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def curve(self, name: str, version: str, record: Mapping[str, Any]) -> Curve:
        """Every attempt's metrics.jsonl, in attempt order; a re-trained step keeps the later
        attempt's numbers."""
        steps: dict[int, dict[str, Any]] = {}
        evals: dict[str, dict[str, Any]] = {}
        for attempt in record.get("attempts") or []:
            text = self.read_text(
                self.attempt_file(name, version, str(attempt.get("attempt_id")), METRICS_FILE))
            for line in (text or "").splitlines():
                entry = _json_line(line)
                if entry is None or not _number(entry.get("step")):
                    continue
                if "eval" in entry:
                    evals[str(entry["eval"])] = entry
                else:
                    steps[int(entry["step"])] = entry
        return Curve(
            identity=f"{name}@{version}",
            steps=[steps[step] for step in sorted(steps)],
            evals=sorted(evals.values(), key=lambda entry: int(entry["step"])),
        )

    def launch_document(self, record: Mapping[str, Any]) -> LaunchDocument | None:
        """The last attempt's launch YAML, when it is still where the launch wrote it (and still
        a launch YAML of this run)."""
        attempt = last_attempt(record) or {}
        path = attempt.get("yaml_path")
        if not path or not Path(path).is_file():
            return None
        try:
            document = load_launch(path)
        except LaunchError:
            return None
        return document if document.run.id == record.get("identity") else None


def _json_line(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def wandb_link(document: LaunchDocument | None) -> str | None:
    """The W&B project page of the run, where its run is named after the identity (rlaunch sets
    SkyRL's `trainer.run_name` to it); None when the run did not log to W&B."""
    wandb = None if document is None else document.execution.wandb
    if wandb is None:
        return None
    return f"https://wandb.ai/{wandb.entity}/{wandb.project}"


def summarize(store: RunStore, name: str, version: str) -> RunSummary:
    record = store.record(name, version)
    curve = store.curve(name, version, record)
    attempt = last_attempt(record) or {}
    _, rewards = curve.series("reward_mean")
    _, eval_rewards = curve.eval_series()
    identity = f"{name}@{version}"
    return RunSummary(
        identity=identity,
        status=str(record.get("status")),
        last_attempt=attempt.get("attempt_id"),
        attempts=len(record.get("attempts") or []),
        steps=len(curve.steps),
        reward_first=rewards[0] if rewards else None,
        reward_last=rewards[-1] if rewards else None,
        eval_reward=eval_rewards[-1] if eval_rewards else None,
        # The run's own page when its runtime reported one, else its W&B project.
        wandb=attempt.get("wandb_url") or wandb_link(store.launch_document(record)),
        updated_at=record.get("updated_at"),
        smoke_of=record.get("smoke_of"),
    )


def age(timestamp: str | None, now: datetime | None = None) -> str:
    """`3m`, `2h`, `5d` since an rlaunch timestamp; `-` when there is none."""
    if not timestamp:
        return "-"
    try:
        then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return "-"
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
