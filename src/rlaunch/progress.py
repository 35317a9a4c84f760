"""Progress of long steps through one library (rich), on stderr, only when it is a terminal.

    with progress("training", total=60) as advance:
        for step in ...:
            advance(1)

Piped or captured output (CI, Pants' run, tests) gets no bar at all: the line-per-event messages
each caller already prints are the record there, and a bar would only add control characters.
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
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

Advance = Callable[..., None]
"""`advance(amount=1, description=None)`: move the bar, optionally renaming the step."""


def shows_progress(stream: TextIO | None = None) -> bool:
    return Console(file=stream or sys.stderr).is_terminal


@contextmanager
def progress(
    description: str, total: float | None = None, *, stream: TextIO | None = None
) -> Iterator[Advance]:
    """A bar (or a spinner when `total` is None) for one long step; a no-op off a terminal."""
    console = Console(file=stream or sys.stderr)
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True,
                  disable=not console.is_terminal) as bar:
        task = bar.add_task(description, total=total)

        def advance(amount: float = 1, description: str | None = None) -> None:
            if description is None:
                bar.advance(task, amount)
            else:
                bar.update(task, advance=amount, description=description)

        yield advance
