"""A builder's `config` (the BUILD field) read into a strict model, with errors that name it."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from rlaunch.builders.base import BuildError
from rlaunch.spec.artifacts import BuiltArtifact, identity


class BuilderConfig(BaseModel):
    """Base of every builder's config: unknown keys and loose types are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


Config = TypeVar("Config", bound=BaseModel)


def parse_config(model: type[Config], artifact: BuiltArtifact) -> Config:
    """The builder config, or a BuildError naming every bad field of `config`."""
    try:
        return model.model_validate(artifact.config)
    except ValidationError as err:
        problems = []
        for error in err.errors():
            field = ".".join(["config", *(str(part) for part in error["loc"])])
            shown = "" if error["type"] == "missing" else f" (got {error.get('input')!r})"
            problems.append(f"{field}: {error['msg']}{shown}")
        fields = ", ".join(model.model_fields)
        raise BuildError(
            f"{identity(artifact)}: invalid config for builder {artifact.builder!r}: "
            f"{'; '.join(problems)}. Its fields: {fields}"
        ) from None
