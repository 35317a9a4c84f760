"""Credentials handed to a job without Ray seeing them.

Ray writes a job's runtime env (its `env_vars`) to its own logs (`runtime_env_agent.log`) and
shows it in the job's details, so no executor puts credential values there. The values travel
by one of two channels, and the job is run as

    python -m rlaunch.executors.credentials file FILE -- <entrypoint argv>     (local)
    python -m rlaunch.executors.credentials ray-kv KEY -- <entrypoint argv>    (ray)

which takes the values, deletes their copy, puts them in its environment and replaces itself
with the entrypoint (exec): the job sees the credentials as environment variables, and the only
thing Ray records is the file's path or the key's name.

- `file` (the `local` executor: launcher and job share a machine): a file only the user can
  read, in the head's temp dir.
- `ray-kv` (the `ray` executor: the cluster cannot see the launcher's files): an entry in the
  cluster's GCS key-value store, put there through the Jobs API's package upload
  (`PUT /api/packages/gcs/<name>`, the endpoint Ray's own client uploads a `working_dir`
  through), under a name with 128 random bits that nothing else references. It lives in the
  GCS's memory only: no file, no log line, no runtime env. The job reads it from the GCS at
  `RAY_ADDRESS` (set by Ray for every job) and deletes it. Should the job never start, Ray
  drops it when the temporary reference the launcher takes before uploading expires
  (`RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S`, 600 s by default).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path

SOURCES = ("file", "ray-kv")
KV_PREFIX = "gcs://_rlaunch_credentials_"
PAYLOAD_HEADER = b"rlaunch-credentials-v1\n"
"""Leads every payload: Ray prints the first 15 bytes of a package it fails to store, so those
bytes are never a value."""


class CredentialsError(Exception):
    """The credentials could not be handed over; the message names the channel."""


def write_credentials(folder: Path, attempt_id: str, values: Mapping[str, str]) -> Path:
    """A new file (mode 0600) holding `values`; refuses to reuse an existing one."""
    path = folder / f"credentials-{attempt_id}.json"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(payload(values))
    return path


def new_kv_key() -> str:
    """`gcs://_rlaunch_credentials_<32 hex>.zip`: a package name no one else uses or guesses."""
    return f"{KV_PREFIX}{secrets.token_hex(16)}.zip"


def payload(values: Mapping[str, str]) -> bytes:
    return PAYLOAD_HEADER + json.dumps(dict(values)).encode()


def parse_payload(data: bytes, where: str) -> dict[str, str]:
    if not data.startswith(PAYLOAD_HEADER):
        raise CredentialsError(f"{where} does not hold rlaunch credentials")
    try:
        values = json.loads(data[len(PAYLOAD_HEADER):])
    except ValueError as err:
        raise CredentialsError(f"{where} holds damaged credentials ({err})") from None
    if not isinstance(values, dict):
        raise CredentialsError(f"{where} holds damaged credentials (not an object)")
    return {str(name): str(value) for name, value in values.items()}


def wrapped_argv(source: str, location: str, argv: list[str] | tuple[str, ...], *,
                 python: str | None = None) -> list[str]:
    """The job's command: the wrapper takes the credentials from `source` (`file` or `ray-kv`)
    at `location`, then execs `argv`. `python`: the job's interpreter (default: this one).
    A `file` job runs on this machine: the wrapper is this file, run isolated (`-I`: no user
    site, no PYTHON* variables, not its folder on the path), which imports the standard library
    only, instead of `-m`, which imports the rlaunch.executors package first (about a second of
    a job's start-up; five on a loaded machine). A `ray-kv` job's cluster has rlaunch on its
    path, not necessarily this file: `-m` there."""
    if source == "file":
        return [python or sys.executable, "-I", str(Path(__file__).resolve()), source, location,
                "--", *argv]
    return [python or sys.executable, "-m", "rlaunch.executors.credentials", source, location,
            "--", *argv]


def take_from_file(path: Path) -> dict[str, str]:
    try:
        data = path.read_bytes()
    except OSError as err:
        raise CredentialsError(f"cannot read the job's credentials from {path}: {err}") from None
    path.unlink(missing_ok=True)
    return parse_payload(data, str(path))


def take_from_ray_kv(key: str) -> dict[str, str]:
    """Read and delete `key` from the GCS of the cluster this job runs on."""
    address = os.environ.get("RAY_ADDRESS")
    if not address:
        raise CredentialsError(
            f"cannot fetch the job's credentials ({key}): RAY_ADDRESS is not set; Ray sets it "
            "for every job it runs, so this command runs only as a Ray job's entrypoint"
        )
    # lazy: Ray is slow to import, and the `file` channel does not need it
    from ray._raylet import GcsClient

    client = GcsClient(address=address)
    data = client.internal_kv_get(key.encode(), None)
    if data is None:
        raise CredentialsError(
            f"the job's credentials ({key}) are not in the GCS at {address}: taken by an "
            "earlier start of this job, or dropped by Ray because the job started more than "
            "RAY_RUNTIME_ENV_TEMPORARY_REFERENCE_EXPIRATION_S (600 s by default) after it was "
            "submitted; launch again"
        )
    client.internal_kv_del(key.encode(), False, None)
    return parse_payload(data, f"the GCS entry {key}")


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] not in SOURCES or argv[2] != "--":
        print(f"usage: python -m rlaunch.executors.credentials {{{','.join(SOURCES)}}} "
              "LOCATION -- ARGV...", file=sys.stderr)
        return 2
    source, location, command = argv[0], argv[1], argv[3:]
    try:
        values = (take_from_file(Path(location)) if source == "file"
                  else take_from_ray_kv(location))
    except CredentialsError as err:
        print(f"rlaunch: {err}", file=sys.stderr)
        return 2
    os.environ.update(values)
    os.execvp(command[0], command)
    return 127  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
