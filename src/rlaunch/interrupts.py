"""Ctrl-C (SIGINT) and SIGTERM as the launch command takes them: a KeyboardInterrupt, counted.

`interrupt` is the handler `rlaunch launch` and `rlaunch sweep` install (`install`). Two things it
adds to Python's own:
- The count is kept, so an interrupt Python drops is still seen: one raised while a finalizer
  runs (a file lock's `__del__`, say) is printed and lost. `raise_if_interrupted` asks again
  before the launch submits.
- Inside `interrupts_deferred`, the first interrupt is only noted. An executor defers it around
  its submission request: a job Ray or Iris made is then returned, recorded and stopped, never
  left running unseen. `interrupts_held` defers it too and raises it when the outermost block
  ends: a ledger write is made whole, and what handles the interrupt sees what was written; a
  deferred interrupt still pending is raised there. A second Ctrl-C in a block raises at once (a
  request that hangs cannot hold the user).
Without the handler installed (Python's default one), the blocks change nothing.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType


@dataclass
class _Signals:
    """What `interrupt` has seen."""

    count: int = 0
    """Interrupts so far, never reset: the command ends with the launch it interrupted."""
    held: int = 0
    """Depth of the `interrupts_deferred` and `interrupts_held` blocks being run."""
    deferred: bool = False
    """An interrupt arrived in a block and waits for its end."""


SIGNALS = _Signals()


def interrupt(signum: int, frame: FrameType | None) -> None:
    """The SIGINT and SIGTERM handler: KeyboardInterrupt, or, the first time inside a held
    block, nothing yet."""
    SIGNALS.count += 1
    if SIGNALS.held and not SIGNALS.deferred:
        SIGNALS.deferred = True
        return
    raise KeyboardInterrupt


def install() -> None:
    """Take Ctrl-C, and SIGTERM as Ctrl-C (`pants run` and process managers stop with it), with
    `interrupt`: a command's jobs are then stopped and recorded just the same."""
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)


def interrupts_seen() -> int:
    """How many interrupts `interrupt` has taken so far, deferred ones included (a thread that
    waits for others, as a sweep's, asks: a deferred one raises in the thread that held it)."""
    return SIGNALS.count


def raise_if_interrupted() -> None:
    """KeyboardInterrupt when `interrupt` ran, though its own exception was dropped or a
    block deferred it (which it then no longer is)."""
    if SIGNALS.count:
        SIGNALS.deferred = False
        raise KeyboardInterrupt


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """The first Ctrl-C in the block is noted, not raised; the next `interrupts_held` block's
    end raises it (see the module)."""
    SIGNALS.held += 1
    try:
        yield
    finally:
        SIGNALS.held -= 1


@contextmanager
def interrupts_held() -> Iterator[None]:
    """The first Ctrl-C in the block, or one deferred before it, is raised when the outermost
    block ends (see the module)."""
    with interrupts_deferred():
        yield
    if SIGNALS.deferred and not SIGNALS.held:
        SIGNALS.deferred = False
        raise KeyboardInterrupt


def forget_interrupts() -> None:
    """Back to none seen (a test that calls the handler itself)."""
    SIGNALS.count, SIGNALS.held, SIGNALS.deferred = 0, 0, False
