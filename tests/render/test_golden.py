"""Every experiment's launch YAML, byte for byte: a refactor of the spec or the renderer changes
none of them.

tests/render/golden holds, for each run `./pants package experiments::` packages, the spec.json
it wrote and the launch YAML rendered from it (store prefix /golden/store, no launcher commit).
A change meant to change a launch YAML updates them with tests/render/update_golden.py and says
so in its commit.
"""

from __future__ import annotations

import difflib

import pytest

from render.update_golden import GOLDEN, golden_specs, rendered

SPECS = golden_specs()


def test_every_experiment_has_a_golden():
    # 28 runs: 8 in countdown (sweep points and chain stages included), 10 of
    # qwen2.5-1.5b-gsm8k (evals and the SkyRL 0.4.0 run included), 3 of tiny-gsm8k (two
    # rehearsed stages and an eval stage), 2 each of the other three.
    assert len(SPECS) == 28


@pytest.mark.parametrize("spec_json", SPECS, ids=lambda path: str(path.parent.relative_to(GOLDEN)))
def test_launch_yaml_is_byte_identical_to_the_golden(spec_json):
    golden = spec_json.with_name("launch.yaml").read_text()
    text = rendered(spec_json)
    diff = "".join(difflib.unified_diff(golden.splitlines(True), text.splitlines(True),
                                        "golden", "rendered"))
    assert diff == "", (
        f"{spec_json.parent.relative_to(GOLDEN)}: the launch YAML changed; if that is meant, run"
        " tests/render/update_golden.py and say so in the commit\n" + diff)
