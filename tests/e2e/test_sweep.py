"""A sweep for real: `./pants run experiments/countdown:sweep` launches its smoke and its four
points (learning rate x KL coefficient, 8 GRPO steps each) on one local Ray head; afterwards, with
the head gone, `rlaunch ls` shows every point with its rewards, `rlaunch plot` of the sweep writes
a PNG whose curves are the metrics on disk, and `rlaunch status` answers from the ledger."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from PIL import Image

from rlaunch.view import RunStore
from rlaunch.view.plot import draw

PantsRunner = Callable[..., "subprocess.CompletedProcess[str]"]

POINTS = (
    "countdown-sweep-kl0.001-lr0.0003@dev",
    "countdown-sweep-kl0.001-lr0.001@dev",
    "countdown-sweep-kl0.01-lr0.0003@dev",
    "countdown-sweep-kl0.01-lr0.001@dev",
)
SMOKE = "countdown-sweep-smoke@dev"


def rlaunch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rlaunch", *args], capture_output=True,
                          text=True, timeout=300, check=False)


def steps_on_disk(store: Path, identity: str) -> dict[int, dict]:
    name, _, version = identity.partition("@")
    steps = {}
    for path in sorted((store / name / version / "attempts").glob("*/metrics.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "eval" not in entry:
                steps[entry["step"]] = entry
    return steps


def test_a_sweep_runs_through_pants_then_ls_and_plot_show_it(
    pants: PantsRunner, repo_root: Path, distdir: str, tmp_path: Path, countdown_store: Path
) -> None:
    store = countdown_store  # the countdown inputs, built once for the session
    # A head state dir of its own: the default one is shared with every other launch on the
    # machine, whose head may be stopped under this sweep.
    swept = pants(f"--pants-distdir={distdir}", "run", "experiments/countdown:sweep",
                  env={"RLAUNCH_STORE": str(store),
                       "RLAUNCH_LOCAL_HEAD_DIR": str(tmp_path / "head")})
    assert swept.returncode == 0, swept.stdout[-4000:] + swept.stderr[-4000:]
    lines = swept.stdout.splitlines()
    # One line per point as it starts and as it ends; the smoke first.
    assert lines[0] == f"[1/5] {SMOKE}: launching"
    for index, identity in enumerate(POINTS, start=2):
        assert f"[{index}/5] {identity}: launching" in lines
        [done] = [line for line in lines if line.startswith(f"[{index}/5] {identity}: SUCC")]
        assert re.fullmatch(
            rf"\[{index}/5\] {re.escape(identity)}: SUCCEEDED in \d+ s \| 8 steps, reward "
            r"\d\.\d{3} -> \d\.\d{3}, eval \d\.\d{3}", done), done
    assert "sweep: 5 of 5 runs succeeded" in lines
    curves = repo_root / distdir / "experiments/countdown/sweep/curves.png"
    assert lines[-1] == f"sweep: curves of 4 runs (reward, eval reward, KL by step): {curves}"
    assert "rlaunch: stopping the local Ray head" in swept.stderr  # the sweep's own head

    listed = rlaunch("ls", "--store", str(store), "--json")
    assert listed.returncode == 0, listed.stderr
    runs = {run["identity"]: run for run in json.loads(listed.stdout)}
    assert set(POINTS) | {SMOKE} <= set(runs)
    for identity in POINTS:
        steps = steps_on_disk(store, identity)
        run = runs[identity]
        assert run["status"] == "SUCCEEDED" and run["steps"] == 8 == len(steps)
        assert run["reward_first"] == steps[1]["reward_mean"]
        assert run["reward_last"] == steps[8]["reward_mean"]
        assert run["eval_reward"] is not None
    table = rlaunch("ls", "--store", str(store))
    for identity in POINTS:
        row = runs[identity]
        assert (f"{row['reward_first']:.3f} -> {row['reward_last']:.3f}"
                in next(line for line in table.stdout.splitlines() if line.startswith(identity)))

    png = tmp_path / "sweep.png"
    plotted = rlaunch("plot", "countdown-sweep-k*@dev", "--store", str(store), "--out", str(png))
    assert plotted.returncode == 0, plotted.stderr
    assert plotted.stdout == f"{png}\n"
    with Image.open(png) as image:
        assert image.size == (1500, 450)
        low, high = image.convert("L").getextrema()
    assert high - low > 100
    # The figure `plot` draws for these runs holds exactly the numbers of metrics.jsonl.
    runs_store = RunStore(str(store))
    figure = draw([runs_store.curve(*identity.split("@"),
                                    runs_store.record(*identity.split("@")))
                   for identity in POINTS])
    reward_axis, _, kl_axis = figure.get_axes()
    for line, identity in zip(reward_axis.get_lines(), POINTS, strict=True):
        steps = steps_on_disk(store, identity)
        assert line.get_label() == identity
        assert list(line.get_xdata()) == list(range(1, 9))
        assert list(line.get_ydata()) == [steps[s]["reward_mean"] for s in range(1, 9)]
    for line, identity in zip(kl_axis.get_lines(), POINTS, strict=True):
        steps = steps_on_disk(store, identity)
        assert list(line.get_ydata()) == [steps[s]["kl"] for s in range(1, 9)]

    status = rlaunch("status", POINTS[-1], "--store", str(store))
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"{POINTS[-1]} attempt ")
    assert status.stdout.endswith("; from the ledger)\n")
