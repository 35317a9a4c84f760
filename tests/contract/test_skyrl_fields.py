"""The catalog of SkyRL 0.3.0's config fields (src/rlaunch/spec/skyrl_fields_0_3_0.py) is what
scripts/skyrl_fields.py writes from the package installed in the contract env: never typed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from contract.skyrl_env import contract_python

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKED_IN = REPO_ROOT / "src" / "rlaunch" / "spec" / "skyrl_fields_0_3_0.py"


def test_the_checked_in_catalog_is_what_the_installed_skyrl_says(tmp_path: Path) -> None:
    written = tmp_path / "fields.py"
    done = subprocess.run(
        [contract_python(), str(REPO_ROOT / "scripts" / "skyrl_fields.py"), str(written)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert written.read_text() == CHECKED_IN.read_text(), (
        "src/rlaunch/spec/skyrl_fields_0_3_0.py is stale: run scripts/gen-skyrl-fields"
    )
