"""What a rehearsal changes in a SkyRL launch (rlaunch.runtimes.skyrl_rehearse), run in the
SkyRL rehearsal env (scripts/skyrl-rehearsal-env) where transformers and torch are: a
Qwen2.5-1.5B-shaped model folder (its config.json as the Hub has it, no weights) is shrunk to 2
layers of width 64 with its tokenizer files, a model already that small and a run's export are
kept, the rows are bounded, and SkyRL's own config parser and validate_cfg accept the result.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from contract.skyrl_env import REPO_ROOT, rehearsal_python

MAKE_TOKENIZER = Path(__file__).with_name("make_tokenizer.py")
# Qwen/Qwen2.5-1.5B-Instruct's config.json (the fields a model's shape depends on).
QWEN25_15B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1536,
    "intermediate_size": 8960, "num_attention_heads": 12, "num_key_value_heads": 2,
    "num_hidden_layers": 28, "max_position_embeddings": 32768, "max_window_layers": 21,
    "vocab_size": 151936, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "eos_token_id": 4,
}
SCRIPT = """
import json, sys
from pathlib import Path
from transformers import AutoConfig, AutoModelForCausalLM
from rlaunch.runtimes.skyrl_rehearse import rehearse
big, small, export, data, cache = (Path(p) for p in sys.argv[1:6])
tree = {
    "trainer": {
        "placement": {"colocate_all": True, "policy_num_nodes": 1,
                      "policy_num_gpus_per_node": 2, "ref_num_nodes": 1,
                      "ref_num_gpus_per_node": 2},
        "algorithm": {"use_kl_loss": True},
        "policy": {"model": {"path": str(big)}}, "ref": {"model": {"path": str(big)}},
        "critic": {"model": {"path": None}},
        "train_batch_size": 256, "policy_mini_batch_size": 64, "ckpt_interval": 10,
        "hf_save_interval": -1, "export_path": "s3://b/run/export", "logger": "console",
    },
    "generator": {"n_samples_per_prompt": 8, "sampling_params": {"max_generate_length": 1024},
                  "inference_engine": {"num_engines": 2}},
    "data": {"train_data": [str(data / "train.parquet")], "val_data": [str(data / "test.parquet")]},
}
said = []
out, extra = rehearse(tree, exports=set(), seed=3, cache=cache, say=said.append)
again, _ = rehearse(tree, exports=set(), seed=3, cache=cache, say=said.append)
shrunk = Path(out["trainer"]["policy"]["model"]["path"])
config = AutoConfig.from_pretrained(shrunk)
model = AutoModelForCausalLM.from_pretrained(shrunk)
kept = {}
for folder, exports in ((small, set()), (export, {str(export)})):
    tree["trainer"]["policy"]["model"]["path"] = str(folder)
    tree["trainer"]["ref"]["model"]["path"] = str(folder)
    kept[folder.name] = rehearse(tree, exports=exports, seed=3, cache=cache,
                                 say=said.append)[0]["trainer"]["policy"]["model"]["path"]
evaluated, program = rehearse(tree, exports={str(export)}, seed=3, cache=cache,
                              say=said.append, entrypoint="skyrl.train.entrypoints.main_generate")
from rlaunch.runtimes.skyrl_rehearse import RehearsalError
try:
    rehearse(tree, exports=set(), seed=3, cache=cache, say=said.append, entrypoint="echo_argv")
    refused = None
except RehearsalError as err:
    refused = str(err)
import pyarrow.parquet as pq
print(json.dumps({
    "out": out, "extra": extra, "said": said, "same": again == out,
    "eval": {"program": program, "generator": evaluated["generator"],
             "eval_batch_size": evaluated["trainer"]["eval_batch_size"]},
    "refused": refused,
    "config": {k: getattr(config, k) for k in ("num_hidden_layers", "hidden_size",
               "num_attention_heads", "num_key_value_heads", "intermediate_size",
               "vocab_size", "max_window_layers", "tie_word_embeddings")},
    "architecture": type(model).__name__, "files": sorted(p.name for p in shrunk.iterdir()),
    "train_rows": pq.read_table(out["data"]["train_data"][0]).num_rows,
    "val_rows": pq.read_table(out["data"]["val_data"][0]).num_rows, "kept": kept,
}))
"""
VALIDATE = """
import json, sys
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.utils import validate_cfg
from rlaunch.render.skyrl import skyrl_cli_args
cfg = SkyRLTrainConfig.from_cli_overrides(skyrl_cli_args(json.loads(sys.argv[1])))
validate_cfg(cfg)
print(cfg.trainer.train_batch_size, cfg.trainer.max_training_steps,
      cfg.generator.n_samples_per_prompt, cfg.trainer.flash_attn,
      cfg.data.dataloader.num_workers)
"""


def rows(path: Path, count: int) -> None:
    pq.write_table(pa.Table.from_pylist([{"index": index} for index in range(count)]), path)


def test_the_model_shrinks_to_its_architecture_and_the_rows_and_batch_to_four_steps(
    tmp_path: Path,
) -> None:
    python = rehearsal_python()
    big, small, export, data = (tmp_path / name for name in ("qwen", "tiny", "export", "data"))
    # The same tokenizer in each folder, made by one run (one transformers import).
    done = subprocess.run([python, str(MAKE_TOKENIZER), str(big), str(small), str(export)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    (big / "config.json").write_text(json.dumps(QWEN25_15B))
    (big / "model-00001-of-00002.safetensors").write_bytes(b"not read")
    tiny = dict(QWEN25_15B, num_hidden_layers=2, hidden_size=64, intermediate_size=128,
                num_attention_heads=4)
    (small / "config.json").write_text(json.dumps(tiny))
    (export / "config.json").write_text(json.dumps(QWEN25_15B))
    data.mkdir()
    rows(data / "train.parquet", 50)
    rows(data / "test.parquet", 7)
    done = subprocess.run(
        [python, "-c", SCRIPT, str(big), str(small), str(export), str(data),
         str(tmp_path / "cache")],
        capture_output=True, text=True, timeout=600, check=False,
        env={"PYTHONPATH": str(REPO_ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    out = found["out"]
    shrunk = out["trainer"]["policy"]["model"]["path"]
    # One shrunk copy for the policy and its reference; the same folder the second time.
    assert out["trainer"]["ref"]["model"]["path"] == shrunk and found["same"]
    # In the node cache as staging names its folders: {name}/{version-fingerprint}-{digest}.
    assert Path(shrunk).parent == tmp_path / "cache" / "models" / tmp_path.name
    assert Path(shrunk).name.startswith("qwen-")
    assert found["architecture"] == "Qwen2ForCausalLM"
    assert found["config"] == {
        "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 151936,
        "max_window_layers": 2, "tie_word_embeddings": True,
    }
    # The tokenizer's files, SkyRL's weights written by transformers, none of the source's.
    assert found["files"] == ["chat_template.jinja", "config.json", "generation_config.json",
                              "model.safetensors", "tokenizer.json", "tokenizer_config.json"]
    assert found["said"][0] == (
        f"rehearsal: trainer.policy.model.path {big} -> {shrunk} (Qwen2ForCausalLM, 2 layers "
        "of width 64, vocabulary 151936, random weights, the same tokenizer files)")
    # A model no larger than a rehearsal's, and a run's export, are trained from as they are.
    assert found["kept"] == {"tiny": str(small), "export": str(export)}
    assert (f"rehearsal: trainer.policy.model.path {small}: Qwen2ForCausalLM, 2 layers of "
            "width 64, no larger than a rehearsal's, trained from as it is") in found["said"]
    assert (f"rehearsal: trainer.policy.model.path {export}: a run's export, trained from as "
            "it is") in found["said"]
    # One prompt per data-parallel rank (2), 4 steps: 8 training rows, one eval batch.
    assert (found["train_rows"], found["val_rows"]) == (8, 2)
    trainer = out["trainer"]
    assert (trainer["train_batch_size"], trainer["policy_mini_batch_size"],
            trainer["micro_train_batch_size_per_gpu"], trainer["max_training_steps"]) == (
        2, 2, 1, 4)
    assert out["generator"]["n_samples_per_prompt"] == 4
    assert out["generator"]["sampling_params"]["max_generate_length"] == 24
    # The run's own checkpoint and export settings are SkyRL's to act on, untouched.
    assert (trainer["ckpt_interval"], trainer["hf_save_interval"], trainer["export_path"]) == (
        10, -1, "s3://b/run/export")
    # SkyRL's training entrypoint, handing over to the CPU module itself.
    assert found["extra"] == ["-m", "skyrl.train.entrypoints.main_base",
                              "trainer.override_entrypoint=rlaunch.runtimes.skyrl_cpu"]
    # An eval stage: SkyRL's eval-only entrypoint, which reads no override_entrypoint, run by
    # the CPU module; one eval batch of at most 4 samples per prompt.
    assert found["eval"] == {
        "program": ["-m", "rlaunch.runtimes.skyrl_cpu", "skyrl.train.entrypoints.main_generate"],
        "generator": {"n_samples_per_prompt": 4, "eval_n_samples_per_prompt": 1,
                      "sampling_params": {"max_generate_length": 24},
                      "eval_sampling_params": {"max_generate_length": 24},
                      "inference_engine": {"num_engines": 2}},
        "eval_batch_size": 2,
    }
    assert found["said"][-1] == (
        "rehearsal: an eval of 2 row(s) x 1 sample(s), at most 24 generated tokens; SkyRL's "
        "eval-only entrypoint with CPU engines (python -m rlaunch.runtimes.skyrl_cpu "
        "skyrl.train.entrypoints.main_generate)")
    assert found["refused"] == (
        "runtime.entrypoint echo_argv cannot be rehearsed: a rehearsal runs SkyRL 0.3.0's "
        "skyrl.train.entrypoints.main_base or skyrl.train.entrypoints.main_generate with CPU "
        "workers and engines")
    # SkyRL's own parser and validator accept the rehearsal's overrides.
    checked = subprocess.run([python, "-c", VALIDATE, json.dumps(out)], capture_output=True,
                             text=True, timeout=300, check=False,
                             env={"PYTHONPATH": str(REPO_ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.split() == ["2", "4", "4", "False", "0"]
