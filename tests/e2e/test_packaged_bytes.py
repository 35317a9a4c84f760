"""`./pants package experiments::` writes, byte for byte, the golden spec.json and launch YAML of
every run (tests/render/golden): a refactor of the plugin (its fields, the spec it writes) or of
the library changes none of them. tests/render/test_golden renders the goldens' specs again
without Pants; this test is the same guarantee through the real ./pants, the plugin included.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

PantsRunner = Callable[..., "subprocess.CompletedProcess[str]"]

GOLDEN = Path(__file__).resolve().parents[1] / "render" / "golden"
# The store prefix the goldens are rendered with (tests/render/update_golden.py).
STORE = "/golden/store"


def test_packaging_every_experiment_gives_the_golden_bytes(
    pants: PantsRunner, repo_root: Path, distdir: str
) -> None:
    result = pants(f"--pants-distdir={distdir}", "package", "experiments::",
                   env={"RLAUNCH_STORE": STORE})
    assert result.returncode == 0, result.stderr
    dist = repo_root / distdir
    packaged = sorted(path.parent.relative_to(dist) for path in dist.rglob("spec.json"))
    assert packaged == sorted(path.parent.relative_to(GOLDEN) for path in GOLDEN.rglob("spec.json"))
    assert len(packaged) == 28
    changed = []
    for run in packaged:
        spec_bytes = (dist / run / "spec.json").read_bytes()
        if spec_bytes != (GOLDEN / run / "spec.json").read_bytes():
            changed.append(f"{run}/spec.json")
            continue
        # A run that names its own store renders it; the goldens all use one prefix.
        own_store = json.loads(spec_bytes)["execution"]["store_prefix"]
        launch = (dist / run / "launch.yaml").read_text()
        if own_store is not None:
            launch = launch.replace(own_store, STORE)
        if launch != (GOLDEN / run / "launch.yaml").read_text():
            changed.append(f"{run}/launch.yaml")
    assert changed == [], (
        "./pants package wrote other bytes than tests/render/golden; if that is meant, run "
        "tests/render/update_golden.py dist and say so in the commit"
    )
