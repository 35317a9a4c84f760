"""Execution: executor, credentials (by name), W&B identity, limits, export policy, host."""

from __future__ import annotations

from collections.abc import Iterator

from rlaunch.plugins import EXECUTOR_GROUP, registered_names
from rlaunch.preflight.engine.check import Check
from rlaunch.preflight.engine.finding import Finding, error, warning
from rlaunch.preflight.engine.registry import Example, rule
from rlaunch.preflight.rules.artifacts_format import SKYRL_PROFILE
from rlaunch.spec.execution import IRIS_PRIORITY_BANDS
from rlaunch.spec.syntax import ENV_NAME


@rule(
    "EXEC001",
    "The executor is a registered executor plugin.",
    example=Example(edits={"execution.executor": "slurm"}),
    reads_plan=False,
)
def executor_registered(check: Check) -> Iterator[Finding]:
    executor = check.spec.execution.executor
    known = registered_names(EXECUTOR_GROUP)
    if executor not in known:
        yield error(
            "EXEC001", ("execution.executor",),
            f"execution.executor {executor!r} is not a registered executor ({', '.join(known)})",
            "Use a registered executor, or install the plugin that provides it (entry point"
            " group rlaunch.executors).",
        )


@rule(
    "EXEC002",
    "ray needs an http(s) address, iris a controller URL or a cluster, local the sim accelerator.",
    example=Example(edits={"execution.executor": "iris", "execution.address": None}),
    reads_plan=False,
)
def executor_target(check: Check) -> Iterator[Finding]:
    execution = check.spec.execution
    if execution.executor == "ray":
        address = execution.address
        if address is None or not address.startswith(("http://", "https://")):
            shown = "null" if address is None else repr(address)
            yield error(
                "EXEC002", ("execution.address", "execution.executor"),
                "execution.executor ray needs the Ray Jobs API address (http://host:8265), but"
                f" execution.address is {shown}",
                "Set execution.address to the dashboard URL, e.g. http://head-node:8265.",
            )
    elif execution.executor == "iris" and execution.address is not None:
        if not execution.address.startswith(("http://", "https://")):
            yield error(
                "EXEC002", ("execution.address", "execution.executor"),
                "execution.executor iris takes execution.address as the Iris controller URL,"
                f" but it is {execution.address!r}",
                "Set execution.address to the controller URL (http://host:port), or to null and"
                " execution.cluster to a cluster config file or name.",
            )
    elif execution.executor == "iris" and not execution.cluster:
        yield error(
            "EXEC002", ("execution.cluster", "execution.address", "execution.executor"),
            "execution.executor iris needs execution.cluster or execution.address, but both are"
            " null",
            "Set execution.cluster to an Iris cluster config file or cluster name, or"
            " execution.address to the controller URL.",
        )
    elif execution.executor == "local" and execution.allocation.accelerator != "sim":
        yield error(
            "EXEC002", ("execution.allocation.accelerator", "execution.executor"),
            f"execution.executor local simulates GPUs, but execution.allocation.accelerator is"
            f" {execution.allocation.accelerator!r}",
            "Set execution.allocation.accelerator to sim for the local executor, or submit to"
            " a cluster with executor ray or iris.",
        )


@rule(
    "EXEC003",
    "Credentials are environment variable names ([A-Z_][A-Z0-9_]*), never values.",
    example=Example(edits={"execution.credentials": ["hf_0123456789abcdefghijklmnop"]}),
    reads_plan=False,
)
def credential_names(check: Check) -> Iterator[Finding]:
    for index, name in enumerate(check.spec.execution.credentials):
        if ENV_NAME.fullmatch(name) is None:
            # The string may be a pasted secret: describe it, never print it.
            yield error(
                "EXEC003", (f"execution.credentials.{index}",),
                f"execution.credentials[{index}] (a {len(name)}-character string, not shown in"
                " case it is a secret) is not an environment variable name [A-Z_][A-Z0-9_]*",
                "List the NAME of the variable that holds the secret (e.g. HF_TOKEN); if a"
                " secret value was pasted here, rotate it.",
            )


@rule(
    "EXEC004",
    "Every credential is set in the launching environment (checked by name).",
    scope="world",
    example=Example(edits={"execution.credentials": ["HF_TOKEN"]}, world={"env": {}}),
)
def credentials_present(check: Check) -> Iterator[Finding]:
    world = check.world
    if world is None:
        return
    for index, name in enumerate(check.spec.execution.credentials):
        if ENV_NAME.fullmatch(name) is not None and not world.env.get(name):
            yield error(
                "EXEC004", (f"execution.credentials.{index}",),
                f"credential {name} (execution.credentials[{index}]) is not set in the launching"
                " environment",
                f"Export {name} before launching, or remove it from execution.credentials.",
            )


# W&B's own check of a project name (wandb.sdk.artifacts._validators.validate_project_name)
# refuses these characters and more than 128 characters; an entity is a path segment of the same
# URLs (wandb.ai/<entity>/<project>), so the same holds for it.
_WANDB_FORBIDDEN = "/\\#?%:"
_WANDB_MAX = 128


def wandb_name_problem(value: str) -> str | None:
    """Why `value` cannot be a W&B entity or project name, or None."""
    bad = sorted({char for char in value if char in _WANDB_FORBIDDEN or not char.isprintable()})
    if bad:
        return f"it holds {', '.join(repr(char) for char in bad)}, which W&B names cannot"
    if len(value) > _WANDB_MAX:
        return f"it is {len(value)} characters long; W&B allows at most {_WANDB_MAX}"
    return None


@rule(
    "EXEC005",
    "logger wandb needs execution.wandb (entity, project) and WANDB_API_KEY in credentials.",
    example=Example(edits={"logger": "wandb"}),
    reads_plan=False,
)
def wandb_identity(check: Check) -> Iterator[Finding]:
    spec = check.spec
    wandb = spec.execution.wandb
    if spec.logger != "wandb":
        if wandb is not None:
            yield warning(
                "EXEC005", ("execution.wandb", "logger"),
                f"execution.wandb is set but logger is {spec.logger}, so nothing goes to W&B",
                "Set logger to wandb, or execution.wandb to null.",
            )
        return
    if wandb is None:
        yield error(
            "EXEC005", ("execution.wandb", "logger"),
            "logger wandb needs execution.wandb (entity and project), but it is null",
            "Set execution.wandb to {entity: <team>, project: <project>}.",
        )
    else:
        for field in ("entity", "project"):
            value = getattr(wandb, field)
            if not value.strip():
                yield error(
                    "EXEC005", (f"execution.wandb.{field}",),
                    f"logger wandb needs execution.wandb.{field}, but it is empty",
                    f"Set execution.wandb.{field}.",
                )
                continue
            problem = wandb_name_problem(value)
            if problem:
                yield error(
                    "EXEC005", (f"execution.wandb.{field}",),
                    f"execution.wandb.{field} {value[:60]!r} is not a W&B name: {problem}",
                    f"Set execution.wandb.{field} to the {field} as W&B shows it in the run's"
                    " URL (wandb.ai/<entity>/<project>).",
                )
    if "WANDB_API_KEY" not in spec.execution.credentials:
        yield error(
            "EXEC005", ("execution.credentials", "logger"),
            "logger wandb needs WANDB_API_KEY among execution.credentials",
            "Add WANDB_API_KEY to execution.credentials (the name; its value stays in your"
            " environment).",
        )


@rule(
    "EXEC006",
    "timeout_minutes >= 1 and max_retries >= 0.",
    example=Example(edits={"execution.timeout_minutes": 0}),
    reads_plan=False,
)
def limits(check: Check) -> Iterator[Finding]:
    execution = check.spec.execution
    if execution.timeout_minutes < 1:
        yield error(
            "EXEC006", ("execution.timeout_minutes",),
            f"execution.timeout_minutes is {execution.timeout_minutes}; the job would be"
            " stopped before it starts",
            "Set execution.timeout_minutes to the wall-clock limit in minutes.",
        )
    if execution.max_retries < 0:
        yield error(
            "EXEC006", ("execution.max_retries",),
            f"execution.max_retries is {execution.max_retries}; it must be 0 or more",
            "Set execution.max_retries to 0 (no retry) or more.",
        )


@rule(
    "EXEC007",
    "The export policy is one SkyRL carries out: hf_save_interval -1 (with export_final) or"
    " >= 1; a SkyRL run that exports nothing fails; export_final false is not honoured.",
    example=Example(edits={"checkpoint.export_final": False}),
    reads_plan=False,
)
def export_policy(check: Check) -> Iterator[Finding]:
    # SkyRL 0.3.0 and 0.4.0 export only while trainer.hf_save_interval > 0
    # (RayPPOTrainer.train, skyrl/train/trainer.py: the loop's `hf_model_save` condition and
    # the "Safety net" after the loop, which exports the last step unless the loop just did;
    # tests/contract/test_export_policy_vs_skyrl.py evaluates both releases' own conditions).
    # The SkyRL mapping renders -1 with export_final as an interval no run reaches, so only
    # that final save and the epoch ends export.
    checkpoint = check.spec.checkpoint
    interval = checkpoint.hf_save_interval
    if interval == 0 or interval < -1:
        yield error(
            "EXEC007", ("checkpoint.hf_save_interval",),
            f"checkpoint.hf_save_interval is {interval}; it is -1 (export the last step only,"
            " with export_final) or the number of steps between exports",
            "Set checkpoint.hf_save_interval to -1 or a positive step count.",
        )
    elif checkpoint.export_final:
        return
    elif interval == -1 and check.spec.runtime.profile == SKYRL_PROFILE:
        yield error(
            "EXEC007", ("checkpoint.export_final", "checkpoint.hf_save_interval"),
            "checkpoint.export_final is false and hf_save_interval is -1: SkyRL"
            f" {check.spec.skyrl_release} exports nothing (RayPPOTrainer.train exports only"
            " while hf_save_interval > 0), so the run ends without the export its terminal"
            " manifest names and fails",
            "Set checkpoint.export_final to true, or hf_save_interval to a step count.",
        )
    else:
        last = (f"SkyRL {check.spec.skyrl_release} exports the last step whenever"
                " hf_save_interval > 0 (RayPPOTrainer.train's final save)"
                if check.spec.runtime.profile == SKYRL_PROFILE
                else "the smoke runtime always exports the last step")
        yield warning(
            "EXEC007", ("checkpoint.export_final", "checkpoint.hf_save_interval"),
            f"checkpoint.export_final is false, but {last}: the run ends with an export"
            " all the same",
            "Set checkpoint.export_final to true, which is what the run does.",
        )


@rule(
    "EXEC008",
    "Host resources per node (CPUs, memory, disk) are at least 1.",
    example=Example(edits={"execution.allocation.memory_gb_per_node": 0}),
    reads_plan=False,
)
def host_resources(check: Check) -> Iterator[Finding]:
    allocation = check.spec.execution.allocation
    for name in ("cpus_per_node", "memory_gb_per_node", "disk_gb_per_node"):
        value = getattr(allocation, name)
        if value < 1:
            yield error(
                "EXEC008", (f"execution.allocation.{name}",),
                f"execution.allocation.{name} is {value}; a node needs at least 1",
                f"Set execution.allocation.{name} to what one node provides.",
            )


@rule(
    "EXEC009",
    "The store answers one bounded probe (reachable, credentials accepted, bucket exists).",
    scope="world",
    example=Example(world={"store_probe": {
        "prefix": "gs://rlaunch-example/store", "state": "no-bucket",
        "answer": "bucket 'rlaunch-example': FileNotFoundError: b/rlaunch-example/o",
        "seconds": 0.3, "bound": 10.0}}),
)
def store_answers(check: Check) -> Iterator[Finding]:
    """Every world rule that reads the ledger or checkpoint roots needs the store; the probe
    (rlaunch.store.probe) asks it once, bounded, and this reports what it found, once, instead
    of each rule waiting on the client's retries and then failing on its own."""
    probe = check.world.store_probe if check.world is not None else None
    if probe is None or probe.reachable:
        return
    yield error("EXEC009", (), probe.problem(), probe.fix())


@rule(
    "EXEC010",
    "iris schedules by priority band: execution.priority is production, interactive or batch.",
    example=Example(edits={"execution.executor": "iris", "execution.cluster": "us-east-a"}),
    reads_plan=False,
)
def iris_priority_band(check: Check) -> Iterator[Finding]:
    execution = check.spec.execution
    if execution.executor == "iris" and execution.priority not in IRIS_PRIORITY_BANDS:
        yield error(
            "EXEC010", ("execution.priority", "execution.executor"),
            f"execution.priority {execution.priority!r} does not apply to executor iris, which"
            f" schedules by priority band ({', '.join(IRIS_PRIORITY_BANDS)})",
            "Set execution.priority to production, interactive or batch.",
        )
