"""rlaunch.interrupts: what the launch command's Ctrl-C handler raises, and when."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from rlaunch.interrupts import (
    SIGNALS,
    forget_interrupts,
    interrupt,
    interrupts_deferred,
    interrupts_held,
    raise_if_interrupted,
)


@pytest.fixture(autouse=True)
def _none_seen() -> Iterator[None]:
    forget_interrupts()
    yield
    forget_interrupts()


def test_outside_a_block_a_ctrl_c_raises_at_once() -> None:
    with pytest.raises(KeyboardInterrupt):
        interrupt(signal.SIGINT, None)
    assert SIGNALS.count == 1


def test_a_held_block_finishes_its_work_then_raises() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            interrupt(signal.SIGINT, None)
            done.append("written")
    assert done == ["written"]
    assert (SIGNALS.held, SIGNALS.deferred) == (0, False)


def test_a_deferred_ctrl_c_waits_for_the_next_held_block_and_a_second_raises_at_once() -> None:
    with interrupts_deferred():
        interrupt(signal.SIGINT, None)
        answer = "the job Ray made"
    assert answer == "the job Ray made" and SIGNALS.deferred
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            recorded = answer
    assert recorded == "the job Ray made"
    with pytest.raises(KeyboardInterrupt), interrupts_deferred():
        interrupt(signal.SIGINT, None)
        interrupt(signal.SIGINT, None)  # a request that hangs cannot hold the user
    assert SIGNALS.count == 3


def test_only_the_outermost_held_block_raises() -> None:
    trail = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            with interrupts_held():
                interrupt(signal.SIGINT, None)
            trail.append("outer block went on")
    assert trail == ["outer block went on"]


def test_raise_if_interrupted_raises_a_deferred_one_once() -> None:
    raise_if_interrupted()  # none yet
    with interrupts_deferred():
        interrupt(signal.SIGINT, None)
    with pytest.raises(KeyboardInterrupt):
        raise_if_interrupted()
    with interrupts_held():
        pass  # no longer pending
