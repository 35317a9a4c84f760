"""Where a RunSpec was written: the BUILD targets the Pants plugin assembled it from.

The plugin adds `build_sources` to the spec files it writes: for each section of the spec (the
run itself under `""`, `role_plan`, `execution`, `runtime`, every artifact and dependency), the
target's address, its BUILD file and line, and the BUILD field names that differ from the spec's
keys. Messages then name `experiments/x/BUILD:12 (experiments/x:plan) policy.num_nodes` instead
of a sandbox path and a spec path. It is not part of the RunSpec: it changes no fingerprint and
no launch YAML, and a hand-written spec simply has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SOURCES_KEY = "build_sources"


@dataclass(frozen=True)
class Origin:
    address: str
    """The target's address, e.g. `experiments/x:plan`."""
    build_file: str
    line: int | None
    """The line of the target's `name=` in the BUILD file, where the plugin found it."""
    fields: Mapping[str, str]
    """Spec sub-path -> BUILD field, where they differ (`name` -> `run_name`)."""

    @property
    def where(self) -> str:
        return f"{self.build_file}:{self.line}" if self.line else self.build_file

    def field(self, subpath: str) -> str:
        """The BUILD field (with its dict keys) that a spec sub-path was written as."""
        for spec_key in sorted(self.fields, key=len, reverse=True):
            if subpath == spec_key or subpath.startswith(spec_key + "."):
                return self.fields[spec_key] + subpath[len(spec_key):]
        return subpath


@dataclass(frozen=True)
class BuildSources:
    sections: Mapping[str, Origin]
    """Spec path of a section (`""` for the run) -> the target it was written in."""

    @classmethod
    def from_data(cls, data: Any) -> BuildSources:
        """Read the `build_sources` value; ValueError when it is not what the plugin writes."""
        if not isinstance(data, Mapping) or "" not in data:
            raise ValueError(f"{SOURCES_KEY} must map spec sections to targets, with the run at ''")
        sections = {}
        for section, entry in data.items():
            try:
                line = entry["line"]
                sections[str(section)] = Origin(
                    str(entry["address"]), str(entry["build_file"]),
                    int(line) if line is not None else None,
                    {str(key): str(value) for key, value in entry["fields"].items()},
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                raise ValueError(
                    f"{SOURCES_KEY}.{section or '<run>'} must have address, build_file, line and "
                    f"fields"
                ) from None
        return cls(sections)

    @property
    def run(self) -> Origin:
        return self.sections[""]

    def title(self) -> str:
        """The run's target and where it is written, e.g. `x:grpo (experiments/x/BUILD:40)`."""
        return f"{self.run.address} ({self.run.where})"

    def locate(self, path: str) -> tuple[Origin, str]:
        """The target a spec path was written in, and the field as written there: the section
        with the longest prefix of the path that leaves a field to name."""
        best = ""
        for section in self.sections:
            # A section that names its own field under "" is one key (a setting the run takes
            # from a shared target); any other section is a field of the run itself.
            exact = path == section and "" in self.sections[section].fields
            inside = exact or path.startswith(section + ".")
            if section and inside and len(section) > len(best):
                best = section
        origin = self.sections[best]
        return origin, origin.field(path[len(best) + 1:] if best else path)

    def describe(self, paths: list[str] | tuple[str, ...]) -> list[str]:
        """`BUILD:line (address): field, field` for the paths, one entry per target."""
        fields: dict[str, list[str]] = {}
        for path in paths:
            origin, field = self.locate(path)
            named = fields.setdefault(f"{origin.where} ({origin.address})", [])
            if field not in named:
                named.append(field)
        return [f"{target}: {', '.join(names)}" for target, names in fields.items()]
