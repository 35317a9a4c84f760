"""A builder's `config` (the BUILD field) read into its typed model, with errors that name it.

The models of rlaunch's own builders live in rlaunch.spec.builder_configs, where preflight
checks them too (ART010); a third-party builder parses its own model the same way."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from rlaunch.builders.base import BuildError
from rlaunch.spec.artifacts import BuiltArtifact, identity
from rlaunch.spec.builder_configs import config_problems

Config = TypeVar("Config", bound=BaseModel)


def parse_config(model: type[Config], artifact: BuiltArtifact) -> Config:
    """The builder config, or a BuildError naming every bad field of `config`."""
    try:
        return model.model_validate(artifact.config)
    except ValidationError as err:
        fields = ", ".join(model.model_fields)
        raise BuildError(
            f"{identity(artifact)}: invalid config for builder {artifact.builder!r}: "
            f"{'; '.join(f'{field}: {problem}' for field, problem in config_problems(model, err))}"
            f". Its fields: {fields}"
        ) from None
