"""SkyRL's own handoff check (rlaunch.runtimes.skyrl_handoff), run for real in each SkyRL
release's contract env (0.3.0 and 0.4.0: CPython 3.11 with the real torch and ray), on inputs
the tests make:

- a small word-level tokenizer trained with `tokenizers` and saved in Hugging Face format with a
  ChatML-style chat template (tests/contract/make_tokenizer.py, run in that env), and one
  saved without a template;
- GSM8K-shaped splits served by the local Hub (tests/hubserver.py) to the real huggingface_hub
  client, snapshotted by hf_snapshot and turned into prompts.parquet by prompt_parquet.

The overrides are those rlaunch renders for the documented colocated example
(`rlaunch.render.skyrl_cli_args`), with the batch sized to the test data and every path pointing
at the local files. Each bad input fails with the message that names its file and fix.

Every check of a release (CHECKS) runs in ONE process of its env (tests/contract/
handoff_batch.py: the module's own `main(argv)` per check, its stdout kept apart), made with the
inputs, so that SkyRL's imports are paid once per release; the tests read their check's result.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import gsm8kdata
from contract.skyrl_env import RELEASES, contract_python, pin_release
from contract.test_skyrl_contract import subtree_for_skyrl
from hubserver import hub_environment, serve_hub
from rlaunch.builders import build_artifact
from rlaunch.render import skyrl_cli_args
from rlaunch.spec import parse_spec
from rlaunch.spec.artifacts import BuiltArtifact
from rlaunch.tasks.parquet import write_prompts
from rlaunch.spec.examples import worked_example

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
MARKER = "SKYRL_HANDOFF "


def quiet(message: str) -> None:
    pass


@pytest.fixture(scope="module", params=RELEASES)
def inputs(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Interpreter (of each release's contract env), tokenizers and prompt files, made once per
    release for the module."""
    python = contract_python(request.param)
    root = tmp_path_factory.mktemp("handoff")
    made: dict[str, Any] = {"python": python, "release": request.param}
    variants = (("model", []), ("model-no-template", ["--no-chat-template"]))
    # Both in one run of make_tokenizer.py (one transformers import).
    done = subprocess.run(
        [python, str(HERE / "make_tokenizer.py"),
         *(arg for name, flags in variants for arg in (str(root / name), *flags))],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    made.update({name: str(root / name) for name, _ in variants})
    store = str(root / "store")
    artifacts = {
        "train": gsm8kdata.prompts(rows=12),
        "test": gsm8kdata.prompts("test", rows=4),
        "verbatim": gsm8kdata.prompts(
            name="gsm8k-verbatim", ground_truth={"column": "answer", "extract": "verbatim"}
        ),
        "commas": numbers_prompts("commas", "gsm8k", "verbatim"),
        "floats": numbers_prompts("floats", "gsm8k", "verbatim"),
        "floats-as-numbers": numbers_prompts("floats", "gsm8k", "number"),
        "aime": numbers_prompts("floats", "aime", "number"),
        "aime-commas": numbers_prompts("commas", "aime", "verbatim"),
    }
    repos = {**gsm8kdata.repos(), **numbers_repos()}
    with pytest.MonkeyPatch.context() as patch, serve_hub(repos) as (url, _):
        for key, value in hub_environment(url).items():
            patch.setenv(key, value)
        for key, artifact in artifacts.items():
            result = build_artifact(artifact, store, log=quiet)
            made[key] = str(result.local_path / "prompts.parquet")
    # prompt_parquet refuses an env class it cannot feed, and rows without a ground truth; a
    # file made otherwise (another builder, an adopted dataset) may hold either.
    rows = pq.read_table(made["train"]).to_pylist()
    made["wrong-env"] = str(root / "wrong-env.parquet")
    write_prompts(Path(made["wrong-env"]), [{**row, "env_class": "gsm8k_math"} for row in rows])
    made["no-truth"] = str(root / "no-truth.parquet")
    write_prompts(Path(made["no-truth"]), [
        {**row, "reward_spec": {**row["reward_spec"], "ground_truth": None}} for row in rows])
    made["checks"] = run_checks(made, root)
    return made


NUMBERS_REPO = "rlaunch-tests/numbers"


def numbers_repos() -> dict[tuple[str, str, str], dict[str, bytes]]:
    """A math dataset repo with two JSONL test splits of 6 rows: `commas`, whose answers are
    text and every other one written with a thousands separator (`1,250`), and `floats`,
    whose answers are JSON numbers written `27.0`."""
    def jsonl(rows: list[dict[str, Any]]) -> bytes:
        return "".join(json.dumps(row) + "\n" for row in rows).encode()

    commas = [{"question": f"What is {n} + {n}?",
               "answer": f"{2 * n:,}" if index % 2 else str(2 * n)}
              for index, n in enumerate(range(625, 631))]
    floats = [{"question": f"What is {n} + {n}?", "answer": float(2 * n)}
              for n in range(11, 17)]
    card = (b"---\nconfigs:\n- config_name: default\n  data_files:\n  - split: commas\n"
            b"    path: commas.jsonl\n  - split: floats\n    path: floats.jsonl\n---\n")
    return {("datasets", NUMBERS_REPO, "f" * 40): {
        "README.md": card, "commas.jsonl": jsonl(commas), "floats.jsonl": jsonl(floats)}}


def numbers_prompts(split: str, env_class: str, extract: str) -> Any:
    """A prompt_parquet artifact of a numbers split, for `env_class`, its ground truth the
    answer column taken with `extract`."""
    return BuiltArtifact.model_validate({
        "type": "built", "name": f"numbers-{split}-{env_class}-{extract}",
        "version": "2026.12.01", "kind": "dataset", "builder": "prompt_parquet",
        "config": {"task": "gsm8k" if env_class == "gsm8k" else "math",
                   "template": "{question} Give the final answer.",
                   "ground_truth": {"column": "answer", "extract": extract},
                   "env_class": env_class, "reward_method": "rule"},
        "deps": {"source": {"type": "hf_dataset", "name": f"numbers-{split}",
                            "version": "2026.12.01", "repo_id": NUMBERS_REPO,
                            "revision": "f" * 40, "config": None, "split": split,
                            "rows": 6}},
        "facts": None, "rows": 6,
    })


def overrides(inputs: dict[str, Any], **changes: Any) -> list[str]:
    skyrl = subtree_for_skyrl(parse_spec(
        pin_release(worked_example("colocated-1x8"), inputs["release"])))
    trainer = skyrl["trainer"]
    # 12 train rows: one batch of 8 prompts x 8 samples over 8 GPUs, micro batches of 4.
    trainer.update(train_batch_size=8, policy_mini_batch_size=8, eval_batch_size=4)
    model = changes.pop("model", inputs["model"])
    trainer["policy"]["model"]["path"] = model
    trainer["ref"]["model"]["path"] = model
    skyrl["data"] = {"train_data": [changes.pop("train", inputs["train"])],
                     "val_data": [changes.pop("val", inputs["test"])]}
    if "env_class" in changes:
        skyrl["environment"]["env_class"] = changes.pop("env_class")
    if "max_prompt_length" in changes:
        # validate_cfg: single-turn generation needs max_input_length == max_prompt_length.
        skyrl["generator"]["max_input_length"] = changes["max_prompt_length"]
    for key, value in changes.items():
        trainer[key] = value
    return skyrl_cli_args(skyrl)


CHECKS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "good": lambda inputs: overrides(inputs),
    "short-prompts": lambda inputs: overrides(inputs, max_prompt_length=8),
    "batch-16": lambda inputs: overrides(inputs, train_batch_size=16, policy_mini_batch_size=8),
    "no-truth": lambda inputs: overrides(inputs, train=inputs["no-truth"]),
    "verbatim": lambda inputs: overrides(inputs, train=inputs["verbatim"]),
    "commas": lambda inputs: overrides(inputs, val=inputs["commas"]),
    "floats": lambda inputs: overrides(inputs, val=inputs["floats"]),
    "floats-as-numbers": lambda inputs: overrides(inputs, val=inputs["floats-as-numbers"]),
    "aime": lambda inputs: overrides(inputs, train=inputs["aime"], val=inputs["aime-commas"],
                                     train_batch_size=4, policy_mini_batch_size=4,
                                     env_class="aime"),
    "wrong-env": lambda inputs: overrides(inputs, train=inputs["wrong-env"]),
    "no-template": lambda inputs: overrides(inputs, model=inputs["model-no-template"]),
    "folder": lambda inputs: overrides(inputs, train=str(Path(inputs["train"]).parent)),
    "batch-250": lambda inputs: overrides(inputs, train_batch_size=250),
}
"""Each check the tests read, by name: the overrides it runs with."""


def run_checks(inputs: dict[str, Any], root: Path) -> dict[str, Any]:
    """Every check of CHECKS, in one process of the release's contract env."""
    cases, result = root / "checks.json", root / "results.json"
    cases.write_text(json.dumps({name: argv(inputs) for name, argv in CHECKS.items()}))
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [inputs["python"], str(HERE / "handoff_batch.py"), str(cases), str(result)],
        capture_output=True, text=True, timeout=1200, check=False, env=env, cwd=HERE,
    )
    assert done.returncode == 0, f"the handoff batch crashed:\n{done.stdout}\n{done.stderr}"
    results: dict[str, Any] = json.loads(result.read_text())
    return results


def run_check(inputs: dict[str, Any], name: str) -> tuple[int, str, dict[str, Any]]:
    done = inputs["checks"][name]
    lines = [line for line in done["stdout"].splitlines() if line.startswith(MARKER)]
    assert len(lines) == 1, f"no report line:\n{done['stdout']}\n{done['crash']}"
    return done["code"], done["stdout"], json.loads(lines[0][len(MARKER):])


def the_problem(report: dict[str, Any]) -> str:
    assert report["ok"] is False
    assert len(report["problems"]) == 1, report["problems"]
    return report["problems"][0]["message"]


def test_good_inputs_pass_with_rows_kept_and_the_ground_truth_s_reward(inputs) -> None:
    code, out, report = run_check(inputs, "good")
    assert code == 0, out
    assert report["ok"] is True and report["problems"] == []
    assert report["config"] == "accepted by from_cli_overrides and validate_cfg"
    assert [(d["slot"], d["artifact"], d["rows"], d["kept"], d["dropped"])
            for d in report["data"]] == [
        ("train_data", "gsm8k-train-prompts@2026.11.02", 12, 12, 0),
        ("val_data", "gsm8k-test-prompts@2026.11.02", 4, 4, 0),
    ]
    assert report["env_class"] == "gsm8k"
    assert report["ground_truths_scored"] == {"train_data": 12, "val_data": 4}
    assert "train_data: " in out and "12 of 12 rows kept, 0 longer than 512 tokens" in out
    assert (f"env: gsm8k made on every row of train_data {inputs['train']}; the ground truth "
            "of all 12 rows earns the full reward") in out
    assert (f"env: gsm8k made on every row of val_data {inputs['test']}; the ground truth "
            "of all 4 rows earns the full reward") in out
    assert "handoff check: passed" in out


def test_a_prompt_length_that_filters_everything_names_the_length_to_use(inputs) -> None:
    code, _, report = run_check(inputs, "short-prompts")
    assert code == 1
    message = the_problem(report)
    assert message.startswith(
        f"train_data {inputs['train']} (gsm8k-train-prompts@2026.11.02): all 12 rows are longer "
        f"than trainer.max_prompt_length 8 tokens with the chat template applied (the shortest "
        f"of the first 12 is "
    ), message
    assert message.endswith(
        "so PromptDataset keeps none; raise max_prompt_length (lengths.max_prompt_length in "
        "BUILD) to at least 34, or shorten the artifact's template"
    )


def test_fewer_rows_than_one_train_batch_is_refused_before_the_gpus(inputs) -> None:
    code, _, report = run_check(inputs, "batch-16")
    assert code == 1
    assert the_problem(report) == (
        "train_data keeps 12 rows after the prompt-length filter, fewer than "
        "trainer.train_batch_size 16: SkyRL would stop in BasePPOExp.get_train_dataset after "
        "the GPUs are reserved; use more rows, a larger max_prompt_length, or a smaller "
        "train_batch_size"
    )


def test_a_template_with_no_ground_truth_names_the_artifact_and_the_fix(inputs) -> None:
    code, _, report = run_check(inputs, "no-truth")
    assert code == 1
    assert the_problem(report) == (
        f"train_data {inputs['no-truth']} ({inputs['no-truth']}): row 0 has no ground "
        f"truth (reward_spec {{'method': 'rule', 'ground_truth': None}}), and env 'gsm8k' "
        f"grades every answer against it, so every reward would be 0. Declare how the ground "
        f"truth is taken from the source in the artifact's BUILD config (ground_truth={{column, "
        f"extract}})"
    )


def test_a_ground_truth_the_env_does_not_reward_is_refused(inputs) -> None:
    code, _, report = run_check(inputs, "verbatim")
    assert code == 1
    truth = "She has 3 + 1000 = 1003 apples.\n#### 1,003"
    assert the_problem(report) == (
        f"train_data {inputs['verbatim']} (gsm8k-verbatim@2026.11.02): row 0's ground truth "
        f"{truth!r}: its own ground truth ({'The answer is' + chr(10) + '#### ' + truth!r}) "
        "earns reward 0 from env 'gsm8k', not 1; 12 of 12 rows fail so (rows 0, 1, 2, 3, 4, "
        "5, 6, 7, 8, 9, ...). A correct answer can never earn the reward on them: write each "
        "ground truth as the env compares it (the number alone: no thousands separator, no "
        "trailing .0) with the artifact's config.ground_truth (for gsm8k: extract "
        "'final_answer', the number after ####, or 'number' for a numeric column)"
    )


def failure_of(rows: str, first: str, env: str, count: str) -> str:
    return (
        f"{first} from env {env!r}, not 1; {count} rows fail so (rows {rows}). A correct answer "
        "can never earn the reward on them: write each ground truth as the env compares it "
        "(the number alone: no thousands separator, no trailing .0) with the artifact's "
        "config.ground_truth (for gsm8k: extract 'final_answer', the number after ####, or "
        "'number' for a numeric column)"
    )


def test_ground_truths_written_with_commas_are_refused_by_row_in_the_eval_file(inputs) -> None:
    """Through the real prompt_parquet builder (verbatim `1,250`) and skyrl-gym's GSM8kEnv,
    whose strict extraction drops the comma from the answer, never from the ground truth."""
    code, _, report = run_check(inputs, "commas")
    assert code == 1
    path = inputs["commas"]
    assert the_problem(report) == (
        f"val_data {path} (numbers-commas-gsm8k-verbatim@2026.12.01): " + failure_of(
            "1, 3, 5", "row 1's ground truth '1,252': its own ground truth ('The answer "
            "is\\n#### 1,252') earns reward 0", "gsm8k", "3 of 6"))
    assert report["ground_truths_scored"] == {"train_data": 12}


def test_float_answers_of_a_jsonl_split_are_refused_and_pass_as_stated_numbers(inputs) -> None:
    """A JSONL split whose answers are JSON numbers (27.0): verbatim, the builder writes
    '22.0', which no solution stating 22 matches in GSM8kEnv; extract 'number' writes '22'."""
    code, _, report = run_check(inputs, "floats")
    assert code == 1
    path = inputs["floats"]
    assert the_problem(report) == (
        f"val_data {path} (numbers-floats-gsm8k-verbatim@2026.12.01): " + failure_of(
            "0, 1, 2, 3, 4, 5", "row 0's ground truth '22.0': the number 22 as a solution "
            "states it ('The answer is\\n#### 22') earns reward 0", "gsm8k", "6 of 6"))
    code, out, report = run_check(inputs, "floats-as-numbers")
    assert code == 0, out
    assert report["ground_truths_scored"] == {"train_data": 12, "val_data": 6}


def test_the_math_env_reads_the_rows_prompt_parquet_writes_for_it(inputs) -> None:
    """AIMEEnv asserts `reward_model.ground_truth`: the builder writes that column for aime,
    and the env's own grading (normalize_final_answer) takes `1,252` and `1252` alike."""
    code, out, report = run_check(inputs, "aime")
    assert code == 0, out
    assert report["env_class"] == "aime"
    assert report["ground_truths_scored"] == {"train_data": 6, "val_data": 6}
    assert "reward_model" in pq.read_schema(inputs["aime"]).names
    assert "reward_spec" not in pq.read_schema(inputs["aime"]).names
    assert "reward_spec" in pq.read_schema(inputs["floats-as-numbers"]).names


def test_a_wrong_env_class_lists_the_registered_ones(inputs) -> None:
    code, _, report = run_check(inputs, "wrong-env")
    assert code == 1
    message = the_problem(report)
    assert message.startswith(
        f"train_data {inputs['wrong-env']} ({inputs['wrong-env']}): row 0 names env_class "
        f"'gsm8k_math', which skyrl-gym does not register (it has "
    )
    assert "gsm8k, gsm8k_multi_turn" in message
    assert message.endswith(
        "fix the env_class in the artifact's config (and algorithm.environment) to one of them"
    )


def test_a_tokenizer_without_a_chat_template_is_refused(inputs) -> None:
    code, _, report = run_check(inputs, "no-template")
    assert code == 1
    path = inputs["model-no-template"]
    assert the_problem(report) == (
        f"the tokenizer of trainer.policy.model.path {path} ({path}/config.json) has no chat "
        f"template, and PromptDataset applies one to every prompt (apply_chat_template). Use a "
        f"model whose tokenizer_config.json has a chat_template (an instruct/chat model), or "
        f"add chat_template.jinja to the model artifact"
    )


def test_a_folder_instead_of_a_prompt_file_is_refused(inputs) -> None:
    folder = str(Path(inputs["train"]).parent)
    code, _, report = run_check(inputs, "folder")
    assert code == 1
    assert the_problem(report) == (
        f"train_data {folder} ({folder}): PromptDataset reads files ending .parquet, .json or "
        f".jsonl and takes anything else for a Hugging Face dataset name; point train_data at "
        f"the prompt file inside the artifact (a prompt_parquet artifact's prompts.parquet)"
    )


def test_a_config_skyrl_refuses_stops_the_check(inputs) -> None:
    code, _, report = run_check(inputs, "batch-250")
    assert code == 1
    assert the_problem(report) == (
        f"SkyRL {inputs['release']} refuses the job's overrides: AssertionError: train_batch_size"
        " 250 should "
        "be divisible by policy_mini_batch_size 8. The launch YAML's skyrl section is what to "
        "fix (SkyRLTrainConfig.from_cli_overrides, validate_cfg)"
    )
