"""Executor plugins (entry point group `rlaunch.executors`): local Ray, remote Ray, Iris, dry-run.

Each plugin is a class with `describe`, `submit`, `status`, `logs`, `stop` and `close`
(`rlaunch.executors.base.Executor`); `load_executor(name)` finds and instantiates one.
"""

from __future__ import annotations

from rlaunch.executors.base import (
    Executor,
    ExecutorError,
    ExecutorOptions,
    JobLost,
    Submission,
)
from rlaunch.plugins import EXECUTOR_GROUP as GROUP
from rlaunch.plugins import PluginError, load
from rlaunch.status import AttemptStatus


def load_executor(name: str, options: ExecutorOptions | None = None) -> Executor:
    """The executor plugin registered as `name`, instantiated with `options`."""
    try:
        factory = load(GROUP, name)
    except PluginError as err:
        raise ExecutorError(f"execution.executor {name!r}: {err}") from None
    executor = factory(options)
    if not isinstance(executor, Executor):
        raise ExecutorError(
            f"executor plugin {name!r} ({factory!r}) is not an rlaunch.executors.base.Executor"
        )
    return executor


__all__ = [
    "AttemptStatus", "GROUP", "Executor", "ExecutorError", "ExecutorOptions", "JobLost",
    "Submission", "load_executor",
]
