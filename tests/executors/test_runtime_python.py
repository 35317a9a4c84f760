"""The job's interpreter follows the runtime pin (rlaunch.executors.runtime_python): asked of
real interpreters, the launcher's own (no SkyRL) and the SkyRL contract env's (skyrl 0.3.0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contract.skyrl_env import contract_python
from executors.helpers import rendered
from rlaunch.executors import ExecutorError
from rlaunch.executors.ray_cluster import RayClusterExecutor
from rlaunch.executors.runtime_python import REHEARSAL_PYTHON_ENV, job_python, python_setting
from rlaunch.launch import LaunchRefused, LaunchRequest, launch
from rlaunch.render import LaunchDocument
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import worked_example
from rlaunch.store.fs import open_location

SETTING = "RLAUNCH_SKYRL_PYTHON"
REPO = Path(__file__).resolve().parents[2]


def skyrl_launch(tmp_path: Path, package: str = "skyrl==0.3.0") -> LaunchDocument:
    """The echo run's launch document with its runtime pinned to SkyRL instead."""
    _, launch = rendered(tmp_path)
    data = launch.to_dict()
    data["runtime"].update(name="skyrl-x", profile="skyrl", package=package,
                           entrypoint="skyrl.train.entrypoints.main_base")
    return LaunchDocument.parse(data, launch.source)


def test_the_setting_is_named_after_the_profile() -> None:
    assert python_setting("skyrl") == SETTING


def test_a_runtime_shipped_with_rlaunch_runs_on_the_launchers_interpreter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(python_setting("echo"), "/nowhere/python")
    _, launch = rendered(tmp_path)
    assert job_python(launch) == sys.executable


def test_skyrl_runs_on_the_interpreter_that_has_the_pinned_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = contract_python()
    monkeypatch.setenv(SETTING, python)
    assert job_python(skyrl_launch(tmp_path)) == python


def test_an_interpreter_without_skyrl_is_refused_with_the_setting_to_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SETTING, raising=False)
    with pytest.raises(ExecutorError) as caught:
        job_python(skyrl_launch(tmp_path))
    assert str(caught.value) == (
        f"runtime skyrl-x pins skyrl==0.3.0, but this launcher's interpreter {sys.executable} "
        f"({SETTING} is not set) has no skyrl installed: the job runs the runtime with that "
        f"interpreter. Set {SETTING} to the python of an environment with skyrl==0.3.0 installed"
    )


def test_another_release_than_the_pin_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = contract_python()
    monkeypatch.setenv(SETTING, python)
    with pytest.raises(ExecutorError) as caught:
        job_python(skyrl_launch(tmp_path, package="skyrl==0.2.0"))
    assert str(caught.value) == (
        f"runtime skyrl-x pins skyrl==0.2.0, but {SETTING}={python} has skyrl==0.3.0: the job "
        f"runs the runtime with that interpreter. Set {SETTING} to the python of an "
        f"environment with skyrl==0.2.0 installed"
    )


def test_a_setting_that_is_no_interpreter_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = str(tmp_path / "no-venv" / "bin" / "python")
    monkeypatch.setenv(SETTING, missing)
    with pytest.raises(ExecutorError) as caught:
        job_python(skyrl_launch(tmp_path))
    assert str(caught.value).startswith(f"{SETTING}={missing}: cannot run it ([Errno 2] ")
    assert str(caught.value).endswith(
        f"set {SETTING} to the python of the environment that has the runtime installed"
    )


def test_the_ray_executor_on_a_head_here_runs_skyrl_with_that_interpreter_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = contract_python()
    monkeypatch.setenv(SETTING, python)
    launch = skyrl_launch(tmp_path)
    data = launch.to_dict()
    data["execution"].update(executor="ray", address="http://127.0.0.1:8265")
    lines = RayClusterExecutor().describe(tmp_path / "launch.yaml",
                                          LaunchDocument.parse(data, launch.source))
    assert f"entrypoint: {python} -m rlaunch.runtimes.skyrl launch.yaml" in lines
    data["execution"]["address"] = "http://10.0.0.5:8265"
    lines = RayClusterExecutor().describe(tmp_path / "launch.yaml",
                                          LaunchDocument.parse(data, launch.source))
    assert "entrypoint: python -m rlaunch.runtimes.skyrl launch.yaml" in lines


def skyrl_without_store_backends(tmp_path: Path) -> str:
    """A CPython 3.12 venv holding SkyRL 0.3.0's own installed distribution (package and
    dist-info, linked from the contract env) and nothing else: neither gcsfs nor s3fs, as a
    cluster built from `pip install skyrl` without its skyrl-train extra has it."""
    contract = contract_python()
    venv = tmp_path / "skyrl-only"
    subprocess.run([contract, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    source = Path(subprocess.run(
        [contract, "-c", "import skyrl, os; print(os.path.dirname(os.path.dirname("
         "skyrl.__file__)))"], capture_output=True, text=True, check=True, timeout=120,
    ).stdout.strip())
    [site] = list((venv / "lib").glob("python3.*/site-packages"))
    for name in ("skyrl", "skyrl-0.3.0.dist-info"):
        (site / name).symlink_to(source / name)
    return str(venv / "bin" / "python")


def on_store(launch: LaunchDocument, store: str) -> LaunchDocument:
    data = launch.to_dict()
    data["artifacts"]["store_prefix"] = store
    return LaunchDocument.parse(data, launch.source)


def test_an_interpreter_without_the_stores_backend_is_refused_naming_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = skyrl_without_store_backends(tmp_path)
    monkeypatch.setenv(SETTING, python)
    launch = skyrl_launch(tmp_path)
    assert job_python(launch) == python  # a local store needs no backend
    with pytest.raises(ExecutorError) as caught:
        job_python(on_store(launch, "gs://rlaunch-bucket/store"))
    assert str(caught.value) == (
        f"the job reads and writes gs://rlaunch-bucket/store through gcsfs, fsspec's gs:// "
        f"backend, but {SETTING}={python} has no gcsfs installed (skyrl 0.3.0 brings s3fs "
        f"with its skyrl-train extra, and gcsfs with none): staging would fail in the job, "
        f"after the GPUs are allocated. Install gcsfs there (pip install gcsfs), or set "
        f"{SETTING} to the python of an environment that has it"
    )
    with pytest.raises(ExecutorError) as caught:
        job_python(on_store(launch, "s3://rlaunch-bucket/store"))
    assert str(caught.value).startswith(
        f"the job reads and writes s3://rlaunch-bucket/store through s3fs, fsspec's s3:// "
        f"backend, but {SETTING}={python} has no s3fs installed: staging would fail"
    )
    # The contract env has both, as its requirements add gcsfs by hand.
    monkeypatch.setenv(SETTING, contract_python())
    assert job_python(on_store(launch, "gs://rlaunch-bucket/store")) == contract_python()


def test_a_rehearsal_on_gs_in_an_environment_without_gcsfs_is_refused_before_anything_runs(
    gcs_store: str, tmp_path: Path
) -> None:
    """`rlaunch launch --rehearse` of a GPU experiment's run on its gs:// store, with a
    rehearsal environment that has SkyRL 0.3.0 and no gcsfs (as `pip install skyrl[...]`
    builds it): refused before an input is built, an attempt recorded or a head started."""
    python = skyrl_without_store_backends(tmp_path)
    spec = parse_spec(worked_example("colocated-1x8"))
    said: list[str] = []
    with pytest.raises(LaunchRefused) as refused:
        launch(LaunchRequest(spec=spec, rehearse=True, store=gcs_store, repo=REPO,
                             out=tmp_path / "launch.yaml",
                             env={**os.environ, REHEARSAL_PYTHON_ENV: python}),
               say=said.append)
    assert str(refused.value) == (
        f"the job reads and writes {gcs_store}/_rehearsal through gcsfs, fsspec's gs:// "
        f"backend, but {REHEARSAL_PYTHON_ENV}={python} has no gcsfs installed (skyrl 0.3.0 "
        "brings s3fs with its skyrl-train extra, and gcsfs with none): staging would fail in "
        "the job, after the GPUs are allocated. Install gcsfs there (pip install gcsfs), or "
        f"set {REHEARSAL_PYTHON_ENV} to the python of an environment that has it; nothing was "
        "built, recorded or submitted"
    )
    store = open_location(gcs_store, what="the test's store")
    assert store.fs.find(store.root) == [], "a refused rehearsal wrote into the store"
    assert not any("Ray head" in line for line in said), said
