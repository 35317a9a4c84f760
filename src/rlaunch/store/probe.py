"""One bounded look at a store prefix before anything reads it: does it answer, and how.

An object store that does not answer makes every read wait on its client's retries: gcsfs
retries a failed request six times with exponential backoff, botocore (s3fs) retries and waits
on its connect and read timeouts, and a host that drops packets can hold a read for minutes.
Every world rule that reads the ledger used to pay that wait again, and then reported the
network as a bug in rlaunch. So a launch or `rlaunch preflight --scope all` probes each store
prefix once, in a thread it waits on for at most PROBE_SECONDS, and every reader after it is told
what the probe found instead of asking the store again.

The probe lists the prefix (the store's top level: a few names), and when the prefix holds
nothing yet it reads the bucket's metadata, to tell an empty store from a missing bucket.

PROBE_SECONDS is 10: a store that answers at all answers a listing in well under a second, and a
first request that must also fetch a credential (a metadata server token, an STS role) and open
TLS takes a few; 10 s leaves room for that on a slow link while keeping the wait for a store that
does not answer short. `RLAUNCH_STORE_PROBE_SECONDS` changes it.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Literal

from rlaunch.store.fs import StoreError, StoreLocation, open_location

PROBE_SECONDS = 10.0
PROBE_SECONDS_VARIABLE = "RLAUNCH_STORE_PROBE_SECONDS"

State = Literal["reachable", "unreachable", "denied", "no-bucket", "unusable"]

_FIXES: dict[str, str] = {
    "unreachable": "Check the network path to the store (VPN, proxy, endpoint variables such as"
                   " AWS_ENDPOINT_URL or STORAGE_EMULATOR_HOST) and that its host is up, or"
                   " launch with a store this machine reaches (--store, execution.store_prefix).",
    "denied": "Give this machine credentials that may read and write the store (for gs://:"
              " `gcloud auth application-default login` or GOOGLE_APPLICATION_CREDENTIALS; for"
              " s3://: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE), or use another"
              " store.",
    "no-bucket": "Create the bucket, or fix its name in execution.store_prefix (or --store,"
                 " RLAUNCH_STORE).",
    "unusable": "Install the store's filesystem package in this runtime, or fix the prefix.",
}


@dataclass(frozen=True)
class StoreProbe:
    """What one probe of a store prefix found."""

    prefix: str
    state: State
    answer: str
    """What came back (an error's text, or that nothing did), or empty."""
    seconds: float
    """How long the probe took."""
    bound: float
    """How long it would have waited."""

    @property
    def reachable(self) -> bool:
        return self.state == "reachable"

    def problem(self) -> str:
        """One sentence: the prefix, what it said, what was tried and for how long."""
        said = {
            "unreachable": "did not answer",
            "denied": "refused this machine's credentials",
            "no-bucket": "has no such bucket",
            "unusable": "cannot be opened",
            "reachable": "answered",
        }[self.state]
        answer = f": {self.answer}" if self.answer else ""
        if self.state == "unusable":
            return f"store {self.prefix} {said}{answer}"
        return (f"store {self.prefix} {said}{answer} (probed once by listing it and reading its"
                f" bucket's metadata: {self.seconds:.1f} s, of at most {self.bound:g} s)")

    def fix(self) -> str:
        return _FIXES.get(self.state, "")


class StoreUnavailable(Exception):
    """A reader was asked to read a store that its probe found unavailable."""

    def __init__(self, probe: StoreProbe) -> None:
        super().__init__(probe.problem())
        self.probe = probe


def probe_seconds() -> float:
    raw = os.environ.get(PROBE_SECONDS_VARIABLE, "")
    try:
        value = float(raw) if raw else PROBE_SECONDS
    except ValueError:
        return PROBE_SECONDS
    return value if value > 0 else PROBE_SECONDS


def _kind_of(error: BaseException) -> State:
    """What a client error means: access refused, a missing bucket, or no answer."""
    if isinstance(error, PermissionError):
        return "denied"
    if isinstance(error, FileNotFoundError):
        return "no-bucket"
    # gcsfs raises its HttpError with the status code for a refused token.
    if getattr(error, "code", None) in (401, 403):
        return "denied"
    return "unreachable"


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return f"{type(error).__name__}: {text[:200]}"


def _ask(location: StoreLocation) -> tuple[State, str]:
    try:
        location.fs.ls(location.root, detail=False)
        return "reachable", ""
    except FileNotFoundError:
        pass  # an empty store, or no bucket: the bucket's metadata tells
    bucket = location.root.split("/", 1)[0]
    try:
        location.fs.info(bucket)
    except FileNotFoundError as err:
        return "no-bucket", f"bucket {bucket!r}: {_short(err)}"
    return "reachable", ""


def probe_store(prefix: str, *, seconds: float | None = None) -> StoreProbe:
    """Probe `prefix` once, waiting at most `seconds` (default: probe_seconds()).

    A local directory is not probed (reading it cannot hang on a network): it is reachable. Never
    raises for what the store says; the state says it."""
    bound = probe_seconds() if seconds is None else seconds
    try:
        location = open_location(prefix)
    except StoreError as err:
        return StoreProbe(prefix, "unusable", str(err), 0.0, bound)
    if location.is_local:
        return StoreProbe(location.prefix, "reachable", "", 0.0, bound)
    outcome: list[tuple[State, str]] = []
    started = time.monotonic()

    def ask() -> None:
        try:
            outcome.append(_ask(location))
        except Exception as err:  # noqa: BLE001 - every client error is an answer to classify
            outcome.append((_kind_of(err), _short(err)))

    # A daemon thread: a store that never answers must not keep the process alive either.
    worker = threading.Thread(target=ask, name=f"store-probe {prefix}", daemon=True)
    worker.start()
    worker.join(bound)
    elapsed = time.monotonic() - started
    if not outcome:
        return StoreProbe(location.prefix, "unreachable", f"no answer within {bound:g} s",
                          elapsed, bound)
    state, answer = outcome[0]
    return StoreProbe(location.prefix, state, answer, elapsed, bound)
