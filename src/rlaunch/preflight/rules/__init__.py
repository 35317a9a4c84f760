"""The preflight rules, one module or more per family. Importing this package registers them;
each module's family is declared in `rlaunch.preflight.engine.registry.RULE_MODULES`, not read
from its name."""

from rlaunch.preflight.rules import (  # noqa: F401
    algorithm,
    allocation,
    artifacts,
    artifacts_ambient,
    artifacts_format,
    batch,
    batch_tail,
    context_window,
    execution,
    geometry,
    geometry_roles,
    heads_and_experts,
    memory,
    paths,
    pipeline,
    resume,
    runtime,
    settings,
    settings_optimizer,
    settings_weight_sync,
    smoke,
    versions,
)
