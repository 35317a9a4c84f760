"""./pants end to end: the bootstrap, Pants itself, and the rlaunch backend being loaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

PantsRunner = Callable[..., "subprocess.CompletedProcess[str]"]
PANTS_VERSION = "2.17.1"
BOOTSTRAP_MESSAGES = ("creating Pants", "installing project runtime")


def runtime_python(repo_root: Path) -> str:
    result = subprocess.run(
        [str(repo_root / "scripts" / "runtime")], capture_output=True, text=True, check=True
    )
    return result.stdout.strip()


def test_version_warm_does_no_bootstrap_work(pants: PantsRunner) -> None:
    result = pants("--version")
    assert (result.returncode, result.stdout) == (0, f"{PANTS_VERSION}\n"), result.stderr
    assert not any(message in result.stderr for message in BOOTSTRAP_MESSAGES), result.stderr


def test_list_everything(pants: PantsRunner) -> None:
    result = pants("list", "::")
    assert result.returncode == 0, result.stderr


def test_help_shows_the_rlaunch_python_option_set_to_the_project_runtime(
    pants: PantsRunner, repo_root: Path
) -> None:
    result = pants("help", "rlaunch", env={"PANTS_RLAUNCH_PYTHON": None})
    assert result.returncode == 0, result.stderr
    assert "--rlaunch-python=<str>" in result.stdout
    assert "PANTS_RLAUNCH_PYTHON" in result.stdout
    text = " ".join(result.stdout.split())
    assert f"current value: {runtime_python(repo_root)} (from env var PANTS_RLAUNCH_PYTHON)" in text


def test_an_interpreter_the_user_chose_is_kept(pants: PantsRunner) -> None:
    result = pants("help", "rlaunch", env={"PANTS_RLAUNCH_PYTHON": "/custom/bin/python"})
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "current value: /custom/bin/python (from env var PANTS_RLAUNCH_PYTHON)" in text


# The bootstrap's own failure modes, with a fresh cache and a PATH holding only the tools the script
# uses, so that no interpreter of this machine can be found (nothing gets built).


def bare_environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "sed", "grep", "sha256sum", "dirname", "readlink", "mkdir", "sort"):
        found = shutil.which(tool)
        assert found is not None, f"{tool} is needed by ./pants"
        (tools / tool).symlink_to(found)
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": str(tools),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        **extra,
    }


def test_no_python39_says_what_was_looked_for_and_how_to_get_it(
    tmp_path: Path, repo_root: Path
) -> None:
    env = bare_environment(tmp_path)
    result = subprocess.run(
        [str(repo_root / "pants"), "--version"], env=env, capture_output=True, text=True
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "error: Pants 2.17.1 runs on CPython 3.9 only, and none was found. Looked for:\n"
        "  - $PANTS_PYTHON: not set\n"
        "  - python3.9 on PATH: not found\n"
        "  - pyenv on PATH: not found\n"
        f"  - pyenv versions: no {env['HOME']}/.pyenv/versions/3.9.*/bin/python3.9 that runs as"
        " CPython 3.9\n"
        "To get one: pyenv install 3.9.18 (https://github.com/pyenv/pyenv); or set PANTS_PYTHON to"
        " the path of a CPython 3.9 interpreter.\n"
    )
    assert not (tmp_path / "cache" / "rlaunch" / "pants").exists()


def test_a_pants_python_that_is_not_39_is_an_error_not_skipped(
    tmp_path: Path, repo_root: Path
) -> None:
    env = bare_environment(tmp_path, PANTS_PYTHON=sys.executable)
    result = subprocess.run(
        [str(repo_root / "pants"), "--version"], env=env, capture_output=True, text=True
    )
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        "error: Pants 2.17.1 runs on CPython 3.9 only, and"
        f" PANTS_PYTHON={sys.executable} is not a working CPython 3.9 interpreter.\n"
        "Point PANTS_PYTHON at one (e.g. .../bin/python3.9), or unset it to look for python3.9\n"
        "on PATH and in pyenv. To install CPython 3.9: pyenv install 3.9.18"
        " (https://github.com/pyenv/pyenv)\n"
    )


def find_python(repo_root: Path, env: dict[str, str], preferred: str
                ) -> subprocess.CompletedProcess[str]:
    script = 'source scripts/lib.sh && rl_find_python 3.11 NO_SUCH_PYTHON why how "$1"'
    return subprocess.run(["bash", "-c", script, "find_python", preferred], cwd=repo_root,
                          env=env, capture_output=True, text=True)


def test_the_preferred_interpreter_comes_before_path_and_pyenv(
    tmp_path: Path, repo_root: Path
) -> None:
    """The runtime prefers the OS's CPython 3.11 (/usr/bin/python3.11: an optimized build) to one
    on PATH; one that is missing is said and passed over."""
    env = bare_environment(tmp_path)
    on_path = tmp_path / "bin" / "python3.11"
    on_path.symlink_to(sys.executable)
    preferred = tmp_path / "os" / "python3.11"
    preferred.parent.mkdir()
    preferred.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    preferred.chmod(0o755)
    result = find_python(repo_root, env, str(preferred))
    assert (result.returncode, result.stdout, result.stderr) == (0, sys.executable, "")
    on_path.unlink()
    result = find_python(repo_root, env, str(tmp_path / "missing" / "python3.11"))
    assert result.returncode == 1
    assert result.stderr.splitlines()[:4] == [
        "error: why, and none was found. Looked for:",
        "  - $NO_SUCH_PYTHON: not set",
        f"  - {tmp_path}/missing/python3.11: not a CPython 3.11 that runs",
        "  - python3.11 on PATH: not found",
    ]


# The venv builder shared by ./pants and scripts/runtime, driven directly on a tiny venv.


def build_venv(repo_root: Path, venv: Path, requirements: Path) -> subprocess.Popen[str]:
    script = 'source scripts/lib.sh && rl_build_venv "$1" "$2" "building test venv" "$3"'
    return subprocess.Popen(
        ["bash", "-c", script, "build_venv", str(venv), sys.executable, str(requirements)],
        cwd=repo_root,
        env={**os.environ, "PYTHONPATH": ""},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=300)
    return process.returncode, stdout, stderr


def test_a_venv_left_without_its_marker_is_rebuilt_then_reused(
    tmp_path: Path, repo_root: Path
) -> None:
    venv = tmp_path / "venv"
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# nothing beyond pip\n")
    venv.mkdir()
    (venv / "half-built").write_text("a build that died before writing .complete")

    returncode, stdout, stderr = finish(build_venv(repo_root, venv, requirements))
    assert (returncode, stdout) == (0, ""), stderr
    assert stderr == (
        f"building test venv in {venv} (once; log: {venv}.log) ...\ndone: building test venv\n"
    )
    assert not (venv / "half-built").exists()
    assert (venv / ".complete").is_file()
    assert (venv / "bin" / "python").exists()

    assert finish(build_venv(repo_root, venv, requirements)) == (0, "", "")


def test_concurrent_builds_build_once(tmp_path: Path, repo_root: Path) -> None:
    venv = tmp_path / "venv"
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("# nothing beyond pip\n")

    processes = [build_venv(repo_root, venv, requirements) for _ in range(3)]
    results = [finish(process) for process in processes]
    assert [returncode for returncode, _, _ in results] == [0, 0, 0], results
    assert sum(stderr.count("building test venv in") for _, _, stderr in results) == 1
    assert (venv / ".complete").is_file()


def test_a_package_the_index_lacks_fails_with_the_installers_reason(
    tmp_path: Path, repo_root: Path
) -> None:
    venv = tmp_path / "venv"
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("rlaunch-no-such-package==1.0\n")

    returncode, stdout, stderr = finish(build_venv(repo_root, venv, requirements))
    assert (returncode, stdout) == (1, "")
    lines = stderr.splitlines()
    assert lines[:2] == [
        f"building test venv in {venv} (once; log: {venv}.log) ...",
        f"error: building test venv failed; the end of {venv}.log:",
    ]
    assert lines[-2:] == [
        "error: No solution found when resolving dependencies",
        "  cause: Because rlaunch-no-such-package was not found in the package registry and you"
        " require rlaunch-no-such-package==1.0, we can conclude that your requirements are"
        " unsatisfiable.",
    ]
    assert not (venv / ".complete").exists()


def test_pips_find_links_reach_uv(tmp_path: Path, repo_root: Path) -> None:
    """uv reads no pip configuration: the find-links pip is given (a pip.conf, or here
    $PIP_FIND_LINKS) are what scripts/lib.sh hands to uv, so a wheel kept on disk for pip (this
    machine's CPU torch) is installed from there."""
    script = 'source scripts/lib.sh && rl_pip_find_links "$1"'
    env = {**os.environ, "PIP_FIND_LINKS": f"{tmp_path / 'wheels'} {tmp_path / 'more'}",
           "PIP_CONFIG_FILE": os.devnull}
    # The base interpreter: the runtime venv has no pip (uv builds it).
    python = getattr(sys, "_base_executable", sys.executable)
    result = subprocess.run(["bash", "-c", script, "links", python], cwd=repo_root, env=env,
                            capture_output=True, text=True, check=False)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"{tmp_path / 'more'}\n{tmp_path / 'wheels'}\n"
