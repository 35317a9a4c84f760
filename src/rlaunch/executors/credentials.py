"""Credentials handed to a local job without Ray seeing them.

Ray writes a job's runtime env (its `env_vars`) to its own logs (`runtime_env_agent.log`) and
shows it in the job's details, so the `local` executor does not put credential values there.
It writes them to a file only the user can read, in the head's temp dir, and runs the job as

    python -m rlaunch.executors.credentials FILE -- <entrypoint argv>

which reads the file, deletes it, puts the values in its environment and replaces itself with
the entrypoint (exec): the job sees the credentials as environment variables, as before, and
the only thing Ray records is the file's path.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path


def write_credentials(folder: Path, attempt_id: str, values: Mapping[str, str]) -> Path:
    """A new file (mode 0600) holding `values`; refuses to reuse an existing one."""
    path = folder / f"credentials-{attempt_id}.json"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(dict(values), handle)
    return path


def wrapped_argv(path: Path, argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "rlaunch.executors.credentials", str(path), "--", *argv]


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m rlaunch.executors.credentials FILE -- ARGV...", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        values = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        print(f"rlaunch: cannot read the job's credentials from {path}: {err}", file=sys.stderr)
        return 2
    path.unlink(missing_ok=True)
    os.environ.update({str(name): str(value) for name, value in values.items()})
    command = argv[2:]
    os.execvp(command[0], command)
    return 127  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
