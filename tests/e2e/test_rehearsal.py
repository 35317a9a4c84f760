"""`./pants run experiments/tiny-gsm8k:<run> -- --rehearse`, end to end: SkyRL 0.3.0's own
training loop on this machine's CPU (docs/rehearsal.md).

The real ./pants (a scratch copy of the repository), the experiment's model and data served by
the local Hub (tests/hubserver.py: the model made by tests/contract/make_tiny_model.py, the
rows by tests/gsm8kdata.py), the store on moto's S3 server (tests/objectstores.py), one local
Ray head for the module started by the rehearsal environment's Ray (as a rehearsal starts it),
and the rehearsal environment (scripts/skyrl-rehearsal-env) as the job's interpreter. SkyRL
trains, evaluates, checkpoints and exports with its own code (rlaunch.runtimes.skyrl_cpu
replaces only its GPU workers and vLLM engines); the tests assert the files SkyRL wrote into
S3, and that `transformers` loads its export.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from pants_scratch import ScratchRepo

import gsm8kdata
from contract.skyrl_env import rehearsal_python
from executors.support import HeadWatch
from hubserver import hub_environment, serve_hub
from objectstores import ObjectStoreServer
from rlaunch.executors.local_head import ensure_head
from rlaunch.spec.execution import Allocation

REPO_ROOT = Path(__file__).resolve().parents[2]
MAKE_MODEL = REPO_ROOT / "tests" / "contract" / "make_tiny_model.py"
MODEL_REPO = "rlaunch-tests/tiny-qwen2-chat"
MODEL_COMMIT = "c0ffee0000000000000000000000000000000001"
DATA_REPO = "rlaunch-tests/gsm8k-sample"
DATA_COMMIT = "c0ffee0000000000000000000000000000000002"
VERSION = "2026.12.01"
# experiments/tiny-gsm8k:local-1x1's allocation, as its BUILD declares it.
ALLOCATION = Allocation(num_nodes=1, gpus_per_node=1, accelerator="sim", cpus_per_node=4,
                        memory_gb_per_node=8, disk_gb_per_node=10)


@pytest.fixture(scope="module")
def python() -> str:
    return rehearsal_python()


@pytest.fixture(scope="module")
def scratch(repo_root: Path, s3_server: ObjectStoreServer, python: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScratchRepo]:
    root = tmp_path_factory.mktemp("rehearsal")
    model = root / "model"
    done = subprocess.run([python, str(MAKE_MODEL), str(model)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    [data] = gsm8kdata.repos().values()
    repos = {
        ("models", MODEL_REPO, MODEL_COMMIT): {path.name: path.read_bytes()
                                               for path in model.iterdir()},
        ("datasets", DATA_REPO, DATA_COMMIT): data,
    }
    (root / "repo").mkdir()
    repo = ScratchRepo(repo_root, root / "repo")
    repo.commit_all("the repository as it is")
    # One local Ray head for the module, started as a rehearsal starts it (by the rehearsal
    # environment's Ray, for :local-1x1's allocation) and owned by this process.
    heads = HeadWatch(root / "head")
    try:
        ensure_head(ALLOCATION, heads.state_dir, lambda message: None, python=python)
        heads.snapshot()
        with serve_hub(repos) as (url, _):
            repo.env.update(hub_environment(url))
            repo.env.update(s3_server.env())
            repo.env.update({
                "RLAUNCH_STORE": s3_server.prefix("rehearsal-store"),
                "RLAUNCH_REHEARSAL_PYTHON": python,
                "RLAUNCH_NODE_CACHE": str(root / "node-cache"),
                "RLAUNCH_LOCAL_HEAD_DIR": str(heads.state_dir),
            })
            yield repo
    finally:
        repo.close()
        heads.finish()


def files_under(s3_server: ObjectStoreServer, uri: str) -> dict[str, int]:
    fs = s3_server.filesystem()
    base = uri.removeprefix("s3://").rstrip("/") + "/"
    return {path[len(base):]: int(info["size"])
            for path, info in fs.find(uri, detail=True).items()}


def job_logs(s3_server: ObjectStoreServer, prefix: str) -> str:
    """Every attempt's job.log under `prefix`, for a failure's message."""
    fs = s3_server.filesystem()
    return "\n".join(f"== {path}\n" + fs.cat_file(path).decode(errors="replace")
                     for path in sorted(fs.glob(f"{prefix}/**/attempts/*/job.log")))


LOAD_EXPORT = """
import json, sys
import fsspec, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
folder = sys.argv[1]
model = AutoModelForCausalLM.from_pretrained(folder)
tokenizer = AutoTokenizer.from_pretrained(folder)
ids = tokenizer.apply_chat_template([{"role": "user", "content": "How many apples?"}],
                                    add_generation_prompt=True, return_tensors="pt")
out = model.generate(ids if torch.is_tensor(ids) else ids["input_ids"], max_new_tokens=3)
print(json.dumps({"class": type(model).__name__, "layers": model.config.num_hidden_layers,
                  "generated": out.shape[-1]}))
"""


def load_export(python: str, s3_server: ObjectStoreServer, uri: str, into: Path) -> dict:
    """`transformers` loads the export SkyRL wrote (downloaded from S3 into `into`) and
    generates with it, in the rehearsal environment."""
    s3_server.filesystem().get(uri.rstrip("/") + "/", str(into), recursive=True)
    done = subprocess.run([python, "-c", LOAD_EXPORT, str(into)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_skyrls_own_loop_trains_checkpoints_and_exports_into_the_rehearsal_store(
    scratch: ScratchRepo, s3_server: ObjectStoreServer, python: str, tmp_path: Path
) -> None:
    result = scratch.pants("run", "experiments/tiny-gsm8k:grpo", "--", "--rehearse")
    out, err = result.stdout, result.stderr
    store = scratch.env["RLAUNCH_STORE"]
    assert result.returncode == 0, out + err + job_logs(s3_server, store)
    root = f"{store}/_rehearsal/tiny-gsm8k-grpo/{VERSION}"
    files = files_under(s3_server, root)
    fs = s3_server.filesystem()
    # SkyRL's own loop: its config checks, its trainer, 4 steps with an eval every 2.
    assert "rlaunch: starting SkyRL: -m skyrl.train.entrypoints.main_base" in out
    assert "rehearsal: 4 steps of 1 prompt(s) x 4 samples" in out
    assert "Finished: 'step'" in out and "Started: 'eval'" in out
    assert "rlaunch.runtimes.skyrl_cpu: engine 0 loaded the policy's" in out
    # What SkyRL wrote, as SkyRL writes it (RayPPOTrainer.save_checkpoints, save_models):
    # a checkpoint every 2 steps, of which max_ckpts_to_keep=1 is kept, its pointer last.
    assert fs.cat_file(f"{root}/checkpoints/latest_ckpt_global_step.txt").decode() == "4"
    assert sorted({name.split("/")[1] for name in files if name.startswith("checkpoints/g")}) \
        == ["global_step_4"]
    for name in ("checkpoints/global_step_4/trainer_state.pt",
                 "checkpoints/global_step_4/data.pt",
                 "checkpoints/global_step_4/policy/model_world_size_1_rank_0.pt",
                 "checkpoints/global_step_4/policy/optim_world_size_1_rank_0.pt",
                 "checkpoints/global_step_4/policy/huggingface/config.json"):
        assert files.get(name, 0) > 0, (name, files)
    # An HF export every hf_save_interval=2 steps: global_step_2 and global_step_4.
    for step in (2, 4):
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            assert files.get(f"export/global_step_{step}/policy/{name}", 0) > 0, files
    manifest = json.loads(fs.cat_file(f"{root}/terminal.json"))
    assert manifest["status"] == "succeeded"
    assert manifest["final_step"] == 4
    assert manifest["export_path"] == f"{root}/export/global_step_4/policy"
    assert "rlaunch: SkyRL's latest checkpoint pointer names global_step_4" in err
    assert f"rlaunch: terminal manifest {root}/terminal.json: status succeeded, final step 4" \
        in err
    # The export is a model transformers loads and generates with.
    loaded = load_export(python, s3_server, manifest["export_path"], tmp_path / "export")
    assert loaded["class"] == "Qwen2ForCausalLM" and loaded["layers"] == 2
    # Nothing is recorded in the store itself: no ledger, no run folder.
    assert not fs.exists(f"{store}/_ledger/tiny-gsm8k-grpo")
    assert not fs.exists(f"{store}/tiny-gsm8k-grpo")


def test_the_second_stage_rehearses_from_the_first_stages_export(
    scratch: ScratchRepo, s3_server: ObjectStoreServer
) -> None:
    """Runs after the first test: the first stage's rehearsal finished, so it is reused."""
    result = scratch.pants("run", "experiments/tiny-gsm8k:grpo-stage2", "--", "--rehearse")
    out, err = result.stdout, result.stderr
    store = scratch.env["RLAUNCH_STORE"]
    assert result.returncode == 0, out + err + job_logs(s3_server, store)
    assert "1 to launch, 1 reused" in out, out
    first = f"{store}/_rehearsal/tiny-gsm8k-grpo/{VERSION}"
    root = f"{store}/_rehearsal/tiny-gsm8k-grpo-stage2/{VERSION}"
    fs = s3_server.filesystem()
    [log] = fs.glob(f"{root}/attempts/*/job.log")
    job = fs.cat_file(log).decode()
    # The model it trains from is the first stage's export, staged from S3 as it is.
    assert f"rlaunch: staged path trainer.policy.model.path: {first}/export -> " in job, job
    assert "a run's export, trained from as it is" in job
    manifest = json.loads(fs.cat_file(f"{root}/terminal.json"))
    assert manifest["final_step"] == 4
    assert fs.cat_file(f"{root}/checkpoints/latest_ckpt_global_step.txt").decode() == "4"
    assert fs.exists(f"{root}/export/global_step_4/policy/model.safetensors")
