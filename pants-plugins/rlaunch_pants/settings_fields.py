"""Extra SkyRL settings in BUILD files: the `skyrl_settings` target (settings shared by runs) and
the `settings` field (on it, and on an `rl_run`, whose own settings override the shared ones).

Names and types come from the library's catalog through schema.json (`settings`): when a BUILD
file is parsed the run's runtime is not known yet, so a name is checked against every catalogued
release (SkyRL 0.3.0 and 0.4.0, and the smoke runtime, which reads a few of the same names); the
library checks the pinned release itself when the run is assembled (a 0.4.0 name on a 0.3.0 run
is refused there, naming 0.4.0). A name the plan decides is
refused here already, with the plan field to set instead.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from typing import Any, ClassVar, Optional

from pants.engine.addresses import Address
from pants.engine.target import COMMON_TARGET_FIELDS, Field, InvalidFieldException, Target
from pants.util.frozendict import FrozenDict
from pants.util.strutil import help_text

from rlaunch_pants import schema
from rlaunch_pants.fields import TargetReferenceField, freeze

_SETTINGS: Mapping[str, Any] = schema.SCHEMA["settings"]
FIELDS: Mapping[str, Mapping[str, Any]] = _SETTINGS["fields"]
SECTIONS: Mapping[str, str] = _SETTINGS["sections"]
PLAN_OWNED: Mapping[str, str] = _SETTINGS["plan_owned"]
RELEASES: str = " and ".join(_SETTINGS["releases"])
SETTABLE = tuple(name for name in FIELDS if name not in PLAN_OWNED)

# Catalog type -> (one value, several values) in words.
_WORDS = {"bool": ("a boolean", "booleans"), "int": ("an integer", "integers"),
          "float": ("a number", "numbers"), "str": ("a string", "strings"),
          "dict": ("a dict with string keys", "dicts with string keys"),
          "any": ("any value", "values")}


def _words(type_name: str) -> str:
    if type_name.startswith("list["):
        return "a list of " + _WORDS[type_name[5:-1]][1]
    return _WORDS[type_name][0]


def _is(value: Any, type_name: str) -> bool:
    if type_name == "any":
        return True
    if type_name == "bool":
        return isinstance(value, bool)
    if type_name == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "float":
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return number and math.isfinite(value)
    if type_name == "str":
        return isinstance(value, str)
    if type_name == "dict":
        return isinstance(value, (dict, FrozenDict)) and all(isinstance(k, str) for k in value)
    if type_name.startswith("list["):
        item = type_name[5:-1]
        return isinstance(value, (list, tuple)) and all(_is(entry, item) for entry in value)
    return False


def setting_problem(name: Any, value: Any) -> Optional[str]:
    """What is wrong with one setting, as a fragment after "The 'settings' field in target x";
    None when it is fine."""
    if not isinstance(name, str):
        return f"has the key {name!r}: a setting is named by a string, SkyRL's dotted name"
    if name in PLAN_OWNED:
        return (f"sets {name!r}, which the plan decides: set {PLAN_OWNED[name]} instead "
                f"(rlaunch renders it into the launch YAML)")
    if name in SECTIONS:
        leaves = [leaf for leaf in SETTABLE if leaf.startswith(name + ".")]
        example = f", e.g. {leaves[0]!r}" if leaves else ""
        return (f"sets {name!r}, a section of SkyRL's config ({SECTIONS[name]}), not a setting: "
                f"set its fields one by one{example}")
    found = FIELDS.get(name)
    if found is None:
        close = difflib.get_close_matches(name, SETTABLE, n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return (f"has an unknown SkyRL setting {name!r}{hint}: settings use the dotted names of "
                f"SkyRL's config fields (docs/spec-format.md, `settings`)")
    members = found["type"].split("|")
    if value is None:
        if found["nullable"]:
            return None
    elif any(_is(value, member) for member in members):
        return None
    wanted = " or ".join([_words(member) for member in members]
                         + (["None"] if found["nullable"] else []))
    return f"must set {name!r} to {wanted} (SkyRL types it as {found['type']}), but was {value!r}"


class SkyrlSettingsField(Field):
    """A dict of SkyRL settings: dotted name -> value, each checked against the catalog."""

    alias = "settings"
    value: FrozenDict[str, Any]
    default: ClassVar[FrozenDict[str, Any]] = FrozenDict()
    help = help_text(
        """
        Extra SkyRL settings by their dotted SkyRL config names, e.g.
        `generator.inference_engine.gpu_memory_utilization`. Each name must be a field of
        the config of the release the run's runtime pins (catalogued: """ + RELEASES + """;
        `bin/rlaunch settings --release 0.4.0` lists one release's names, types and
        defaults); a typo is refused with the closest name, a name only another release has
        with that release. Each value must have the field's type, and none may be one the
        plan decides (placement, parallel sizes, engine count, batch sizes, lengths, paths,
        seed, resume, logger): set the plan field instead. On an `rl_run`, these override the
        settings of its `skyrl_settings` target. Default: none.

            settings={
                "generator.inference_engine.gpu_memory_utilization": 0.85,
                "trainer.policy.optimizer_config.weight_decay": 0.0,
                "trainer.eval_interval": 10,
            }
        """
    )

    @classmethod
    def compute_value(
        cls, raw_value: Optional[Mapping[str, Any]], address: Address
    ) -> FrozenDict[str, Any]:
        value = super().compute_value(raw_value, address)
        if not isinstance(value, (dict, FrozenDict)):
            raise InvalidFieldException(
                f"The {cls.alias!r} field in target {address} must be a dict of SkyRL settings "
                f"(dotted name -> value), but was {value!r}."
            )
        problems = [
            problem for name, item in value.items()
            if (problem := setting_problem(name, item)) is not None
        ]
        if len(problems) == 1:
            raise InvalidFieldException(f"The {cls.alias!r} field in target {address} "
                                        f"{problems[0]}.")
        if problems:
            listed = "\n".join(f"  - {problem}" for problem in problems)
            raise InvalidFieldException(
                f"The {cls.alias!r} field in target {address} has {len(problems)} problems:\n"
                f"{listed}"
            )
        # Dotted names are keys, not paths: keep the dict flat (values frozen for the engine).
        return FrozenDict({name: freeze(value[name]) for name in sorted(value)})


class RlRunSkyrlSettingsField(TargetReferenceField):
    alias = "skyrl_settings"
    expected_types = ("skyrl_settings",)
    help = help_text(
        """
        Address of a `skyrl_settings` target whose settings the run takes; the run's own
        `settings` override them name by name. Unset: only the run's own settings.

            skyrl_settings="experiments/common:h100-vllm"
        """
    )


class SkyrlSettingsTarget(Target):
    alias = "skyrl_settings"
    core_fields = (*COMMON_TARGET_FIELDS, SkyrlSettingsField)
    help = help_text(
        """
        SkyRL settings shared by runs (an `rl_run` names it in `skyrl_settings`; its own
        `settings` override these name by name). The names are SkyRL's dotted config names
        (catalogued: """ + RELEASES + """); `./pants help rl_run` describes the checks.

            skyrl_settings(
                name="lora-r32",
                settings={
                    "trainer.policy.model.lora.rank": 32,
                    "trainer.policy.model.lora.alpha": 64,
                    "trainer.policy.model.lora.target_modules": "all-linear",
                },
            )
        """
    )
