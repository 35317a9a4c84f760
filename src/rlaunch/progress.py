"""Progress of long steps through one library (rich), on stderr, only when it is a terminal.

    with progress("building x") as advance:          # one step: a bar, or a spinner
        for part in ...:
            advance(1)

    with progress_board() as board:                  # several, set as something reports them
        board.set("training", "training: step 6/30", completed=6, total=30)

Piped or captured output (CI, Pants' run, tests) gets no bar at all: the line-per-event messages
each caller already prints are the record there, and a bar would only add control characters.
On a terminal the bars stay below what is printed meanwhile (rich redirects stderr, and stdout
when it is a terminal too, while they show) and are removed when the step ends.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)

Advance = Callable[..., None]
"""`advance(amount=1, description=None)`: move the bar, optionally renaming the step."""


def _bars(stream: TextIO | None, *, counted: bool, share: bool = False) -> Progress:
    """`counted`: a bar and `done/total`; `share`: a bar and a percentage (the description
    says what is counted)."""
    console = Console(file=stream or sys.stderr)
    columns: list[ProgressColumn] = [SpinnerColumn(), TextColumn("{task.description}")]
    if counted:
        columns += [BarColumn(), MofNCompleteColumn()]
    elif share:
        columns += [BarColumn(), TaskProgressColumn()]
    columns.append(TimeElapsedColumn())
    # While bars show, rich prints what is written to stdout above them, on the bars' stream:
    # right when stdout is the same terminal, wrong when it goes to a file.
    return Progress(*columns, console=console, transient=True, disable=not console.is_terminal,
                    redirect_stdout=_is_terminal(sys.stdout))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


@contextmanager
def progress(
    description: str, total: float | None = None, *, stream: TextIO | None = None
) -> Iterator[Advance]:
    """A bar (or a spinner when `total` is None) for one long step; a no-op off a terminal."""
    with _bars(stream, counted=total is not None) as bar:
        task = bar.add_task(description, total=total)

        def advance(amount: float = 1, description: str | None = None) -> None:
            if description is None:
                bar.advance(task, amount)
            else:
                bar.update(task, advance=amount, description=description)

        yield advance


class Board:
    """Bars by key, each set to where something outside reports it is (a job's output)."""

    def __init__(self, bars: Progress) -> None:
        self._bars = bars
        self._tasks: dict[str, TaskID] = {}
        self.shown: dict[str, tuple[float, float | None]] = {}
        """`{key: (completed, total)}` of every bar as last set (also off a terminal)."""

    def set(self, key: str, description: str, completed: float, total: float | None) -> None:
        if key not in self._tasks:
            self._tasks[key] = self._bars.add_task(description, total=total)
        self._bars.update(self._tasks[key], description=description, completed=completed,
                          total=total)
        self.shown[key] = (completed, total)
        self._bars.refresh()


@contextmanager
def progress_board(*, stream: TextIO | None = None) -> Iterator[Board]:
    """Bars added as they are first set (`Board.set`), each with its percentage; a no-op
    display off a terminal."""
    with _bars(stream, counted=False, share=True) as bars:
        yield Board(bars)
