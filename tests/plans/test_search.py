"""`rlaunch plans`: the search agrees with preflight on every plan, misses none that brute force
finds, prints plans that preflight accepts as written, and finds each GPU experiment's plan."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rlaunch.cli import main
from rlaunch.plans.search import (
    LORA_RANK,
    NO_CONCESSION,
    REPORT_EVERY,
    Allowed,
    Budget,
    Concession,
    candidate,
    concessions,
    largest_micro,
    ranked,
    same_plan,
    search,
    standing,
    trainer_choices,
)
from rlaunch.preflight import run_preflight
from rlaunch.spec import parse_spec

GOLDEN = Path(__file__).resolve().parents[1] / "render" / "golden" / "experiments"
GPU_EXPERIMENTS = ("qwen2.5-1.5b-gsm8k", "qwen2.5-1.5b-instruct-ref-2x8",
                   "qwen2.5-14b-separate-ref", "qwen3-30b-a3b-megatron")


def experiment(name: str) -> dict[str, Any]:
    """The spec `./pants package` wrote for the experiment's `grpo` run (tests/render/golden)."""
    data = json.loads((GOLDEN / name / "grpo" / "spec.json").read_text())
    if any(f.code == "EXEC010" for f in run_preflight(parse_spec(data))):
        # The golden spec predates Iris priority bands; the BUILD file says production.
        data["execution"]["priority"] = "production"
    return data


OPTIMIZER_KWARGS = "trainer.policy.megatron_config.optimizer_config_kwargs"
BUDGET_30B = ("--nodes", "1", "--gpus-per-node", "8", "--accelerator", "A100-40GB",
              "--strategy", "megatron")


def plan_texts(plans: list[Any]) -> list[str]:
    return sorted(json.dumps([v.spec.role_plan.model_dump(mode="json"),
                              v.candidate.concession.settings], sort_keys=True)
                  for v in plans)


@pytest.mark.parametrize(("name", "budget", "strategies", "allowed"), [
    ("qwen2.5-1.5b-gsm8k", Budget(1, 4, "H100"), ("fsdp", "megatron"), Allowed()),
    ("qwen2.5-14b-separate-ref", Budget(1, 8, "A100-40GB"), ("fsdp",), Allowed()),
    ("qwen3-30b-a3b-megatron", Budget(1, 8, "H100"), ("megatron",), Allowed()),
    # The concessions: plain plans do not fit 4 A100-40GB; offload and LoRA make some fit.
    ("qwen2.5-14b-separate-ref", Budget(1, 4, "A100-40GB"), ("fsdp", "megatron"),
     Allowed(offload=True, lora_rank=32)),
    ("qwen2.5-1.5b-gsm8k", Budget(1, 2, "L4"), ("fsdp", "megatron"),
     Allowed(offload=True, lora_rank=8)),
    ("qwen3-30b-a3b-megatron", Budget(1, 4, "H100"), ("megatron",), Allowed(offload=True)),
])
def test_the_pruned_search_finds_every_plan_brute_force_finds(
    name: str, budget: Budget, strategies: tuple[str, ...], allowed: Allowed
) -> None:
    base = experiment(name)
    if name == "qwen3-30b-a3b-megatron":  # shorter sequences, so that one node has valid plans
        base["lengths"].update(max_prompt_length=256, max_input_length=256,
                               max_generate_length=256)
    pruned = search(base, budget, strategies, allowed=allowed)
    brute = search(base, budget, strategies, allowed=allowed, prune=False)
    assert brute.pruned == 0
    assert pruned.preflighted + pruned.pruned == brute.preflighted
    # Every geometry brute force finds valid, at the same largest micro batch.
    assert plan_texts(pruned.valid) == plan_texts(largest_micro(brute.valid))
    assert len(pruned.valid) > 0
    # With concessions allowed, the budgets need them: some geometries fit only with one.
    assert any(valid.candidate.rank > 0 for valid in pruned.valid) == (allowed != Allowed())
    for valid in pruned.valid:  # the search and preflight agree on every plan it keeps
        assert not [f for f in run_preflight(valid.spec) if f.is_error]


def snippet_plans(output: str) -> list[dict[str, Any]]:
    """The role plans of every printed role_plan(...) snippet, read as BUILD syntax."""
    return [plan for plan, _ in printed_plans(output)]


def printed_plans(output: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each printed plan: its role_plan(...) snippet read as BUILD syntax (the whole output
    parses as Python, so as a BUILD file), and the settings entries printed under it."""
    ast.parse(output)
    plans = []
    for chunk in re.split(r"^# \d+\. ", output, flags=re.MULTILINE)[1:]:
        calls = [node for node in ast.walk(ast.parse(chunk.split("\n", 1)[1]))
                 if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "role_plan"]
        assert len(calls) == 1
        fields = {kw.arg: literal(kw.value) for kw in calls[0].keywords}
        fields.pop("name")
        entries = re.findall(r'^#     ("[^"]+": .+,)$', chunk, flags=re.MULTILINE)
        plans.append((fields, ast.literal_eval("{" + "".join(entries) + "}")))
    return plans


def literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "dict":
        return {kw.arg: literal(kw.value) for kw in node.keywords}
    return ast.literal_eval(node)


@pytest.mark.parametrize(("name", "args"), [
    ("qwen2.5-1.5b-gsm8k", ["--nodes", "1", "--gpus-per-node", "8", "--accelerator", "H100"]),
    ("qwen3-30b-a3b-megatron", ["--nodes", "2", "--gpus-per-node", "8", "--accelerator", "H100",
                                "--strategy", "fsdp"]),
    ("qwen2.5-14b-separate-ref", ["--nodes", "1", "--gpus-per-node", "8", "--accelerator",
                                  "A100-40GB"]),
    ("qwen2.5-14b-separate-ref", ["--nodes", "1", "--gpus-per-node", "4", "--accelerator",
                                  "A100-40GB", "--allow-offload", "--allow-lora", "32"]),
    ("qwen2.5-1.5b-gsm8k", ["--nodes", "1", "--gpus-per-node", "2", "--accelerator", "L4",
                            "--allow-offload", "--allow-lora", "8", "--top", "20"]),
    ("qwen3-30b-a3b-megatron", [*BUDGET_30B, "--allow-offload"]),
])
def test_every_printed_plan_passes_preflight_as_written(
    tmp_path: Path, name: str, args: list[str]
) -> None:
    spec_file = tmp_path / "spec.json"
    base = experiment(name)
    spec_file.write_text(json.dumps(base))
    result = CliRunner().invoke(main, ["plans", str(spec_file), "--top", "3", *args])
    assert result.exit_code == 0, result.output
    geometries = int(result.output.split(" valid plan geometries ")[0].removeprefix("# "))
    printed = printed_plans(result.output)
    top = int(args[args.index("--top") + 1]) if "--top" in args else 3
    assert len(printed) == min(top, geometries)
    budget = Budget(int(args[1]), int(args[3]), args[5])
    for plan, settings in printed:
        findings = run_preflight(parse_spec(candidate(base, budget, plan, settings)))
        assert [f.code for f in findings if f.is_error] == []


def test_the_plans_without_any_valid_plan_say_so(tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(experiment("qwen2.5-14b-separate-ref")))
    result = CliRunner().invoke(main, ["plans", str(spec_file), "--nodes", "1",
                                       "--gpus-per-node", "1", "--accelerator", "L4"])
    assert result.exit_code == 1
    assert result.output.splitlines()[-1] == (
        "Error: no role plan of this budget passes preflight; preflight SPEC itself (`rlaunch"
        " preflight SPEC`) for errors no plan can fix, or give a larger budget")


def test_an_unreadable_spec_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "spec.json"
    result = CliRunner().invoke(main, ["plans", str(missing), "--nodes", "1",
                                       "--gpus-per-node", "8", "--accelerator", "H100"])
    assert result.exit_code == 1
    assert result.output == (f"Error: SPEC {missing}: cannot read the file: No such file or"
                             " directory\n")


def test_a_model_that_is_no_hf_model_is_refused(tmp_path: Path) -> None:
    spec_file, model_file = tmp_path / "spec.json", tmp_path / "model.json"
    base = experiment("qwen2.5-1.5b-gsm8k")
    spec_file.write_text(json.dumps(base))
    model_file.write_text(json.dumps(base["train_data"]))
    result = CliRunner().invoke(main, ["plans", str(spec_file), "--model", str(model_file),
                                       "--nodes", "1", "--gpus-per-node", "8",
                                       "--accelerator", "H100"])
    assert result.exit_code == 1
    assert result.output == (f"Error: --model {model_file}: not an hf_model document (its"
                             " `type` must be hf_model, with its facts)\n")


@pytest.mark.parametrize("name", GPU_EXPERIMENTS)
def test_the_search_finds_each_gpu_experiments_own_plan(name: str) -> None:
    base = experiment(name)
    allocation = base["execution"]["allocation"]
    budget = Budget(allocation["num_nodes"], allocation["gpus_per_node"],
                    allocation["accelerator"])
    own = base["role_plan"]
    assert [f.code for f in run_preflight(parse_spec(base)) if f.is_error] == []
    result = search(base, budget, (own["strategy"],))
    found = [v for v in result.valid if same_plan(v.spec, {**own, "batch": v.spec.role_plan.batch
                                                          .model_dump(mode="json")})]
    assert len(found) == 1  # its geometry, at the largest micro batch preflight accepts
    assert found[0].candidate.micro >= own["batch"]["micro_train_batch_size_per_gpu"]
    plans = ranked(result, budget)
    said = standing(plans, own)
    print(f"\n{name}: {said}")
    assert said.startswith("its own plan is valid; its geometry ranks ")


def test_a_spec_that_is_no_runspec_is_refused_before_the_search(tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.json"
    base = experiment("qwen2.5-1.5b-gsm8k")
    base["execution"]["priority"] = 5
    spec_file.write_text(json.dumps(base))
    result = CliRunner().invoke(main, ["plans", str(spec_file), "--nodes", "1",
                                       "--gpus-per-node", "8", "--accelerator", "H100"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    # The spec `./pants package` wrote names its BUILD target.
    assert lines[0] == ("Error: experiments/qwen2.5-1.5b-gsm8k:grpo"
                        " (experiments/qwen2.5-1.5b-gsm8k/BUILD:84): not a valid RunSpec"
                        " (1 problem(s))")
    assert lines[1].startswith("  - execution.priority: "), lines


def plans_output(tmp_path: Path, name: str, *args: str) -> list[str]:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(experiment(name)))
    result = CliRunner().invoke(main, ["plans", str(spec_file), *args])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def only_with(tmp_path: Path, name: str, budget: tuple[str, ...], *allow: str) -> list[str]:
    """The output of the search that `allow`s a concession, on a budget where the plain search
    finds no plan (it says so, and exits 1)."""
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(experiment(name)))
    plain = CliRunner().invoke(main, ["plans", str(spec_file), *budget])
    assert plain.exit_code == 1
    assert plain.output.splitlines()[-1].startswith("Error: no role plan of this budget passes")
    return plans_output(tmp_path, name, *budget, *allow, "--top", "1")


BUDGET_14B = ("--nodes", "1", "--gpus-per-node", "4", "--accelerator", "A100-40GB")


def test_cpu_offload_fits_qwen14b_on_four_a100_40gb_where_no_plain_plan_does(
    tmp_path: Path
) -> None:
    lines = only_with(tmp_path, "qwen2.5-14b-separate-ref", BUDGET_14B, "--allow-offload")
    # 29 FSDP geometries offload the policy, 12 Megatron ones its optimizer state.
    assert re.fullmatch(r"# 41 valid plan geometries \(41 plans\) on 1 x 4 A100-40GB: \d+"
                        r" preflighted, \d+ ruled out by an earlier finding's family, [\d.]+ CPU"
                        r" seconds, preflight (compiled|pure Python; scripts/compile runs it"
                        r" up to 1.5 times as fast)", lines[0]), lines[0]
    assert lines[2] == (
        "# 1. idle GPUs 0; needs CPU offload of the policy; warnings 1; engines crossing nodes 0;"
        " rollout and training share all 4 GPUs (colocated); memory free per GPU: policy"
        " training 65%, policy forward 78%, reference forward 78%, vLLM engine 10%")
    # Each warning is printed whole, wrapped into comment lines: the output stays BUILD syntax.
    assert lines[3:6] == [
        "#   warning BATCH010: train_data gsm8k-train-prompts@2026.11.30 has 7473 rows = 58"
        " batches of",
        "#     train_batch_size 128 + 49: each epoch trains on 7424 prompts and leaves out 49"
        " (0.7%), a fresh",
        "#     random draw every epoch (SkyRL's train dataloader shuffles and drops the last"
        " partial batch)",
    ]
    assert lines[6:8] == ["role_plan(",
                          '    name="fsdp-colocated-sp4-engines4x-tp1-dp1-ep1-offload-policy",']
    # The spec already offloads the reference (its BUILD file's settings): only the policy's
    # offload is new, and it is a setting of the run, printed under the role plan.
    assert lines[-3:] == [
        ")",
        "# and the rl_run that names this plan sets (add to its settings={...}; they are not"
        " role_plan fields):",
        '#     "trainer.policy.fsdp_config.cpu_offload": True,',
    ]


def test_optimizer_offload_fits_qwen3_30b_a3b_megatron_on_eight_a100_40gb(
    tmp_path: Path
) -> None:
    """No Megatron plan fits 8 A100-40GB with Adam's state on the GPU; with every parameter's
    moments on the CPU (Megatron-core's HybridDeviceOptimizer), 90 geometries do."""
    lines = only_with(tmp_path, "qwen3-30b-a3b-megatron", BUDGET_30B, "--allow-offload")
    assert lines[0].startswith("# 90 valid plan geometries (90 plans) on 1 x 8 A100-40GB: ")
    assert lines[2] == (
        "# 1. idle GPUs 0; needs CPU offload of the policy's optimizer state; warnings 2; engines"
        " crossing nodes 0; rollout and training share all 8 GPUs (colocated); memory free per"
        " GPU: policy training 1%, policy forward 38%, reference forward 73%, vLLM engine 15%")
    assert lines[14] == ('    name="megatron-colocated-tp8-pp1-ep8-engines2x-tp1-dp4-ep4'
                         '-offload-optimizer",')
    assert lines[-1] == (f'#     "{OPTIMIZER_KWARGS}": {{"optimizer_cpu_offload": True,'
                         ' "optimizer_offload_fraction": 1.0},')


def test_optimizer_offload_keeps_the_specs_own_keys_and_is_not_offered_twice() -> None:
    trainers = next(trainer_choices(Budget(1, 8, "H100"), ("megatron",), True, True))
    own = {"use_precision_aware_optimizer": True, "optimizer_offload_fraction": 0.5}
    offered = concessions(trainers, Allowed(offload=True), {OPTIMIZER_KWARGS: own})
    assert [(c.settings, c.tag) for c in offered] == [
        ((), ""),
        (((OPTIMIZER_KWARGS, {"use_precision_aware_optimizer": True,
                              "optimizer_offload_fraction": 1.0,
                              "optimizer_cpu_offload": True}),), "offload-optimizer")]
    # A spec that already offloads all of it is given no offload to try.
    done = {"optimizer_cpu_offload": True, "optimizer_offload_fraction": 1.0}
    assert concessions(trainers, Allowed(offload=True, lora_rank=8),
                       {OPTIMIZER_KWARGS: done}) == [
        NO_CONCESSION, Concession(((LORA_RANK, 8),), "LoRA rank 8", "lora8")]


def test_lora_fits_qwen3_30b_a3b_megatron_on_four_h100_where_no_plain_plan_does(
    tmp_path: Path
) -> None:
    budget = ("--nodes", "1", "--gpus-per-node", "4", "--accelerator", "H100", "--strategy",
              "megatron")
    lines = only_with(tmp_path, "qwen3-30b-a3b-megatron", budget, "--allow-lora", "16")
    assert lines[0].startswith("# 139 valid plan geometries (139 plans) on 1 x 4 H100: ")
    assert lines[2] == (
        "# 1. idle GPUs 0; needs LoRA rank 16; warnings 1; engines crossing nodes 0; rollout and"
        " training share all 4 GPUs (colocated); memory free per GPU: policy training 72%,"
        " policy forward 73%, reference forward 73%, vLLM engine 15%")
    assert lines[7] == '    name="megatron-colocated-tp4-pp1-ep4-engines4x-tp1-dp1-ep1-lora16",'
    assert lines[-1] == '#     "trainer.policy.model.lora.rank": 16,'


def test_a_plan_that_fits_without_a_concession_is_printed_without_it(tmp_path: Path) -> None:
    """Offload and LoRA are taken only where a geometry does not fit without them: on 8
    A100-40GB, where plain plans fit, the first plans are the plain search's, unchanged."""
    args = ("--nodes", "1", "--gpus-per-node", "8", "--accelerator", "A100-40GB", "--top", "3")
    plain = plans_output(tmp_path, "qwen2.5-14b-separate-ref", *args)
    allowed = plans_output(tmp_path, "qwen2.5-14b-separate-ref", *args, "--allow-offload",
                           "--allow-lora", "32")
    assert allowed[1:] == plain[1:]
    assert "needs" not in "\n".join(allowed)


def with_lora(base: dict[str, Any]) -> None:
    base["settings"] = {**base["settings"], "trainer.policy.model.lora.rank": 64}


def with_sglang(base: dict[str, Any]) -> None:
    base["role_plan"]["rollout"]["backend"] = "sglang"


def on_the_smoke_runtime(base: dict[str, Any]) -> None:
    """The smoke runtime reads four SkyRL settings, neither offload nor LoRA."""
    smoke = json.loads((GOLDEN / "countdown" / "launch" / "spec.json").read_text())
    base.clear()
    base.update(smoke)


@pytest.mark.parametrize(("edit", "args", "message"), [
    (None, ("--allow-lora", "0"),
     "--allow-lora 0: a LoRA rank is a positive integer (e.g. 16 or 32); leave the option out"
     " to search full fine-tuning only"),
    (with_lora, ("--allow-lora", "16"),
     "--allow-lora 16: SPEC already trains LoRA adapters (settings"
     " trainer.policy.model.lora.rank = 64), and every plan keeps them; drop --allow-lora, or"
     " set the rank in SPEC's settings"),
    (with_sglang, ("--allow-lora", "16"),
     "--allow-lora 16: SPEC's rollout backend is sglang, and SkyRL loads LoRA adapters into"
     " vLLM engines only (SET001), so no LoRA plan could pass; set SPEC's"
     " role_plan.rollout.backend to vllm, or drop --allow-lora"),
    (on_the_smoke_runtime, ("--allow-offload",),
     "--allow-offload: the search would set trainer.policy.fsdp_config.cpu_offload, and SPEC's"
     " runtime cannot take it: the smoke runtime 0.1.0 does not read"
     " 'trainer.policy.fsdp_config.cpu_offload'; it reads trainer.algorithm.grpo_norm_by_std,"
     " trainer.policy.optimizer_config.adam_betas,"
     " trainer.policy.optimizer_config.max_grad_norm,"
     " trainer.policy.optimizer_config.weight_decay; drop --allow-offload"),
])
def test_a_concession_option_that_cannot_work_is_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None, args: tuple[str, ...],
    message: str
) -> None:
    spec_file = tmp_path / "spec.json"
    base = experiment("qwen2.5-1.5b-gsm8k")
    if edit is not None:
        edit(base)
    spec_file.write_text(json.dumps(base))
    result = CliRunner().invoke(main, ["plans", str(spec_file), *BUDGET_14B, *args])
    assert result.exit_code == 1
    assert result.output == f"Error: {message}\n"


def test_the_budget_defaults_to_the_specs_own_allocation(tmp_path: Path) -> None:
    """`./pants plans TARGET` with no budget option plans for the run's own allocation."""
    lines = plans_output(tmp_path, "qwen2.5-14b-separate-ref", "--top", "1")
    assert lines[0].startswith("# 570 valid plan geometries (570 plans) on 3 x 8 H100: ")
    # On its own budget, where the run's own plan stands, and why the first ranks higher.
    assert lines[1] == (
        "# SPEC's own budget: its own plan is valid; its geometry ranks 168 of 570 (at micro"
        " batch 8, its own 2); the first ranks higher by more memory headroom in its tightest"
        " training phase: first: idle GPUs 0; warnings 1; engines crossing nodes 0; rollout and"
        " training share all 24 GPUs (colocated); memory free per GPU: policy training 78%,"
        " policy forward 92%, reference forward 95%, vLLM engine 10%; its own: idle GPUs 0;"
        " warnings 1; engines crossing nodes 0; rollout 8 GPUs, training 16 GPUs; memory free"
        " per GPU: policy training 21%, policy forward 43%, reference forward 68%, vLLM engine"
        " 10%")
    lines = plans_output(tmp_path, "qwen2.5-14b-separate-ref", "--top", "1", "--nodes", "1",
                         "--accelerator", "A100-40GB")
    assert lines[0].startswith("# 60 valid plan geometries (60 plans) on 1 x 8 A100-40GB: ")
    assert lines[1] == ""  # another budget: the run's own plan is not in it


def test_a_search_reports_how_far_it_is_every_1024_candidates() -> None:
    """`rlaunch plans` shows these on a terminal: a large budget searches for minutes."""
    reports: list[tuple[int, int, int]] = []
    result = search(experiment("qwen3-30b-a3b-megatron"), Budget(2, 8, "H100"), ("fsdp",),
                    report=lambda found: reports.append((found.preflighted, found.pruned,
                                                         len(found.valid))))
    assert len(reports) == (result.preflighted + result.pruned) // REPORT_EVERY == 2
    assert [preflighted + pruned for preflighted, pruned, _ in reports] == [
        REPORT_EVERY * k - 1 for k in range(1, len(reports) + 1)]
    assert reports[-1][2] <= len(result.valid)
