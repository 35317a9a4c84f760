"""Execution rules (rlaunch/preflight/rules/execution.py)."""

from __future__ import annotations

from preflight.helpers import example, findings, messages
from rlaunch.preflight import World

SECRET = "hf_0123456789abcdefghijklmnop"


def test_exec001_executor_registered() -> None:
    assert messages(example(edits={"execution.executor": "slurm"}), "EXEC001") == [
        "execution.executor 'slurm' is not a registered executor (dry-run, iris, local, ray)"
    ]
    for executor in ("ray", "dry-run"):
        assert messages(example(edits={"execution.executor": executor}), "EXEC001") == []


def test_exec002_executor_target() -> None:
    assert messages(example(edits={"execution.address": None}), "EXEC002") == [
        "execution.executor ray needs the Ray Jobs API address (http://host:8265), but"
        " execution.address is null"
    ]
    assert messages(example(edits={"execution.address": "ray://head:10001"}), "EXEC002") == [
        "execution.executor ray needs the Ray Jobs API address (http://host:8265), but"
        " execution.address is 'ray://head:10001'"
    ]
    assert messages(example(edits={"execution.executor": "iris", "execution.address": None}),
                    "EXEC002") == [
        "execution.executor iris needs execution.cluster or execution.address, but both are null"
    ]
    assert messages(example(edits={"execution.executor": "iris",
                                   "execution.address": "iris-controller:10000"}),
                    "EXEC002") == [
        "execution.executor iris takes execution.address as the Iris controller URL, but it is"
        " 'iris-controller:10000'"
    ]
    controller = example(edits={"execution.executor": "iris",
                                "execution.address": "http://127.0.0.1:10000"})
    assert messages(controller, "EXEC002") == []
    assert messages(example(edits={"execution.executor": "local"}), "EXEC002") == [
        "execution.executor local simulates GPUs, but execution.allocation.accelerator is 'H100'"
    ]
    local = example(edits={"execution.executor": "local", "execution.address": None,
                           "execution.allocation.accelerator": "sim"})
    assert messages(local, "EXEC002") == []
    iris = example(edits={"execution.executor": "iris", "execution.cluster": "us-east-a"})
    assert messages(iris, "EXEC002") == []
    assert messages(example(), "EXEC002") == []


def test_exec010_iris_takes_a_priority_band() -> None:
    iris = {"execution.executor": "iris", "execution.cluster": "us-east-a"}
    assert messages(example(edits={**iris, "execution.priority": "high"}), "EXEC010") == [
        "execution.priority 'high' does not apply to executor iris, which schedules by priority"
        " band (production, interactive, batch)"
    ]
    for band in ("production", "interactive", "batch"):
        assert messages(example(edits={**iris, "execution.priority": band}), "EXEC010") == []
    assert messages(example(edits={"execution.priority": "high"}), "EXEC010") == []


def test_exec003_credentials_are_names_and_a_pasted_secret_is_never_printed() -> None:
    data = example(edits={"execution.credentials": ["HF_TOKEN", SECRET, "wandb-key"]})
    found = findings(data, "EXEC003")
    assert [f.message for f in found] == [
        "execution.credentials[1] (a 29-character string, not shown in case it is a secret) is"
        " not an environment variable name [A-Z_][A-Z0-9_]*",
        "execution.credentials[2] (a 9-character string, not shown in case it is a secret) is"
        " not an environment variable name [A-Z_][A-Z0-9_]*",
    ]
    assert all(SECRET not in f.message + f.fix for f in found)
    assert messages(example(edits={"execution.credentials": ["HF_TOKEN", "_X1"]}),
                    "EXEC003") == []


def test_exec004_credentials_present_by_name_value_never_shown() -> None:
    data = example(edits={"execution.credentials": ["HF_TOKEN", "WANDB_API_KEY"]})
    env = {"WANDB_API_KEY": "secret-value-123"}
    found = findings(data, "EXEC004", world=World(env=env, store_prefix="/srv/s"))
    assert [f.message for f in found] == [
        "credential HF_TOKEN (execution.credentials[0]) is not set in the launching environment"
    ]
    assert found[0].fix == (
        "Export HF_TOKEN before launching, or remove it from execution.credentials."
    )
    full = World(env={"HF_TOKEN": "x", "WANDB_API_KEY": "y"}, store_prefix="/srv/s")
    assert messages(data, "EXEC004", world=full) == []
    assert messages(data, "EXEC004") == []  # spec scope does not read the environment


def test_exec005_wandb_identity() -> None:
    assert messages(example(edits={"logger": "wandb"}), "EXEC005") == [
        "logger wandb needs execution.wandb (entity and project), but it is null",
        "logger wandb needs WANDB_API_KEY among execution.credentials",
    ]
    empty = example(edits={"logger": "wandb", "execution.wandb": {"entity": " ", "project": "p"},
                           "execution.credentials": ["WANDB_API_KEY"]})
    assert messages(empty, "EXEC005") == [
        "logger wandb needs execution.wandb.entity, but it is empty"
    ]
    [unused] = findings(example(edits={"execution.wandb": {"entity": "e", "project": "p"}}),
                        "EXEC005")
    assert (unused.severity, unused.message) == (
        "warning", "execution.wandb is set but logger is console, so nothing goes to W&B",
    )
    good = example(edits={"logger": "wandb", "execution.wandb": {"entity": "e", "project": "p"},
                          "execution.credentials": ["WANDB_API_KEY"]})
    assert messages(good, "EXEC005") == []


def test_exec006_limits() -> None:
    data = example(edits={"execution.timeout_minutes": 0, "execution.max_retries": -1})
    assert messages(data, "EXEC006") == [
        "execution.timeout_minutes is 0; the job would be stopped before it starts",
        "execution.max_retries is -1; it must be 0 or more",
    ]
    assert messages(example(), "EXEC006") == []


def test_exec007_export_policy() -> None:
    [none] = findings(example(edits={"checkpoint.export_final": False}), "EXEC007")
    assert (none.severity, none.message) == (
        "error",
        "checkpoint.export_final is false and hf_save_interval is -1: SkyRL 0.3.0 exports"
        " nothing (RayPPOTrainer.train exports only while hf_save_interval > 0), so the run ends"
        " without the export its terminal manifest names and fails",
    )
    assert messages(example(edits={"checkpoint.hf_save_interval": 0}), "EXEC007") == [
        "checkpoint.hf_save_interval is 0; it is -1 (export the last step only, with"
        " export_final) or the number of steps between exports"
    ]
    periodic = example(edits={"checkpoint.export_final": False,
                              "checkpoint.hf_save_interval": 50})
    [ignored] = findings(periodic, "EXEC007")
    assert (ignored.severity, ignored.message, ignored.fix) == (
        "warning",
        "checkpoint.export_final is false, but SkyRL 0.3.0 exports the last step whenever"
        " hf_save_interval > 0 (RayPPOTrainer.train's final save): the run ends with an export"
        " all the same",
        "Set checkpoint.export_final to true, which is what the run does.",
    )
    smoke = example(edits={"checkpoint.export_final": False, "runtime.profile": "smoke"})
    assert messages(smoke, "EXEC007") == [
        "checkpoint.export_final is false, but the smoke runtime always exports the last step:"
        " the run ends with an export all the same"
    ]
    assert messages(example(), "EXEC007") == []
    assert messages(example(edits={"checkpoint.hf_save_interval": 50}), "EXEC007") == []


def test_exec008_host_resources() -> None:
    data = example(edits={"execution.allocation.memory_gb_per_node": 0,
                          "execution.allocation.cpus_per_node": -4})
    assert messages(data, "EXEC008") == [
        "execution.allocation.cpus_per_node is -4; a node needs at least 1",
        "execution.allocation.memory_gb_per_node is 0; a node needs at least 1",
    ]
    assert messages(example(), "EXEC008") == []


def test_exec005_refuses_names_w_and_b_refuses() -> None:
    # 'a\nb' passed check: the entity reached wandb.init and the run landed nowhere.
    odd = example(edits={"logger": "wandb", "execution.credentials": ["WANDB_API_KEY"],
                         "execution.wandb": {"entity": "a\nb", "project": "rl/" + "x" * 10}})
    assert messages(odd, "EXEC005") == [
        "execution.wandb.entity 'a\\nb' is not a W&B name: it holds '\\n', which W&B names "
        "cannot",
        "execution.wandb.project 'rl/xxxxxxxxxx' is not a W&B name: it holds '/', which W&B "
        "names cannot",
    ]
    long = example(edits={"logger": "wandb", "execution.credentials": ["WANDB_API_KEY"],
                          "execution.wandb": {"entity": "lab", "project": "p" * 129}})
    [finding] = findings(long, "EXEC005")
    assert finding.message.endswith(
        "is not a W&B name: it is 129 characters long; W&B allows at most 128")
    assert finding.fix == ("Set execution.wandb.project to the project as W&B shows it in the "
                           "run's URL (wandb.ai/<entity>/<project>).")
