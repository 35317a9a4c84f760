"""Where a target is written: its BUILD file and the line of its `name=`.

The spec files the plugin writes carry `build_sources` (rlaunch.spec.sources): which target, in
which BUILD file, each section of the RunSpec came from, and the BUILD field names that differ
from the spec's keys. The library then names those in every message instead of a sandbox path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from pants.engine.addresses import Address
from pants.engine.fs import DigestContents, PathGlobs
from pants.engine.internals.target_adaptor import TargetAdaptor, TargetAdaptorRequest
from pants.engine.rules import Get, collect_rules, rule

SOURCES_KEY = "build_sources"

# Spec sub-path -> BUILD field, where a target's fields are not the spec's keys: only the run's
# name (a target's `name` is its own).
RUN_FIELD_NAMES = {"name": "run_name"}


def name_line(build_text: str, target_name: str) -> Optional[int]:
    """The line of the only `name="<target_name>"` in a BUILD file, else of the only string
    literal `"<target_name>"` (a macro given the name); None if neither is unique (a target
    named by its directory, or by a macro alone)."""
    quoted = r"""["']""" + re.escape(target_name) + r"""["']"""
    lines = build_text.splitlines()
    for pattern in (re.compile(r"\bname\s*=\s*" + quoted), re.compile(quoted)):
        found = [number for number, line in enumerate(lines, 1) if pattern.search(line)]
        if len(found) == 1:
            return found[0]
    return None


@dataclass(frozen=True)
class TargetOrigin:
    address: Address
    build_file: str
    line: Optional[int]

    def entry(self, field_names: Mapping[str, str]) -> dict[str, Any]:
        """This target as one section of `build_sources`."""
        return {
            "address": str(self.address),
            "build_file": self.build_file,
            "line": self.line,
            "fields": dict(field_names),
        }


@dataclass(frozen=True)
class TargetOriginRequest:
    address: Address


@rule(desc="Finding where a target is written")
async def target_origin(request: TargetOriginRequest) -> TargetOrigin:
    adaptor = await Get(
        TargetAdaptor,
        TargetAdaptorRequest(request.address, description_of_origin="the rlaunch backend"),
    )
    # `<BUILD file>:<line>`; the line is of the frame that called the target type, which is a
    # macro's own line for a target a macro makes, so the line of `name=` is looked up instead.
    build_file = adaptor.description_of_origin.rsplit(":", 1)[0]
    contents = await Get(DigestContents, PathGlobs([build_file]))
    line = None
    if contents:
        line = name_line(contents[0].content.decode(), request.address.target_name)
    return TargetOrigin(request.address, build_file, line)


def rules():  # type: ignore[no-untyped-def]
    return collect_rules()
