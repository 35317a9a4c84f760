"""`rlaunch plot`: the PNG is real (read back: size, not blank) and its curves are the metrics on
disk (the Line2D data of the figure matplotlib built, against metrics.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from rlaunch.cli import main
from rlaunch.view import RunStore
from rlaunch.view.plot import PANELS, draw
from view.store_fixture import add_run


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    add_run(root, "countdown-lr1e-3", "dev", attempts=[("a1", range(1, 6), "SUCCEEDED")])
    add_run(root, "countdown-lr3e-3", "dev",
            attempts=[("a1", range(1, 4), "FAILED"), ("a2", range(3, 7), "SUCCEEDED")], scale=1.5)
    add_run(root, "other", "dev", attempts=[("a1", range(1, 3), "SUCCEEDED")])
    return root


def metrics_on_disk(store: Path, name: str) -> tuple[dict[int, dict], list[dict]]:
    """Steps (a later attempt's record of a step wins) and evals, read straight from the files."""
    steps: dict[int, dict] = {}
    evals = []
    for path in sorted((store / name / "dev" / "attempts").glob("*/metrics.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            if "eval" in entry:
                evals.append(entry)
            else:
                steps[entry["step"]] = entry
    return steps, evals


def test_plot_of_a_pattern_writes_a_png_of_every_matching_run(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "sweep.png"
    outcome = CliRunner().invoke(main, ["plot", "countdown-*@dev", "--store", str(store),
                                        "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    assert outcome.output == f"{out}\n"
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size == (1500, 450)
        low, high = image.convert("L").getextrema()
    assert high - low > 100  # lines and text on a white background, not a blank image


def test_the_curves_are_the_metrics_on_disk(store: Path) -> None:
    runs = RunStore(str(store))
    names = ["countdown-lr1e-3", "countdown-lr3e-3"]
    figure = draw([runs.curve(name, "dev", runs.record(name, "dev")) for name in names])
    axes = figure.get_axes()
    assert [axis.get_title() for axis in axes] == [title for _, title in PANELS]
    for index, name in enumerate(names):
        steps, evals = metrics_on_disk(store, name)
        reward, evaluation, kl = (axis.get_lines()[index] for axis in axes)
        assert reward.get_label() == f"{name}@dev"
        assert list(reward.get_xdata()) == sorted(steps)
        assert list(reward.get_ydata()) == [steps[s]["reward_mean"] for s in sorted(steps)]
        assert list(kl.get_ydata()) == [steps[s]["kl"] for s in sorted(steps)]
        assert list(evaluation.get_xdata()) == [e["step"] for e in evals]
        assert list(evaluation.get_ydata()) == [e["reward_mean"] for e in evals]
    # The resumed run: steps 1..6, step 3 from attempt a2 (a1's step 3 was trained again).
    steps, _ = metrics_on_disk(store, "countdown-lr3e-3")
    assert sorted(steps) == [1, 2, 3, 4, 5, 6]


def test_a_pattern_that_matches_nothing_is_refused(store: Path) -> None:
    outcome = CliRunner().invoke(main, ["plot", "sweep-*@dev", "--store", str(store)])
    assert outcome.exit_code == 1
    assert outcome.output == (f"Error: 'sweep-*@dev' matches no run in the store {store}; "
                              f"`rlaunch ls` lists them\n")


def test_a_run_without_metrics_is_refused(store: Path, tmp_path: Path) -> None:
    for path in (store / "other" / "dev" / "attempts").glob("*/metrics.jsonl"):
        path.unlink()
    outcome = CliRunner().invoke(main, ["plot", "other@dev", "--store", str(store),
                                        "--out", str(tmp_path / "x.png")])
    assert outcome.exit_code == 1
    assert outcome.output == (
        f"Error: other@dev has no metrics on record: no attempt of it wrote metrics.jsonl under "
        f"{store}/other/dev/attempts\n")
    assert not (tmp_path / "x.png").exists()
