"""The `[rlaunch]` options: which interpreter runs the library, and where artifacts are stored."""

from __future__ import annotations

import os

from pants.option.errors import OptionsError
from pants.option.option_types import StrOption
from pants.option.subsystem import Subsystem
from pants.util.strutil import softwrap


class RlaunchPythonNotSet(OptionsError):
    """Raised when a rule needs the project runtime but `[rlaunch].python` is empty or relative."""


class RlaunchSubsystem(Subsystem):
    options_scope = "rlaunch"
    help = softwrap(
        """
        Options for rlaunch, which declares RL post-training experiments as build targets,
        preflights them (`check`), renders their launch YAML (`package`) and submits it (`run`);
        `plans` searches the role plans of a GPU budget for a run.

        The checks and the rendering run the rlaunch library in processes on the project runtime
        (CPython 3.11 with `3rdparty/requirements.lock`), not inside Pants.
        """
    )

    python = StrOption(
        default="",
        help=softwrap(
            """
            Absolute path of the project runtime's interpreter, which runs the rlaunch library for
            `check`, `package`, `plans` and `run`.

            Normally left unset here: the `./pants` script builds the shared runtime venv (see
            `scripts/runtime`) and exports `PANTS_RLAUNCH_PYTHON` pointing at it, which Pants reads
            as this option. Export `PANTS_RLAUNCH_PYTHON` yourself, or pass `--rlaunch-python`, to
            use another interpreter; it needs the packages of `3rdparty/requirements.lock`.
            Empty (the default) is an error as soon as a goal needs the runtime.
            """
        ),
    )

    store = StrOption(
        default="",
        help=softwrap(
            """
            Artifact store prefix that built artifacts are written under and read from, as an
            fsspec URL or local directory (e.g. `gs://bucket/rlaunch`, `s3://bucket/rlaunch`,
            `/data/rlaunch-store`). Empty (the default) means the rlaunch library's own default,
            a local directory.
            """
        ),
    )

    def runtime_python(self) -> str:
        """The project runtime interpreter, or a clear error saying how to set it."""
        if not self.python:
            raise RlaunchPythonNotSet(
                softwrap(
                    """
                    [rlaunch].python is empty, so there is no interpreter to run the rlaunch
                    library on. Run Pants through the repo's `./pants` script (it builds the project
                    runtime and exports PANTS_RLAUNCH_PYTHON), or set PANTS_RLAUNCH_PYTHON (or
                    --rlaunch-python) to the absolute path of a CPython 3.11 interpreter that has
                    3rdparty/requirements.lock installed; `scripts/runtime` prints one.
                    """
                )
            )
        if not os.path.isabs(self.python):
            raise RlaunchPythonNotSet(
                f"[rlaunch].python must be an absolute path (Pants runs processes with no PATH), "
                f"but was {self.python!r}. `scripts/runtime` prints the project runtime's path."
            )
        return self.python
