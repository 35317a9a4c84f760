"""Issue 16: a followed job's training steps and staged bytes as bars on the launcher's
terminal, read from the lines rlaunch's job code prints (fed here by those very formatters), and
nothing at all off a terminal."""

from __future__ import annotations

import io

import pytest

from rlaunch.executors.job_progress import JobProgress
from rlaunch.progress import progress_board
from rlaunch.runtimes.smoke.metrics import step_line
from rlaunch.store.transfer import ByteProgress, FileCopy

RECORD = {"step": 6, "reward_mean": 0.25, "solved_fraction": 0.125, "kl": 0.01,
          "policy_loss": 0.5, "tokens_per_s": 900.0, "step_time_s": 0.1}


def staging_line() -> str:
    """What staging prints while it copies: 3 MB of 12 MB of the model, 1 of 4 files."""
    files = [FileCopy(f"s3://b/m/{i}", f"/cache/m/{i}", 3_000_000) for i in range(4)]
    bytes_done = ByteProgress(files, what="staging model: countdown-sft@2026.11.01", log=None)
    bytes_done.add_bytes(3_000_000)
    bytes_done.value = 1
    return bytes_done.line()


def output() -> list[str]:
    """A job's output in chunks as Ray streams them: Ray's own lines, a staging line from the
    driver and one from a task on a node (as staging_ray labels it, behind Ray's prefix), step
    lines split across chunks."""
    steps = "".join(step_line({**RECORD, "step": step}, 30) + "\n" for step in (6, 7, 8))
    return ["2026-11-30 23:56:48,625\tINFO job_manager.py:581 -- Runtime env is setting up.\n",
            f"{staging_line()}\n",
            f"(_stage_here pid=4242, ip=10.0.0.3) [node 10.0.0.3 1a2b3c4d] {staging_line()}\n",
            "smoke runtime: run@dev attempt a1; 30 steps\n", steps[:30], steps[30:]]


def test_the_lines_the_job_prints_move_the_bars() -> None:
    with progress_board(stream=io.StringIO()) as board:
        watch = JobProgress(board)
        for chunk in output():
            watch.feed(chunk)
        assert board.shown == {
            "staging model: countdown-sft@2026.11.01": (25, 100),
            "[node 10.0.0.3 1a2b3c4d] staging model: countdown-sft@2026.11.01": (25, 100),
            "training": (8, 30),
        }


def test_off_a_terminal_the_bars_print_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    stream = io.StringIO()
    with progress_board(stream=stream) as board:
        watch = JobProgress(board)
        for chunk in output():
            watch.feed(chunk)
    assert stream.getvalue() == ""


def test_on_a_terminal_the_bars_show_steps_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich's switch: this stream is a terminal
    monkeypatch.setenv("COLUMNS", "160")
    stream = io.StringIO()
    with progress_board(stream=stream) as board:
        watch = JobProgress(board)
        for chunk in output():
            watch.feed(chunk)
        shown = stream.getvalue()
    assert "\x1b[" in shown  # drawn and redrawn in place
    assert "training: step 8/30" in shown and " 27%" in shown
    assert "staging model: countdown-sft@2026.11.01: 3.0 MB of 12.0 MB" in shown
    assert " 25%" in shown
    # A partial line is kept until its end arrives: no bar moved for "step 9/3".
    watch.feed("step 9/3")
    assert board.shown["training"] == (8, 30)
