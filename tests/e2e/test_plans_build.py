"""What `rlaunch plans` prints pastes into a BUILD file as it is, and the real `./pants check`
accepts the run that names its first plan (in a scratch copy of the repository)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from pants_scratch import ScratchRepo

EXPERIMENT = "experiments/qwen2.5-1.5b-gsm8k"
SPEC = Path(__file__).resolve().parents[1] / "render/golden" / EXPERIMENT / "grpo/spec.json"


def test_the_printed_plans_pasted_into_a_build_file_pass_pants_check(
    repo_root: Path, tmp_path: Path
) -> None:
    (tmp_path / "repo").mkdir()
    repo = ScratchRepo(repo_root, tmp_path / "repo")
    try:
        spec_file = tmp_path / "spec.json"
        spec_file.write_text(json.dumps(json.loads(SPEC.read_text())))
        done = subprocess.run(
            [repo.runtime_python(), "-m", "rlaunch", "plans", str(spec_file), "--nodes", "1",
             "--gpus-per-node", "8", "--accelerator", "H100", "--top", "2"],
            cwd=repo.root, env={**repo.env, "PYTHONPATH": "src"}, capture_output=True,
            text=True, check=False,
        )
        assert done.returncode == 0, done.stderr
        first = re.findall(r'^    name="([^"]+)",$', done.stdout, flags=re.MULTILINE)[0]
        build = repo.root / EXPERIMENT / "BUILD"
        text = build.read_text()
        assert text.count('role_plan=":colocated-1x8"') == 1
        build.write_text(text.replace('role_plan=":colocated-1x8"', f'role_plan=":{first}"')
                         + "\n" + done.stdout)
        result = repo.pants("--no-pantsd", "check", f"{EXPERIMENT}:grpo")
        assert result.returncode == 0, result.stdout + result.stderr
        assert (f"{EXPERIMENT}:grpo ({EXPERIMENT}/BUILD:84) (gsm8k-grpo-qwen2.5-1.5b@2026.11.29):"
                " ok, 0 errors, 1 warning") in result.stdout + result.stderr
    finally:
        repo.close()
