"""Environment data as an input (issue 23): an artifact the task environment reads, named in
`environment_data`, materialized and staged like any input, its staged folder given to the
SkyRL setting `environment_data_setting`. SkyRL-SQL's databases are the example."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from rlaunch.paths import artifact_root
from rlaunch.render import launch_document
from rlaunch.runtimes.staging import Staged, local_overrides
from rlaunch.spec import parse_spec
from rlaunch.spec.io import SpecError
from tests.preflight.helpers import findings
from tests.preflight.recipes import SKYRL_SQL_DBS, TEXT2SQL_DB_PATH, skyrl_sql_7b

STORE = "gs://rlaunch-example/store"


def refusal(data: dict[str, Any]) -> str:
    """The message of the one problem parse_spec reports, at environment_data_setting."""
    with pytest.raises(SpecError) as raised:
        parse_spec(data, "sql")
    head = "sql: environment_data_setting: "
    text = str(raised.value)
    assert text.startswith(head)
    return text[len(head):]


def test_the_data_and_its_setting_come_together_and_name_a_string_setting() -> None:
    data = skyrl_sql_7b()
    del data["environment_data_setting"]
    assert refusal(data) == (
        "environment_data is set but environment_data_setting is not: name the SkyRL setting "
        "that reads its folder, e.g. environment.skyrl_gym.text2sql.db_path (got null)")
    data = skyrl_sql_7b()
    del data["environment_data"]
    assert refusal(data) == (
        "environment_data_setting 'environment.skyrl_gym.text2sql.db_path' is set but "
        "environment_data is not: name the artifact whose staged folder it receives (got "
        '"environment.skyrl_gym.text2sql.db_path")')
    data = skyrl_sql_7b()
    data["settings"][TEXT2SQL_DB_PATH] = "gs://elsewhere/dbs"
    assert refusal(data) == (
        "'environment.skyrl_gym.text2sql.db_path' is both environment_data_setting and a key "
        "of settings: remove it from settings (the launcher sets it to the staged folder of "
        'environment_data) (got "environment.skyrl_gym.text2sql.db_path")')
    data = skyrl_sql_7b()
    data["environment_data_setting"] = "trainer.policy.model.lora.rank"
    assert refusal(data).startswith("SkyRL 0.3.0 types 'trainer.policy.model.lora.rank' as int")


def test_the_data_is_an_input_and_its_setting_gets_the_staged_folder() -> None:
    spec = parse_spec(skyrl_sql_7b(), "sql")
    assert spec.input_identities()["environment_data"] == "skyrl-sql-653-dbs@2026.11.01"
    document = launch_document(spec, store_prefix=STORE, launcher_commit=None)
    root = artifact_root(STORE, "skyrl-sql-653-dbs", "2026.11.01")
    entry = document["inputs"]["environment_data"]
    assert (entry["identity"], entry["kind"], entry["type"], entry["uri"]) == (
        "skyrl-sql-653-dbs@2026.11.01", "dataset", "adopted", root)
    db_path = document["skyrl"]["environment"]["skyrl_gym"]["text2sql"]["db_path"]
    assert db_path == root
    staged = Staged("environment_data", entry["identity"], root, "/cache/skyrl-sql-653-dbs",
                    bytes_copied=0, files_copied=0)
    on_node = local_overrides(document["skyrl"], [staged])
    assert on_node["environment"]["skyrl_gym"]["text2sql"]["db_path"] == (
        "/cache/skyrl-sql-653-dbs")


def test_a_run_without_environment_data_keeps_its_fingerprint() -> None:
    data = skyrl_sql_7b()
    with_data = parse_spec(data, "sql").fingerprint
    del data["environment_data"], data["environment_data_setting"]
    without = parse_spec(data, "sql").fingerprint
    explicit = copy.deepcopy(data)
    explicit.update(environment_data=None, environment_data_setting=None)
    assert parse_spec(explicit, "sql").fingerprint == without != with_data


def test_an_ambient_environment_path_is_refused_with_a_fix_that_works() -> None:
    data = skyrl_sql_7b()
    del data["environment_data"], data["environment_data_setting"]
    data["settings"][TEXT2SQL_DB_PATH] = "/home/me/data/sql/db_files/data"
    [finding] = findings(data, "ART007")
    assert finding.message == (
        "settings.environment.skyrl_gym.text2sql.db_path '/home/me/data/sql/db_files/data' is "
        "an ambient path: it is in a home directory")
    assert finding.fix == (
        "Register what it points at as an artifact of kind dataset (adopted by URI and sha256, "
        "or built), put it in environment_data and move the setting to "
        "environment_data_setting: 'environment.skyrl_gym.text2sql.db_path'; the launcher "
        "stages the artifact onto every node and sets the setting to its folder.")
    # The fix, as written: the recipe with its databases as environment_data has no ART007.
    assert findings(skyrl_sql_7b(), "ART007") == []
    wrong_kind = skyrl_sql_7b()
    wrong_kind["environment_data"] = dict(SKYRL_SQL_DBS, kind="report")
    assert [f.message for f in findings(wrong_kind, "ART003")] == [
        "environment_data takes a dataset, but skyrl-sql-653-dbs@2026.11.01 is a report"]
