"""Benchmark: a fresh clone's installs, as ./pants makes them, in an empty cache (uv's included).

uv (3rdparty/requirements-uv.txt) is installed from PyPI by pip, then the Pants venv and the
project runtime are built at once by uv (scripts/lib.sh: rl_plan_pants, rl_plan_runtime,
rl_build_pending). Prints when each was done, seconds after the start, and the machine's load.
`--pip` times instead what they were built with before: `python -m venv` and `pip install -r`,
one after the other (pip's own cache emptied too). `--only pants` builds the Pants venv alone.

    python3 benchmarks/install.py [--pip] [--only pants|runtime] [--keep]

The smallest size (`--only pants`) is what the test suite runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PLAN = {"pants": "rl_plan_pants", "runtime": "rl_plan_runtime"}


def load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


def with_uv(cache: Path, parts: list[str]) -> list[str]:
    """The scripts' way; each step's end read from its .complete marker."""
    plans = " && ".join(PLAN[part] for part in parts)
    script = f"source scripts/lib.sh && {plans} && rl_build_pending"
    started = time.time()
    subprocess.run(["bash", "-c", script], cwd=REPO, check=True,
                   env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    total = time.time() - started
    done = {"uv": next((cache / "rlaunch" / "uv").glob("*/.complete"))}
    for part in parts:
        done[part] = next((cache / "rlaunch" / part).glob("*/.complete"))
    steps = [f"{name} done after {marker.stat().st_mtime - started:.1f} s"
             for name, marker in done.items()]
    together = " (built at once)" if len(parts) > 1 else ""
    return [f"uv: {', '.join(steps)}{together}; total {total:.1f} s ({load()})"]


def with_pip(cache: Path, parts: list[str]) -> list[str]:
    """What the scripts did before: a venv with pip, then `pip install -r`, one after the
    other, with the interpreters the scripts find."""
    requirements = {"pants": "3rdparty/requirements-pants.txt",
                    "runtime": "3rdparty/requirements.lock"}
    started = time.time()
    steps = []
    for part in parts:
        find = "rl_find_python 3.9 PANTS_PYTHON x x" if part == "pants" else "rl_runtime_python"
        python = subprocess.run(["bash", "-c", f"source scripts/lib.sh && {find}"], cwd=REPO,
                                check=True, capture_output=True, text=True).stdout.strip()
        venv = cache / part
        began = time.time()
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-input",
                        "-r", str(REPO / requirements[part])], check=True,
                       env={**os.environ, "XDG_CACHE_HOME": str(cache)})
        steps.append(f"{part} {time.time() - began:.1f} s")
    return [f"pip, one after the other: {', '.join(steps)}; total {time.time() - started:.1f} s "
            f"({load()})"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pip", action="store_true", help="time the former pip installs")
    parser.add_argument("--only", choices=sorted(PLAN), help="build this venv alone")
    parser.add_argument("--keep", action="store_true", help="keep the cache folder")
    args = parser.parse_args()
    parts = [args.only] if args.only else ["pants", "runtime"]
    cache = Path(tempfile.mkdtemp(prefix="rlaunch-install-bench-"))
    try:
        lines = with_pip(cache, parts) if args.pip else with_uv(cache, parts)
    finally:
        if args.keep:
            print(f"cache kept in {cache}")
        else:
            shutil.rmtree(cache, ignore_errors=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
