"""The catalog of each SkyRL release's config fields (src/rlaunch/spec/skyrl_fields_X_Y_Z.py) is
what scripts/skyrl_fields.py writes from the package installed in that release's contract env
(scripts/skyrl-contract-env X.Y.Z): never typed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from contract.skyrl_env import RELEASES, contract_python

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("release", RELEASES)
def test_the_checked_in_catalog_is_what_the_installed_skyrl_says(
    tmp_path: Path, release: str
) -> None:
    written = tmp_path / "fields.py"
    checked_in = REPO_ROOT / "src" / "rlaunch" / "spec" / (
        f"skyrl_fields_{release.replace('.', '_')}.py")
    done = subprocess.run(
        [contract_python(release), str(REPO_ROOT / "scripts" / "skyrl_fields.py"), str(written)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert written.read_text() == checked_in.read_text(), (
        f"{checked_in.relative_to(REPO_ROOT)} is stale: run scripts/gen-skyrl-fields {release}"
    )
