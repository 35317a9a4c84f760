"""What `rlaunch plans` prints pastes into a BUILD file as it is, and the real `./pants check`
accepts the run that names its first plan (in a scratch copy of the repository); `./pants plans`
searches a run target's plans through the real Pants, and a plan that fits only with offload,
pasted with the settings printed under it, passes `./pants check` too."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from pants_scratch import ScratchRepo

EXPERIMENT = "experiments/qwen2.5-1.5b-gsm8k"
SPEC = Path(__file__).resolve().parents[1] / "render/golden" / EXPERIMENT / "grpo/spec.json"
SEPARATE = "experiments/qwen2.5-14b-separate-ref"


def paste_offload_plan(repo: ScratchRepo, printed: str) -> None:
    """The 14B run on the 4 A100-40GB `./pants plans` planned for: its first plan, the settings
    printed under it added to the run's own, the allocation the budget's."""
    first = printed.split("\n# 2. ")[0]
    name = re.findall(r'^    name="([^"]+)",$', first, flags=re.MULTILINE)[0]
    entries = re.findall(r'^#     ("[^"]+": .+,)$', first, flags=re.MULTILINE)
    assert entries == ['"trainer.policy.fsdp_config.cpu_offload": True,']
    build = repo.root / SEPARATE / "BUILD"
    text = build.read_text()
    for old, new in (('role_plan=":separate-ref-3x8"', f'role_plan=":{name}"'),
                     ("        num_nodes=3,\n        gpus_per_node=8,\n        accelerator="
                      '"H100",', "        num_nodes=1,\n        gpus_per_node=4,\n"
                      '        accelerator="A100-40GB",'),
                     ("    settings={\n", "    settings={\n        " + "\n        ".join(entries)
                      + "\n")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    build.write_text(text + "\n" + printed)


def test_the_printed_plans_pasted_into_a_build_file_pass_pants_check(
    scratch_copy: ScratchRepo, tmp_path: Path
) -> None:
    """On the session's scratch copy (its pantsd shared with other modules); the two BUILD
    files it edits are put back as they were."""
    repo = scratch_copy.view()
    originals = {path: (repo.root / path / "BUILD").read_text() for path in (EXPERIMENT, SEPARATE)}
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
        # The goal: Qwen2.5-14B has no plan on 4 A100-40GB without offload.
        # Pants 2.17 scopes a flag to the goal before it; one after the target is global.
        # The scratch copy's pantsd serves this and the check (19 s less than two cold
        # starts on this machine).
        planned = repo.pants("plans", "--nodes=1", "--gpus-per-node=4",
                             "--accelerator=A100-40GB", "--strategy=fsdp", "--allow-offload",
                             "--top=2", f"{SEPARATE}:grpo")
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert planned.stdout.startswith(
            "# 29 valid plan geometries (29 plans) on 1 x 4 A100-40GB: "), planned.stdout
        assert planned.stdout.count("\nrole_plan(\n") == 2
        # In Pants' sandbox the library finds the user's cache (XDG_CACHE_HOME, HOME) as it
        # does outside: preflight's compiled modules run there when they run here.
        state = re.compile(r", preflight (compiled|pure Python|mixed)")
        assert (state.search(planned.stdout.splitlines()[0]).group(1)
                == state.search(done.stdout.splitlines()[0]).group(1)), (done.stdout[:300],
                                                                           planned.stdout[:300])
        paste_offload_plan(repo, planned.stdout)
        result = repo.pants("check", f"{EXPERIMENT}:grpo", f"{SEPARATE}:grpo")
        said = result.stdout + result.stderr
        assert result.returncode == 0, said
        assert (f"{EXPERIMENT}:grpo ({EXPERIMENT}/BUILD:84) (gsm8k-grpo-qwen2.5-1.5b@2026.11.29):"
                " ok, 0 errors, 1 warning") in said
        assert re.search(rf"{SEPARATE}:grpo \({SEPARATE}/BUILD:\d+\)"
                         r" \(gsm8k-grpo-qwen2.5-14b-separate-ref@2026.11.29\): ok, 0 errors",
                         said), said
    finally:
        for path, text in originals.items():
            repo.write(f"{path}/BUILD", text)
