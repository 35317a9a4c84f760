"""`./pants run experiments/tiny-gsm8k:<run> -- --rehearse`, end to end: SkyRL 0.3.0's own
training loop on this machine's CPU (docs/rehearsal.md).

The real ./pants (a scratch copy of the repository), the experiment's model and data served by
the local Hub (tests/hubserver.py: the model made by tests/contract/make_tiny_model.py, the
rows by tests/gsm8kdata.py), the store on moto's S3 server (tests/objectstores.py), one local
Ray head for the module started by the rehearsal environment's Ray (as a rehearsal starts it),
and the rehearsal environment (scripts/skyrl-rehearsal-env) as the job's interpreter. SkyRL
trains, evaluates, checkpoints and exports with its own code (rlaunch.runtimes.skyrl_cpu
replaces only its GPU workers and vLLM engines); the tests assert the files SkyRL wrote into
S3, and that `transformers` loads its export. An eval stage of the first stage's export runs
SkyRL's eval-only entrypoint (main_generate) the same way, and the adapter's report is made of
the files SkyRL dumped. Then rlaunch reads what SkyRL wrote again: the weights each sync gave
the CPU engine against SkyRL's exports, the resume rules on SkyRL's checkpoint root, the
adapter's refusal to resume it after the upstream export changed, and the launcher's record of
an export recorded whole by an older rlaunch.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pants_scratch import ScratchRepo

import gsm8kdata
from contract.skyrl_env import rehearsal_python
from hubserver import hub_environment, serve_hub
from objectstores import ObjectStoreServer
from rlaunch.builders import BuildError, materialize_artifacts
from rlaunch.executors import ExecutorOptions
from rlaunch.executors.follow import Redactor, stream
from rlaunch.executors.local import LocalExecutor
from rlaunch.executors.runtime_python import REHEARSAL_PYTHON_ENV
from rlaunch.paths import ATTEMPT_ENV, run_paths
from rlaunch.preflight import World, run_preflight
from rlaunch.preflight.commands import with_ledger
from rlaunch.render import LaunchDocument
from rlaunch.runtimes.skyrl import REHEARSE_FLAG
from rlaunch.runtimes.staging import NODE_CACHE_ENV
from rlaunch.spec import RunExport, parse_spec
from rlaunch.status import AttemptStatus

MODEL_REPO = "rlaunch-tests/tiny-qwen2-chat"
MODEL_COMMIT = "c0ffee0000000000000000000000000000000001"
DATA_REPO = "rlaunch-tests/gsm8k-sample"
DATA_COMMIT = "c0ffee0000000000000000000000000000000002"
VERSION = "2026.12.01"


@pytest.fixture(scope="module")
def python() -> str:
    return rehearsal_python()


@pytest.fixture(scope="module")
def scratch(scratch_copy: ScratchRepo, s3_server: ObjectStoreServer, python: str,
            tiny_model: Path, skyrl_head: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[ScratchRepo]:
    """The session's scratch copy of the repository as it is (its pantsd shared with
    other modules), in this module's environment."""
    root = tmp_path_factory.mktemp("rehearsal")
    [data] = gsm8kdata.repos().values()
    repos = {
        ("models", MODEL_REPO, MODEL_COMMIT): {path.name: path.read_bytes()
                                               for path in tiny_model.iterdir()},
        ("datasets", DATA_REPO, DATA_COMMIT): data,
    }
    repo = scratch_copy.view()
    with serve_hub(repos) as (url, _):
        repo.env.update(hub_environment(url))
        repo.env.update(s3_server.env())
        repo.env.update({
            "RLAUNCH_STORE": s3_server.prefix("rehearsal-store"),
            "RLAUNCH_REHEARSAL_PYTHON": python,
            "RLAUNCH_NODE_CACHE": str(root / "node-cache"),
            # The session's head for :local-1x2's allocation, started as a rehearsal
            # starts it (by the rehearsal environment's Ray): every run reuses it.
            "RLAUNCH_LOCAL_HEAD_DIR": str(skyrl_head),
        })
        yield repo


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


@pytest.fixture(scope="module")
def rehearsed(scratch: ScratchRepo, s3_server: ObjectStoreServer
              ) -> subprocess.CompletedProcess[str]:
    """One `./pants run` of the second stage with --rehearse, for the module: its pipeline
    rehearses the first stage, then the second from the first's export. The tests read what
    it wrote."""
    started = time.monotonic()
    result = scratch.pants("run", "experiments/tiny-gsm8k:grpo-stage2", "--", "--rehearse")
    print(f"rehearsal of both stages: {time.monotonic() - started:.0f} s")
    store = scratch.env["RLAUNCH_STORE"]
    assert result.returncode == 0, (result.stdout + result.stderr
                                    + job_logs(s3_server, store))
    return result


def test_the_pipeline_rehearses_the_first_stage_then_the_second(
    rehearsed: subprocess.CompletedProcess[str],
) -> None:
    out = rehearsed.stdout
    assert ("pipeline of tiny-gsm8k-grpo-stage2@2026.12.01: 2 run(s), upstream first; 2 to "
            "launch, 0 reused") in out
    assert "[1/2] tiny-gsm8k-grpo@2026.12.01: SUCCEEDED in " in out
    assert "[2/2] tiny-gsm8k-grpo-stage2@2026.12.01: SUCCEEDED in " in out
    assert "pipeline of tiny-gsm8k-grpo-stage2@2026.12.01: 2 launched, 0 reused" in out


def test_skyrls_own_loop_trains_checkpoints_and_exports_into_the_rehearsal_store(
    rehearsed: subprocess.CompletedProcess[str], scratch: ScratchRepo,
    s3_server: ObjectStoreServer, python: str, tmp_path: Path
) -> None:
    store = scratch.env["RLAUNCH_STORE"]
    root = f"{store}/_rehearsal/tiny-gsm8k-grpo/{VERSION}"
    files = files_under(s3_server, root)
    fs = s3_server.filesystem()
    [log] = fs.glob(f"{root}/attempts/*/job.log")
    job = fs.cat_file(log).decode()
    # SkyRL's own loop: its config checks, its trainer, 4 steps with an eval every 2.
    assert "rlaunch: starting SkyRL: -m skyrl.train.entrypoints.main_base" in job
    assert "rehearsal: 4 steps of 2 prompt(s) x 4 samples" in job
    assert job.count("Finished: 'step'") == 4, job
    assert "Started: 'eval'" in job
    # What SkyRL wrote, as SkyRL writes it (RayPPOTrainer.save_checkpoints, save_models):
    # a checkpoint every 2 steps, of which max_ckpts_to_keep=1 is kept, its pointer last.
    assert fs.cat_file(f"{root}/checkpoints/latest_ckpt_global_step.txt").decode() == "4"
    assert sorted({name.split("/")[1] for name in files if name.startswith("checkpoints/g")}) \
        == ["global_step_4"]
    for name in ("checkpoints/global_step_4/trainer_state.pt",
                 "checkpoints/global_step_4/data.pt",
                 "checkpoints/global_step_4/policy/model_world_size_2_rank_0.pt",
                 "checkpoints/global_step_4/policy/optim_world_size_2_rank_1.pt",
                 "checkpoints/global_step_4/policy/huggingface/config.json"):
        assert files.get(name, 0) > 0, (name, files)
    # An HF export every hf_save_interval=2 steps: global_step_2 and global_step_4.
    for step in (2, 4):
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            assert files.get(f"export/global_step_{step}/policy/{name}", 0) > 0, files
    # The adapter's terminal manifest, from what SkyRL wrote into S3.
    manifest = json.loads(fs.cat_file(f"{root}/terminal.json"))
    export = f"{root}/export/global_step_4/policy"
    attempt = log.rsplit("/", 2)[-2]
    assert (manifest["status"], manifest["final_step"]) == ("succeeded", 4)
    assert (manifest["export_path"], manifest["attempt_id"]) == (export, attempt)
    assert manifest["run_id"] == f"tiny-gsm8k-grpo@{VERSION}"
    assert manifest["wandb_url"] is None  # logger console
    weights = hashlib.sha256(fs.cat_file(f"{export}/model.safetensors")).hexdigest()
    assert manifest["export_files"]["model.safetensors"] == weights
    assert manifest["weights_sha256"] == hashlib.sha256(
        f"{weights}  model.safetensors\n".encode()).hexdigest()
    assert sorted(manifest["export_files"]) == sorted(
        name.rsplit("/", 1)[-1] for name in files if name.startswith("export/global_step_4/"))
    assert f"rlaunch: done: step 4; export {export} " in job
    err = rehearsed.stderr
    assert "[1/2] rlaunch: SkyRL's latest checkpoint pointer names global_step_4" in err
    assert (f"[1/2] rlaunch: terminal manifest {root}/terminal.json: status succeeded, final "
            "step 4") in err
    # The export is a model transformers loads and generates with.
    loaded = load_export(python, s3_server, manifest["export_path"], tmp_path / "export")
    assert loaded["class"] == "Qwen2ForCausalLM" and loaded["layers"] == 2


def test_the_second_stage_trains_from_the_first_stages_export(
    rehearsed: subprocess.CompletedProcess[str], scratch: ScratchRepo,
    s3_server: ObjectStoreServer
) -> None:
    store = scratch.env["RLAUNCH_STORE"]
    first = f"{store}/_rehearsal/tiny-gsm8k-grpo/{VERSION}"
    root = f"{store}/_rehearsal/tiny-gsm8k-grpo-stage2/{VERSION}"
    fs = s3_server.filesystem()
    [log] = fs.glob(f"{root}/attempts/*/job.log")
    job = fs.cat_file(log).decode()
    # The model it trains from is the first stage's export: the launcher recorded SkyRL's
    # last global_step_N/policy folder as the input, and the adapter staged exactly that
    # folder's files, config.json at the root, where SkyRL's model path points.
    record = json.loads(fs.cat_file(f"{first}/export/_record.json"))
    assert record["payload_folder"] == "global_step_4/policy"
    policy = sorted(path.rsplit("/", 1)[-1]
                    for path in fs.find(f"{first}/export/global_step_4/policy"))
    assert sorted(entry["path"] for entry in record["files"]) == policy
    [staged] = (Path(scratch.env["RLAUNCH_NODE_CACHE"]) / "tiny-gsm8k-grpo").glob(f"{VERSION}-*")
    assert sorted(path.name for path in staged.iterdir()) == sorted(["_record.json", *policy])
    assert (staged / "model.safetensors").read_bytes() == fs.cat_file(
        f"{first}/export/global_step_4/policy/model.safetensors")
    assert (f"rlaunch: staged path trainer.policy.model.path: {first}/export -> {staged}"
            in job), job
    assert (f"rlaunch: rehearsal: trainer.policy.model.path {staged}: a run's export, trained "
            "from as it is") in job
    assert job.count("Finished: 'step'") == 4, job
    manifest = json.loads(fs.cat_file(f"{root}/terminal.json"))
    assert manifest["final_step"] == 4
    # On 1 x 2 simulated GPUs: two policy ranks, each saving its own shard and optimizer state
    # (FSDPStrategy.save_checkpoint's file names), and two engines.
    assert "rehearsal: 4 steps of 2 prompt(s) x 4 samples" in job, job
    for name in ("model", "optim"):
        for rank in (0, 1):
            assert fs.exists(f"{root}/checkpoints/global_step_4/policy/"
                             f"{name}_world_size_2_rank_{rank}.pt"), (name, rank)
    assert fs.cat_file(f"{root}/checkpoints/latest_ckpt_global_step.txt").decode() == "4"
    # The GPU experiments' export policy (hf_save_interval -1, export_final): the launch YAML
    # says 1000000000 and SkyRL's own loop writes the last step's export, and no other.
    yamls = [path.read_text() for path in (scratch.root / "dist").rglob("launch*.yaml")]
    stage2 = [text for text in yamls if "tiny-gsm8k-grpo-stage2" in text]
    assert stage2 and all("    hf_save_interval: 1000000000\n" in text for text in stage2), yamls
    assert fs.exists(f"{root}/export/global_step_4/policy/model.safetensors")
    assert sorted(path.rsplit("/", 1)[-1] for path in fs.ls(f"{root}/export")
                  if "global_step_" in path) == ["global_step_4"]


def test_a_rehearsal_records_nothing_in_the_store_itself(
    rehearsed: subprocess.CompletedProcess[str], scratch: ScratchRepo,
    s3_server: ObjectStoreServer
) -> None:
    store = scratch.env["RLAUNCH_STORE"]
    fs = s3_server.filesystem()
    # The rehearsal store has its own ledger; the store itself has none, and no run folder.
    assert fs.exists(f"{store}/_rehearsal/_ledger/tiny-gsm8k-grpo/{VERSION}.json")
    assert not fs.exists(f"{store}/_ledger")
    assert sorted(path.rsplit("/", 1)[-1] for path in fs.ls(store)) == ["_rehearsal"]


def test_an_eval_stage_rehearses_skyrls_eval_only_entrypoint_on_the_first_stages_export(
    rehearsed: subprocess.CompletedProcess[str], scratch: ScratchRepo,
    s3_server: ObjectStoreServer
) -> None:
    # :grpo's rehearsal finished (the module's pipeline): the eval stage alone is launched.
    started = time.monotonic()
    result = scratch.pants("run", "experiments/tiny-gsm8k:grpo-eval", "--", "--rehearse")
    print(f"rehearsal of the eval stage: {time.monotonic() - started:.0f} s")
    store = scratch.env["RLAUNCH_STORE"]
    root = f"{store}/_rehearsal/tiny-gsm8k-grpo-eval/{VERSION}"
    assert result.returncode == 0, (result.stdout + result.stderr
                                    + job_logs(s3_server, f"{store}/_rehearsal"))
    assert ("pipeline of tiny-gsm8k-grpo-eval@2026.12.01: 2 run(s), upstream first; 1 to "
            "launch, 1 reused") in result.stdout
    fs = s3_server.filesystem()
    [log] = fs.glob(f"{root}/attempts/*/job.log")
    job = fs.cat_file(log).decode()
    attempt = log.rsplit("/", 2)[-2]
    # SkyRL's eval-only entrypoint, run by the CPU module (main_generate reads no
    # override_entrypoint), on the first stage's export as it is, an eval row per engine.
    first = f"{store}/_rehearsal/tiny-gsm8k-grpo/{VERSION}"
    [staged] = (Path(scratch.env["RLAUNCH_NODE_CACHE"]) / "tiny-gsm8k-grpo").glob(f"{VERSION}-*")
    assert f"rlaunch: staged path trainer.policy.model.path: {first}/export -> {staged}" in job
    assert (f"rlaunch: rehearsal: trainer.policy.model.path {staged}: a run's export, trained "
            "from as it is") in job
    assert ("rlaunch: rehearsal: an eval of 2 row(s) x 1 sample(s), at most 24 generated "
            "tokens; SkyRL's eval-only entrypoint with CPU engines (python -m "
            "rlaunch.runtimes.skyrl_cpu skyrl.train.entrypoints.main_generate)") in job
    assert "rlaunch: starting SkyRL: -m rlaunch.runtimes.skyrl_cpu (" in job
    # What SkyRL dumped, on the node (evaluate, dump_per_dataset_eval_results): one file per
    # data source (the rows' Hub repo, "/" as "_") and the aggregate.
    dump = (Path(scratch.env["RLAUNCH_NODE_CACHE"]) / "evals"
            / f"tiny-gsm8k-grpo-eval-{VERSION}" / attempt / "dumped_evals" / "eval_only")
    assert (f"rlaunch: eval stage: SkyRL dumps its results under {dump}; the report goes to "
            f"{root}/export") in job
    assert sorted(path.name for path in dump.iterdir()) == [
        "aggregated_results.jsonl", "rlaunch-tests_gsm8k-sample.jsonl"]
    samples = [json.loads(line) for line in
               (dump / "rlaunch-tests_gsm8k-sample.jsonl").read_text().splitlines()]
    assert [(sample["env_class"], sample["data_source"]) for sample in samples] == [
        ("gsm8k", DATA_REPO)] * 2
    [metrics] = [json.loads(line) for line in
                 (dump / "aggregated_results.jsonl").read_text().splitlines()]
    rewards = [sum(sample["score"]) if isinstance(sample["score"], list) else sample["score"]
               for sample in samples]
    reward = sum(rewards) / 2
    assert metrics["eval/all/avg_score"] == reward
    # The adapter's report and manifest in the rehearsal store, made of SkyRL's dump.
    report = json.loads(fs.cat_file(f"{root}/export/report.json"))
    assert {key: report[key] for key in ("run", "runtime", "data", "environment", "rows")} == {
        "run": f"tiny-gsm8k-grpo-eval@{VERSION}",
        "runtime": "skyrl skyrl.train.entrypoints.main_generate",
        "data": f"test-prompts@{VERSION}", "environment": "gsm8k", "rows": 2}
    assert report["models"] == {"model": {
        "model": f"tiny-gsm8k-grpo@{VERSION}", "mean_reward": reward,
        "solved_fraction": sum(r > 0 for r in rewards) / 2,
        "pass_at_1": metrics["eval/all/pass_at_1"]}}
    assert report["skyrl_metrics"] == metrics
    assert [json.loads(line) for line in
            fs.cat_file(f"{root}/export/samples.jsonl").decode().splitlines()] == [
        {"model": "model", "data_source": DATA_REPO, "prompt": sample["input_prompt"],
         "completion": sample["output_response"], "reward": sample_reward,
         "stop_reason": sample["stop_reason"]} for sample, sample_reward in zip(samples, rewards)]
    manifest = json.loads(fs.cat_file(f"{root}/terminal.json"))
    assert {key: manifest[key] for key in ("status", "final_step", "report_path", "rows",
                                           "attempt_id")} == {
        "status": "succeeded", "final_step": None, "report_path": f"{root}/export/report.json",
        "rows": 2, "attempt_id": attempt}
    assert (f"rlaunch: done: eval of 2 samples, mean reward {reward:.4f}; report "
            f"{root}/export/report.json; manifest {root}/terminal.json") in job


# What SkyRL's own loop wrote, read again by rlaunch: the weight syncs to the CPU engines, the
# resume rules and SkyRL's resume, the adapter's refusal of checkpoints trained from another
# export, and the launcher's record of an export.

STAGE1, STAGE2 = "tiny-gsm8k-grpo", "tiny-gsm8k-grpo-stage2"
_SYNC = re.compile(r"engine 0 loaded the policy's (\d+) tensors \(weight sync (\d+), "
                   r"(sha256:[0-9a-f]{64})\)")


@dataclass(frozen=True)
class Stage2:
    launch_yaml: Path
    """The launch YAML the rehearsal rendered (its paths in the rehearsal store)."""
    launch: dict[str, Any]
    spec: dict[str, Any]
    """The RunSpec `./pants package` writes beside its own YAML (spec.json)."""


@pytest.fixture(scope="module")
def stage2(rehearsed: subprocess.CompletedProcess[str], scratch: ScratchRepo,
           tmp_path_factory: pytest.TempPathFactory) -> Stage2:
    """The second stage's launch YAML as the rehearsal rendered it (kept here before
    `./pants package` writes the YAML of the store itself in its place), and its spec."""
    kept = tmp_path_factory.mktemp("stage2") / "launch.yaml"
    [found] = [path for path in (scratch.root / "dist").rglob("launch.yaml")
               if yaml.safe_load(path.read_text())["run"]["id"] == f"{STAGE2}@{VERSION}"]
    shutil.copyfile(found, kept)
    packaged = scratch.pants("package", "experiments/tiny-gsm8k:grpo-stage2")
    assert packaged.returncode == 0, packaged.stderr
    spec = json.loads((scratch.root / "dist/experiments/tiny-gsm8k/grpo-stage2/spec.json"
                       ).read_text())
    return Stage2(kept, yaml.safe_load(kept.read_text()), spec)


def adapter_again(scratch: ScratchRepo, python: str, launch_yaml: Path,
                  attempt: str) -> subprocess.CompletedProcess[str]:
    """`python -m rlaunch.runtimes.skyrl LAUNCH_YAML --rehearse` on a launch YAML of the
    rehearsal, in the job's environment (the rehearsal environment, rlaunch's sources, the
    job settings and credentials) but on no Ray cluster: what the adapter does before SkyRL
    starts. A rehearsal through the launcher would first remove the previous one
    (docs/rehearsal.md)."""
    env = {**scratch.env, "PYTHONPATH": str(scratch.root / "src"), ATTEMPT_ENV: attempt}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([python, "-m", "rlaunch.runtimes.skyrl", str(launch_yaml),
                           REHEARSE_FLAG], env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def rehearse_again(scratch: ScratchRepo, python: str, launch_yaml: Path,
                   attempt: str) -> tuple[AttemptStatus, str]:
    """The SkyRL adapter with --rehearse on a launch YAML of the rehearsal, submitted to the
    module's Ray head by the local executor as a rehearsal submits it (the rehearsal
    environment, the job's settings and credentials), but not through the launcher, which
    would first remove the previous rehearsal (docs/rehearsal.md). Returns the job's end and
    its output."""
    launch = LaunchDocument.parse(yaml.safe_load(launch_yaml.read_text()))
    options = ExecutorOptions(
        say=lambda message: None, runtime_args=(REHEARSE_FLAG,),
        job_python=(REHEARSAL_PYTHON_ENV, python), keep_head=True,
        head_state_dir=Path(scratch.env["RLAUNCH_LOCAL_HEAD_DIR"]))
    credentials = {name: scratch.env[name] for name in launch.execution.env}
    output: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(NODE_CACHE_ENV, scratch.env[NODE_CACHE_ENV])
        with LocalExecutor(options) as executor:
            submission = executor.submit(launch_yaml, launch, env=credentials,
                                         attempt_id=attempt)
            status = stream(executor, submission, echo=output.append,
                            redact=Redactor(credentials.values()), files=None)
    return status, "".join(output)


def safetensors_tensors(blob: bytes) -> dict[str, bytes]:
    """A safetensors file's tensors by name, each its bytes: the file is an 8-byte
    little-endian header size, a JSON header (each tensor's dtype, shape and data offsets),
    then the data."""
    size = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    return {name: data[entry["data_offsets"][0]:entry["data_offsets"][1]]
            for name, entry in header.items() if name != "__metadata__"}


def export_digest(s3_server: ObjectStoreServer, folder: str) -> str:
    """The digest the CPU engine prints of the state dict it loads (skyrl_cpu.state_digest:
    each tensor's name, size and bytes, by name), computed from an export SkyRL wrote. Its
    model.safetensors holds the tied output embedding once (transformers' save_pretrained
    drops `lm_head.weight` when `tie_word_embeddings`); the state dict the policy sends holds
    it under both names, the same tensor."""
    fs = s3_server.filesystem()
    tensors = safetensors_tensors(fs.cat_file(f"{folder}/model.safetensors"))
    assert json.loads(fs.cat_file(f"{folder}/config.json"))["tie_word_embeddings"] is True
    assert "lm_head.weight" not in tensors
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    digest = hashlib.sha256()
    for name in sorted(tensors):
        digest.update(f"{name}\n{len(tensors[name])}\n".encode())
        digest.update(tensors[name])
    return f"sha256:{digest.hexdigest()}"


def weight_syncs(log: str) -> list[tuple[int, int, str]]:
    """(tensors, sync number, digest) of every weight sync the CPU engine printed."""
    return [(int(count), int(sync), digest) for count, sync, digest in _SYNC.findall(log)]


def test_each_weight_sync_gives_the_engine_the_weights_skyrl_exports(
    rehearsed: subprocess.CompletedProcess[str], scratch: ScratchRepo,
    s3_server: ObjectStoreServer
) -> None:
    store = scratch.env["RLAUNCH_STORE"]
    root = f"{store}/_rehearsal/{STAGE1}/{VERSION}"
    fs = s3_server.filesystem()
    [log] = fs.glob(f"{root}/attempts/*/job.log")
    syncs = weight_syncs(fs.cat_file(log).decode())
    # SkyRL syncs the policy's weights before its first step and after each step's update
    # (RayPPOTrainer.train, save_weights_for_sampler), after that step's export: sync N+1
    # carries the weights of step N, which its export at step 2 and 4 holds.
    assert [sync for _, sync, _ in syncs] == [1, 2, 3, 4, 5], syncs
    exported = {step: export_digest(s3_server, f"{root}/export/global_step_{step}/policy")
                for step in (2, 4)}
    assert syncs[2][2] == exported[2] and syncs[4][2] == exported[4]
    assert len({digest for _, _, digest in syncs}) == 5  # every step changed the weights
    tensors = safetensors_tensors(fs.cat_file(f"{root}/export/global_step_4/policy/"
                                              "model.safetensors"))
    assert {count for count, _, _ in syncs} == {len(tensors) + 1}


def test_the_resume_rules_accept_the_root_skyrls_loop_wrote(
    stage2: Stage2, scratch: ScratchRepo, s3_server: ObjectStoreServer
) -> None:
    """RES001-004 (rlaunch.preflight.rules.resume) on the second stage's checkpoint root as
    SkyRL's save_checkpoints and FSDPStrategy wrote it, listed through the store."""
    prefix = f"{scratch.env['RLAUNCH_STORE']}/_rehearsal"
    root = run_paths(prefix, STAGE2, VERSION).checkpoint_root
    data = json.loads(json.dumps(stage2.spec))
    data["execution"]["store_prefix"] = prefix
    spec = parse_spec(data, "test")
    assert spec.resume.mode == "latest"
    with s3_server.applied():
        world = with_ledger(World(git_dirty=False), spec, {})
        listing = world.checkpoints(root)
        findings = [f"{f.code} {f.message}" for f in run_preflight(spec, scope="all",
                                                                       world=world)
                    if f.code.startswith("RES") or f.code in ("PRE000", "EXEC009")]
    assert listing is not None and (listing.pointer, listing.step) == ("4", 4)
    # On 1 x 2 simulated GPUs: FSDPStrategy.save_checkpoint's three files per policy rank.
    assert listing.files is not None and {
        name for name in listing.files if "_world_size_" in name} == {
        f"policy/{kind}_world_size_2_rank_{rank}.pt"
        for kind in ("model", "optim", "extra_state") for rank in (0, 1)}
    assert findings == []


@pytest.fixture(scope="module")
def resumed(stage2: Stage2, scratch: ScratchRepo, python: str,
            s3_server: ObjectStoreServer) -> tuple[AttemptStatus, str, str]:
    """The second stage's adapter run again, unchanged, on the root SkyRL wrote: SkyRL's
    `resume_mode latest` reads its own pointer. Returns the run and the sha256 of the step-4
    export before it."""
    export = f"{stage2.launch['artifacts']['export_root']}/global_step_4/policy"
    before = hashlib.sha256(s3_server.filesystem().cat_file(
        f"{export}/model.safetensors")).hexdigest()
    started = time.monotonic()
    status, out = rehearse_again(scratch, python, stage2.launch_yaml, "resumed")
    print(f"the second stage again, resumed: {time.monotonic() - started:.0f} s")
    return status, out, before


def test_skyrl_resumes_the_checkpoint_its_own_loop_wrote(
    resumed: tuple[AttemptStatus, str, str], stage2: Stage2, s3_server: ObjectStoreServer
) -> None:
    status, out, before = resumed
    assert status == AttemptStatus.SUCCEEDED, out
    ckpt = stage2.launch["artifacts"]["checkpoint_root"]
    export = f"{stage2.launch['artifacts']['export_root']}/global_step_4/policy"
    # RayPPOTrainer.load_checkpoints reads latest_ckpt_global_step.txt and loads step 4; the
    # rehearsal's one epoch of 4 batches is then done: no step trains, the final save and
    # export are of step 4 again, with the weights it resumed.
    assert f"Loading checkpoint from: {ckpt}/global_step_4" in out
    assert "Resuming from global_step: 4" in out
    assert "Finished: 'step'" not in out
    [(_, sync, digest)] = weight_syncs(out)
    assert (sync, digest) == (1, export_digest(s3_server, export))
    fs = s3_server.filesystem()
    assert hashlib.sha256(fs.cat_file(f"{export}/model.safetensors")).hexdigest() == before
    assert f"rlaunch: done: step 4; export {export} " in out


def test_checkpoints_trained_from_another_export_are_not_resumed(
    stage2: Stage2, scratch: ScratchRepo, python: str, s3_server: ObjectStoreServer
) -> None:
    """The adapter recorded in the second stage's checkpoint root what SkyRL trained from
    there (the first stage's export); a root trained from another export of that run is
    refused before SkyRL starts."""
    launch = stage2.launch
    root = launch["artifacts"]["checkpoint_root"]
    model = launch["inputs"]["model"]
    fs = s3_server.filesystem()
    original = fs.cat_file(f"{root}/runtime.json")
    recorded = json.loads(original)
    files = json.loads(fs.cat_file(f"{model['uri']}/_record.json"))["files"]
    content = "sha256:" + hashlib.sha256("".join(
        f"{entry['sha256']}  {entry['path']}\n" for entry in files).encode()).hexdigest()
    assert recorded == {
        "runtime_fingerprint": launch["runtime"]["fingerprint"],
        "run_fingerprint": launch["run"]["fingerprint"], "run_id": launch["run"]["id"],
        "run_exports": {"model": {"identity": f"{STAGE1}@{VERSION}", "content": content}},
        "writer": "rlaunch.runtimes.skyrl"}
    recorded["run_exports"]["model"]["content"] = "sha256:" + "0" * 64
    fs.pipe_file(f"{root}/runtime.json", json.dumps(recorded).encode())
    try:
        result = adapter_again(scratch, python, stage2.launch_yaml, "refused")
    finally:
        fs.pipe_file(f"{root}/runtime.json", original)
    assert result.returncode == 2 and "starting SkyRL" not in result.stdout
    assert result.stderr == (
        f"error: checkpoint root {root} holds checkpoints trained from the export of "
        f"{STAGE1}@{VERSION} with content sha256:{'0' * 64} (inputs.model) (see "
        f"{root}/runtime.json), this run reads that export with content {content}: the "
        "upstream run was launched again since and exported other weights; resuming would go "
        "on training from the previous ones. Set resume.mode none to start over from the new "
        "export, or launch this run under a new version; SkyRL was not started\n"
    )


def test_an_export_recorded_whole_before_is_recorded_again_as_its_model(
    stage2: Stage2, scratch: ScratchRepo, s3_server: ObjectStoreServer,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record written before rlaunch recorded the manifest's folder lists the whole export
    root (every step SkyRL exported). The first stage's calendar export is recorded again as
    step 4's folder only when that record lists the same files there."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    prefix = f"{scratch.env['RLAUNCH_STORE']}/_rehearsal"
    export = parse_spec(stage2.spec, "test").model
    assert isinstance(export, RunExport) and export.name == STAGE1
    root = run_paths(prefix, STAGE1, VERSION).export_root
    fs = s3_server.filesystem()
    original = fs.cat_file(f"{root}/_record.json")
    record = json.loads(original)
    assert record["payload_folder"] == "global_step_4/policy"
    step2 = [{"path": f"global_step_2/policy/{path.rsplit('/', 1)[-1]}",
              "size": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
             for path in sorted(fs.find(f"{root}/global_step_2/policy"))
             for blob in [fs.cat_file(path)]]
    whole = dict(record, files=[
        *step2,
        *[dict(entry, path=f"global_step_4/policy/{entry['path']}") for entry in record["files"]],
    ])
    del whole["payload_folder"]
    logs: list[str] = []
    try:
        with s3_server.applied():
            fs.pipe_file(f"{root}/_record.json", json.dumps(whole).encode())
            folder = materialize_artifacts({"model": export}, prefix, log=logs.append)["model"]
            rerecorded = json.loads(fs.cat_file(f"{root}/_record.json"))
            # A whole-root record whose step 4 lists other bytes: the calendar export changed.
            [weights] = [entry for entry in whole["files"]
                         if entry["path"] == "global_step_4/policy/model.safetensors"]
            weights["sha256"] = "0" * 64
            fs.pipe_file(f"{root}/_record.json", json.dumps(whole).encode())
            with pytest.raises(BuildError) as refused:
                materialize_artifacts({"model": export}, prefix, log=lambda line: None)
    finally:
        fs.pipe_file(f"{root}/_record.json", original)
    assert logs[0] == (
        f"{STAGE1}@{VERSION}: {root}/_record.json lists the files of the whole export root, "
        "the run's terminal manifest names global_step_4/policy as its model; recording it "
        "again")
    assert (rerecorded["payload_folder"], rerecorded["files"]) == (
        "global_step_4/policy", record["files"])
    assert (folder / "model.safetensors").read_bytes() == fs.cat_file(
        f"{root}/global_step_4/policy/model.safetensors")
    assert str(refused.value) == (
        f"the export of {STAGE1}@{VERSION} changed after it was recorded: its record lists "
        "other files in global_step_4/policy than the store holds now. A calendar run runs "
        "once and its export is immutable: restore it, or relaunch the run under a new "
        "version")
