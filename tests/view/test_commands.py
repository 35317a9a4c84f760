"""`rlaunch ls` and `rlaunch show`: what a store's runs look like from the ledger and their
files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from rlaunch.cli import main
from rlaunch.ledger import Ledger
from rlaunch.ledger.records import set_wandb_url
from rlaunch.spec.examples import worked_example
from view.store_fixture import add_run, step_record


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    add_run(root, "countdown-lr1e-3", "dev", attempts=[("a1", range(1, 4), "SUCCEEDED")],
            wandb={"entity": "team", "project": "countdown"})
    # A resumed run: attempt a1 failed after step 3, a2 trained steps 3..5 again from the
    # checkpoint of step 2; the curve holds a2's numbers for step 3.
    add_run(root, "countdown-lr3e-3", "dev",
            attempts=[("a1", range(1, 4), "FAILED"), ("a2", range(3, 6), "SUCCEEDED")],
            scale=2.0)
    return root


def invoke(*args: str) -> str:
    outcome = CliRunner().invoke(main, list(args))
    assert outcome.exit_code == 0, outcome.output
    return outcome.output


def test_ls_lists_every_run_with_its_rewards(store: Path) -> None:
    lines = invoke("ls", "--store", str(store)).splitlines()
    assert lines[0] == (
        "RUN                   STATUS     LAST ATTEMPT  STEPS  REWARD first -> last  "
        "EVAL   AGE  W&B")
    first = lines[1].split()
    assert first[:9] == ["countdown-lr1e-3@dev", "SUCCEEDED", "a1", "3", "0.320", "->", "0.360",
                         "0.600", first[8]]
    assert first[9] == "https://wandb.ai/team/countdown"
    second = lines[2].split()
    assert second[:8] == ["countdown-lr3e-3@dev", "SUCCEEDED", "a2", "5", "0.640", "->", "0.800",
                          "1.200"]
    assert second[9] == "-"
    assert len(lines) == 3


def test_ls_shows_the_w_and_b_run_its_runtime_reported(store: Path) -> None:
    url = "https://wandb.ai/team/countdown/runs/abc123"
    Ledger(str(store)).update("countdown-lr1e-3", "dev",
                              lambda record: set_wandb_url(record, "a1", url))
    runs = json.loads(invoke("ls", "--store", str(store), "--json"))
    assert runs[0]["wandb"] == url
    assert runs[1]["wandb"] is None


def test_ls_json_holds_the_same_numbers(store: Path) -> None:
    runs = json.loads(invoke("ls", "--store", str(store), "--json"))
    assert [run["identity"] for run in runs] == ["countdown-lr1e-3@dev", "countdown-lr3e-3@dev"]
    resumed = runs[1]
    assert resumed["attempts"] == 2 and resumed["last_attempt"] == "a2"
    assert resumed["steps"] == 5
    assert resumed["reward_first"] == step_record(1, 2.0)["reward_mean"]
    assert resumed["reward_last"] == step_record(5, 2.0)["reward_mean"]
    assert resumed["eval_reward"] == 1.2
    assert resumed["wandb"] is None


def test_ls_of_an_empty_store_says_so(tmp_path: Path) -> None:
    assert invoke("ls", "--store", str(tmp_path)) == f"no runs in the ledger of {tmp_path}\n"


def test_show_prints_attempts_inputs_and_paths(store: Path) -> None:
    text = invoke("show", "countdown-lr3e-3@dev", "--store", str(store))
    assert text.startswith("countdown-lr3e-3@dev: SUCCEEDED\n")
    assert "  fingerprint          sha256:" + "a" * 64 in text
    assert "  launcher commit      " + "c" * 40 in text
    attempts = [line.split() for line in text.splitlines()
                if line.startswith("  a") and "/" not in line]
    assert [row[:2] for row in attempts] == [["a1", "FAILED"], ["a2", "SUCCEEDED"]]
    assert "steps: 5, reward 0.640 -> 0.800, eval 1.200\n" in text
    assert "smoke results: none recorded" in text
    assert (f"  model            countdown-model@2026.11.01  {store}/countdown-model/2026.11.01"
            in text)
    assert f"  attempts           {store}/countdown-lr3e-3/dev/attempts\n" in text
    assert f"  ledger_record      {store}/_ledger/countdown-lr3e-3/dev.json\n" in text


def test_show_json_is_the_record_and_where_its_files_are(store: Path) -> None:
    detail = json.loads(invoke("show", "countdown-lr1e-3@dev", "--store", str(store), "--json"))
    assert detail["record"]["identity"] == "countdown-lr1e-3@dev"
    assert [a["attempt_id"] for a in detail["record"]["attempts"]] == ["a1"]
    assert detail["summary"]["wandb"] == "https://wandb.ai/team/countdown"
    assert detail["paths"]["export"] == f"{store}/countdown-lr1e-3/dev/export"
    assert detail["terminal"] is None


def test_show_names_the_model_a_runs_export_is(store: Path) -> None:
    """The model a stage reading the run's export gets: the folder its terminal manifest names
    (SkyRL's last `global_step_N/policy`)."""
    export = f"{store}/countdown-lr1e-3/dev/export/global_step_8/policy"
    (store / "countdown-lr1e-3" / "dev" / "terminal.json").write_text(
        json.dumps({"status": "succeeded", "export_path": export}))
    text = invoke("show", "countdown-lr1e-3@dev", "--store", str(store))
    assert f"  exported_model     {export}\n" in text


def test_show_without_the_launch_yaml_says_where_it_was(store: Path) -> None:
    yaml_path = store.parent / "dist" / "countdown-lr1e-3" / "dev" / "launch.yaml"
    yaml_path.unlink()
    text = invoke("show", "countdown-lr1e-3@dev", "--store", str(store))
    assert (f"inputs: unknown (the last attempt's launch YAML is no longer at {yaml_path})"
            in text)


def test_show_of_an_unknown_run_names_the_store(store: Path) -> None:
    outcome = CliRunner().invoke(main, ["show", "nope@dev", "--store", str(store)])
    assert outcome.exit_code == 1
    assert outcome.output == (
        f"Error: nope@dev has no ledger record in the store {store} "
        f"({store}/_ledger/nope/dev.json); `rlaunch ls --store PREFIX` lists the runs of a "
        f"store\n")


def test_show_refuses_what_is_not_an_identity(store: Path) -> None:
    outcome = CliRunner().invoke(main, ["show", "countdown-lr1e-3", "--store", str(store)])
    assert outcome.exit_code == 1
    assert outcome.output == (
        "Error: 'countdown-lr1e-3' is not a run identity; write it as name@version "
        "(`rlaunch ls` lists the identities in the store)\n")


def test_status_of_a_spec_whose_ledger_path_is_too_long_names_the_spec(tmp_path: Path) -> None:
    # Found by tests/fuzz: a 1,500-character name parses, then its ledger record's file name is
    # longer than the file system allows.
    document = worked_example("colocated-1x8")
    document["name"] = "x" * 1500
    document["execution"]["store_prefix"] = str(tmp_path / "store")
    (tmp_path / "store" / "_ledger").mkdir(parents=True)  # a store with launches in it
    spec = tmp_path / "run.yaml"
    spec.write_text(yaml.safe_dump(document))
    result = CliRunner().invoke(main, ["status", str(spec)])
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: {spec}: cannot read the ledger record ")
    assert result.output.rstrip().endswith("File name too long: '"
                                           f"{tmp_path}/store/_ledger/{'x' * 1500}/"
                                           f"{document['version']}.json'")
