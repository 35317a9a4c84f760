"""Progress output (smoke/metrics.py): console line, JSON lines, W&B fallback."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from rlaunch.runtimes.smoke.metrics import MetricsSink, attempt_id, step_line

RECORD = {"step": 3, "reward_mean": 0.3125, "solved_fraction": 0.25, "kl": 0.00123,
          "policy_loss": -0.0042, "tokens_per_s": 1234.4, "step_time_s": 0.456}


def test_step_line() -> None:
    assert step_line(RECORD, 40) == (
        "step 3/40 | reward 0.312 (solved 0.25) | kl 0.0012 | loss -0.0042 | 1234 tok/s | "
        "0.46 s/step"
    )


def test_records_are_json_lines(tmp_path: Path) -> None:
    said: list[str] = []
    sink = MetricsSink(tmp_path / "a1", logger="console", project="p", entity=None,
                       run_name="r@1", config={}, say=said.append)
    sink.log(RECORD, "line")
    sink.log({"eval": "final", "reward_mean": 0.5})
    sink.close()
    lines = (tmp_path / "a1" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [RECORD, {"eval": "final", "reward_mean": 0.5}]
    assert said == ["line"]


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed")
def test_wandb_logger_without_wandb_goes_on_with_console_and_jsonl(tmp_path: Path) -> None:
    said: list[str] = []
    sink = MetricsSink(tmp_path, logger="wandb", project="p", entity="e", run_name="r@1",
                       config={}, say=said.append)
    sink.log(RECORD)
    sink.close()
    assert said == ["wandb: not installed; logging to the console and metrics.jsonl only"]
    assert (tmp_path / "metrics.jsonl").read_text().count("\n") == 1


def test_attempt_id_comes_from_the_executor(monkeypatch) -> None:
    monkeypatch.setenv("RLAUNCH_ATTEMPT_ID", "a-7")
    assert attempt_id() == "a-7"
    monkeypatch.delenv("RLAUNCH_ATTEMPT_ID")
    assert len(attempt_id()) == len("20261129T230234Z")


STAND_IN = '''
calls = []


class Run:
    def log(self, data, step):
        calls.append(("log", data, step))

    def finish(self):
        calls.append(("finish",))


def init(**kwargs):
    calls.append(("init", kwargs))
    return Run()
'''


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed")
@pytest.mark.parametrize("key, mode", [(None, "offline"), ("k-123", "online")])
def test_wandb_runs_offline_without_a_key_through_a_stand_in(
    tmp_path: Path, monkeypatch, key: str | None, mode: str
) -> None:
    # wandb is not in the runtime lock: a stand-in module takes its place for this test only.
    (tmp_path / "wandb.py").write_text(STAND_IN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "wandb", raising=False)
    if key is None:
        monkeypatch.delenv("WANDB_API_KEY", raising=False)
    else:
        monkeypatch.setenv("WANDB_API_KEY", key)
    said: list[str] = []
    try:
        sink = MetricsSink(tmp_path / "a1", logger="wandb", project="p", entity="team",
                           run_name="r@1", config={"run_id": "r@1"}, say=said.append)
        sink.log({**RECORD, "note": "text is not sent"})
        sink.close()
        calls = sys.modules["wandb"].calls
    finally:
        sys.modules.pop("wandb", None)
    assert calls[0] == ("init", {"project": "p", "entity": "team", "name": "r@1",
                                 "config": {"run_id": "r@1"}, "dir": str(tmp_path / "a1"),
                                 "mode": mode})
    assert calls[1:] == [("log", RECORD, 3), ("finish",)]
    offline = "wandb: WANDB_API_KEY is not set; logging offline into the attempt folder"
    assert said == ([offline] if key is None else [])
