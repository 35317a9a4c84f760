"""Write the golden launch YAMLs of tests/render/test_golden.py, deliberately.

    PYTHONPATH=src $py tests/render/update_golden.py            # render the committed specs again
    PYTHONPATH=src $py tests/render/update_golden.py dist       # take the specs of a fresh
                                                                # `./pants package experiments::`

Run it only for a change that is meant to change what a launch YAML says, and say so in the
commit: the goldens are what proves every other change leaves the YAMLs byte for byte alone.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from rlaunch.render import render_launch
from rlaunch.spec import load_spec

GOLDEN = Path(__file__).resolve().with_name("golden")
STORE = "/golden/store"
"""The store prefix every golden is rendered with (packaging uses the user's)."""


def golden_specs() -> list[Path]:
    """Every golden spec.json, one per packaged run (`<path>/<name>/spec.json`)."""
    return sorted(GOLDEN.rglob("spec.json"))


def rendered(spec_json: Path) -> str:
    return render_launch(load_spec(spec_json), store_prefix=STORE, launcher_commit=None)


def take_specs(dist: Path) -> None:
    """Replace the golden specs with those under a `dist/` folder that `./pants package` wrote."""
    shutil.rmtree(GOLDEN, ignore_errors=True)
    for spec_json in sorted(dist.rglob("spec.json")):
        target = GOLDEN / spec_json.relative_to(dist)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spec_json, target)


def main(argv: list[str]) -> int:
    if argv:
        take_specs(Path(argv[0]))
    for spec_json in golden_specs():
        spec_json.with_name("launch.yaml").write_text(rendered(spec_json))
        print(spec_json.with_name("launch.yaml").relative_to(GOLDEN.parent))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
