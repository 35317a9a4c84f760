"""`python echo_cli.py <rlaunch args>`: the rlaunch command line with the tests' `echo` runtime
profile in the catalog (what a real process of the tests runs, e.g. two racing launches)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from executors.support import install_echo_profile  # noqa: E402

install_echo_profile()

from rlaunch.cli import main  # noqa: E402

if __name__ == "__main__":
    main(prog_name="rlaunch")
