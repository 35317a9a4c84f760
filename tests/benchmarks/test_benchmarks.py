"""Every benchmark of benchmarks/ runs once in the suite, at the smallest size its docstring names:
it must run to the end and print its figure lines (the figures themselves are not asserted:
timing on a shared machine is no test; a benchmark that measures a claim, such as a warm build
calling no builder, stops with an error when the claim fails).

The library-layer ones run here; those that run the real ./pants run in the e2e layer
(tests/e2e/test_pants_check_benchmark.py). None needs a GPU: memory_terms.py measures on CPU, in
the SkyRL rehearsal env (torch and transformers). A new file in benchmarks/ fails
`test_the_suite_runs_every_benchmark_at_the_smallest_size_its_docstring_names` until a test runs it.
"""

from __future__ import annotations

import ast
import json
import re
import shlex
from pathlib import Path

import pytest

from benchmarks.runner import BENCHMARKS, REPO, run_benchmark
from contract.skyrl_env import rehearsal_python

NUMBER = r"-?[\d.]+"
SMALLEST = re.compile(
    r"The\s+smallest\s+size\s+\(`([^`]*)`\)\s+is\s+what\s+the\s+test\s+suite\s+runs")
TEST_FILES = ("tests/benchmarks/test_*.py", "tests/e2e/test_*.py")


def suite_runs() -> dict[str, list[list[str]]]:
    """benchmark file name -> the argument lists the suite's tests pass to run_benchmark: the
    literal ones (a parametrized test's `*args` adds options to the smallest size)."""
    runs: dict[str, list[list[str]]] = {}
    for pattern in TEST_FILES:
        for path in sorted(REPO.glob(pattern)):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                        and node.func.id == "run_benchmark"):
                    name, *args = (ast.literal_eval(arg) for arg in node.args
                                   if not isinstance(arg, ast.Starred))
                    runs.setdefault(name, []).append(args)
    return runs


def test_the_suite_runs_every_benchmark_at_the_smallest_size_its_docstring_names() -> None:
    runs = suite_runs()
    benchmarks = sorted(path.name for path in BENCHMARKS.glob("*.py"))
    assert [name for name in benchmarks if name not in runs] == [], (
        "benchmarks the suite does not run: add a test that runs each once at its smallest size"
        " (tests/benchmarks/test_benchmarks.py; tests/e2e/ if it runs ./pants)")
    assert sorted(runs) == benchmarks, "tests run benchmarks that do not exist"
    for name in benchmarks:
        docstring = ast.get_docstring(ast.parse((BENCHMARKS / name).read_text(encoding="utf-8")))
        smallest = SMALLEST.search(docstring or "")
        assert smallest, (f"benchmarks/{name}: its docstring must say `The smallest size"
                          " (`ARGS`) is what the test suite runs.`")
        assert runs[name] == [shlex.split(smallest.group(1))], (
            f"benchmarks/{name}: the tests run it with {runs[name]}, its docstring's smallest size"
            f" is `{smallest.group(1)}`")


def test_build_countdown_prints_the_cold_and_warm_builds_and_the_cli_start_up() -> None:
    lines = run_benchmark("build_countdown.py", "--sft-steps", "5")
    nodes = ("countdown-data", "countdown-tokenizer", "countdown-sft")
    assert len(lines) == 7, lines
    assert re.fullmatch(rf"cold build: +{NUMBER}s  builder calls: 3 \("
                        + ", ".join(f"{node}@2026.01.01" for node in nodes) + r"\)", lines[0])
    for node, line in zip(nodes, lines[1:4], strict=True):
        assert re.fullmatch(rf" +{node}@2026.01.01 +built +{NUMBER}s", line), line
    assert re.fullmatch(rf"warm build: +{NUMBER}s  builder calls: 0 \(in-process, 3 nodes"
                        r" reused and verified\)", lines[4]), lines[4]
    assert re.fullmatch(rf"cli start-up \(rlaunch --help\): +{NUMBER}s", lines[5]), lines[5]
    assert re.fullmatch(rf"cli warm build \(rlaunch build\): +{NUMBER}s  beyond start-up:"
                        rf" +{NUMBER}s", lines[6]), lines[6]


def test_install_prints_when_uv_and_the_pants_venv_were_done() -> None:
    lines = run_benchmark("install.py", "--only", "pants")
    assert lines[-1:] and re.fullmatch(
        r"uv: uv done after [\d.]+ s, pants done after [\d.]+ s; total [\d.]+ s \(load average"
        r" [\d.]+ on \d+ cores\)", lines[-1]), lines


def test_memory_terms_prints_every_coefficient() -> None:
    lines = run_benchmark("memory_terms.py", "--tokens", "16", "--layers", "1", "2",
                          python=rehearsal_python())
    measured = json.loads("\n".join(lines))
    assert sorted(measured) == [
        "backward_peak_per_token_vocab", "backward_peak_undivided_per_token_vocab",
        "kept_outside_layers_per_token_hidden", "kept_per_layer_per_token_hidden", "layers",
        "logits_per_token_vocab", "recomputed_layer_per_token_hidden", "state", "tokens"]
    assert (measured["tokens"], measured["layers"]) == (16, [1, 2])
    assert sorted(measured["state"]) == ["adam", "gradients", "parameters"]
    numbers = [value for key, value in measured.items() if key not in ("tokens", "layers",
                                                                       "state")]
    assert all(isinstance(value, float) for value in [*numbers, *measured["state"].values()])


def test_preflight_throughput_prints_random_and_worked_example_rates() -> None:
    lines = run_benchmark("preflight_throughput.py", "--plans", "50", "--pass", "10",
                          "--seconds", "0.2", "--repeat", "1")
    rate = r"[\d,]+ plans per CPU second \(\d+ us/plan\)"
    assert len(lines) == 8, lines
    assert re.fullmatch(
        r"random plans \(50, \d+ with an error finding; timed 10 a pass\), parse \+ every rule:"
        r" [\d,]+ plans per"
        r" CPU second \(\d+ us/plan, of which \d+ us collecting garbage\), the median of 1"
        r" measurement\(s\) from [\d,]+ to [\d,]+; (meets|BELOW) the target of 10,000",
        lines[0]), lines[0]
    assert re.fullmatch(rf"worked examples \(6\), parse \+ every rule: {rate}", lines[1]), lines[1]
    assert re.fullmatch(
        r"run_preflight alone on the parsed random plans: [\d,]+ plans per CPU second",
        lines[2]), lines[2]
    assert re.fullmatch(
        r"random plans, parse_spec's and run_preflight's memos emptied before each: [\d,]+ plans"
        r" per CPU second \(\d+ us/plan; load average [\d.]+ on \d+ cores; CPython 3\.11\.\d+ from"
        r" /\S+\)", lines[3]), lines[3]
    assert re.fullmatch(r"preflight's modules: (compiled \(\d+ modules from /\S+\)|pure Python"
                        r" \(.+\))", lines[4]), lines[4]
    assert re.fullmatch(r"this machine's speed: a fixed loop of 500,000 steps of pure Python took"
                        r" (\d+) to (\d+) ms of CPU, run before each measurement of the random"
                        r" plans \(the less, the faster it ran; preflight's rate follows it only"
                        r" in part\)", lines[5]), lines[5]
    assert re.fullmatch(r"profile of \d+ rules that read the plan \(wall us/plan on fresh plans;"
                        r" with every memo holding the plan's inputs, in brackets\): all \d+"
                        r" \(\d+\), parse_spec \d+", lines[6]), lines[6]
    assert re.fullmatch(r"costliest 8: [A-Z]+\d{3} [\d.]+ \([\d.]+\)(, [A-Z]+\d{3} [\d.]+"
                        r" \([\d.]+\)){7}", lines[7]), lines[7]


@pytest.mark.parametrize(("args", "allowing"), [
    ((), ""), (("--allow-offload", "--allow-lora", "8"), " allowing offload, LoRA rank 8")])
def test_plans_search_prints_the_time_of_each_strategy(
    args: tuple[str, ...], allowing: str
) -> None:
    lines = run_benchmark("plans_search.py", "--nodes", "1", "--gpus-per-node", "2", *args)
    assert [line.split(" on ")[0] for line in lines] == ["fsdp", "megatron"], lines
    for line in lines:
        assert re.fullmatch(
            rf"\w+ on 1 x 2 H100{allowing}: [\d.]+ CPU s \([\d.]+ s wall\); \d+ preflighted,"
            r" \d+ pruned, \d+ valid plans in \d+ geometries", line), line


def test_smoke_run_prints_its_summary_after_the_runs_own_lines() -> None:
    lines = run_benchmark("smoke_run.py", "--steps", "2", "--sft-steps", "5")
    header = "== smoke_run benchmark (1 node x 2 simulated GPUs, colocated) =="
    assert header in lines, lines
    summary = lines[lines.index(header) + 1:]
    patterns = [
        r"steps +2",
        rf"wall time to first step +{NUMBER} s \(process start -> step 1 line\)",
        rf"seconds per step +{NUMBER} s",
        rf"reward, first 5 steps +{NUMBER} \(solved {NUMBER}\)",
        rf"reward, last 5 steps +{NUMBER} \(solved {NUMBER}\)",
        rf"greedy eval reward +{NUMBER} -> {NUMBER} \(\d+ prompts\)",
        rf"runtime wall time +{NUMBER} s",
    ]
    assert len(summary) == len(patterns), summary
    for pattern, line in zip(patterns, summary, strict=True):
        assert re.fullmatch(pattern, line), line


def test_staging_throughput_prints_the_plain_copy_and_each_staging(tmp_path: Path) -> None:
    lines = run_benchmark("staging_throughput.py", "--files", "2", "--mb", "1", "--threads", "2",
                          temp=tmp_path)
    assert len(lines) == 5, lines
    assert re.fullmatch(r"artifact: 2 files x 1 MB = 2 MB on http://127.0.0.1:\d+ \(moto S3\),"
                        r" 2 threads", lines[0]), lines[0]
    labels = ("plain parallel copy", "staging cold", "staging warm", "staging warm again")
    for label, line in zip(labels, lines[1:], strict=True):
        assert re.fullmatch(rf"{label} +{NUMBER} MB copied in +{NUMBER} s +({NUMBER} MB/s|- MB/s)",
                            line), line


def test_store_scale_prints_the_local_overheads_and_the_s3_transfers(tmp_path: Path) -> None:
    lines = run_benchmark("store_scale.py", "--gib", "0.002", "--streams", "2", "--repeats", "1",
                          "--only", "scale-shards", temp=tmp_path)
    local = [
        r"  cold build \(copy, hash, publish\) +{n}s",
        r"  first no-op build right after +{n}s  \(re-hashes files hashed within 2 s of being"
        r" written\)",
        r"  next no-op build +{n}s",
        r"  no-op build +{n}s  vs rlaunch --help {n}s: \+{n}s \(target <= 0.2s\)",
        r"  --verify build \(every file read\) +{n}s",
        r"  no-op launch \(materialize \+ the runtime's input check\)",
        r"    in a fresh process +{n}s  vs the same process idle {n}s: \+{n}s \(target <= 0.2s\)",
        r"    the two steps alone, in-process +{n}s",
    ]
    transfers = [
        r"  upload    rlaunch +{n}s +{n} MB/s   s3transfer +{n}s +{n} MB/s   ratio +\d+%"
        r" \(target >= 70%\)",
        r"  download  rlaunch +{n}s +{n} MB/s   s3transfer +{n}s +{n} MB/s   ratio +\d+%"
        r" \(target >= 70%\)",
        r"  load average after: {n} {n} {n}",
    ]
    patterns = [
        r"made 1 x 0.002 GiB in \S+ in {n}s; load average {n} {n} {n}",
        r"times are medians of 1; a no-op is timed alternately with its start-up baseline, and"
        r" '\+' is the median of the pairs' differences",
        "scale-shards:", *local,
        r"S3: moto server at http://127.0.0.1:\d+; at most 2 requests in flight each; 8 MiB parts"
        r" up, 50 MiB ranges down; read timeout 900 s",
        r"scale-shards \(2 file\(s\), 0.00 GB; rlaunch first\):", *transfers,
        r"server log \(one line per request, with its time\): \S+",
    ]
    assert len(lines) == len(patterns), lines
    for pattern, line in zip(patterns, lines, strict=True):
        assert re.fullmatch(pattern.replace("{n}", NUMBER), line), line
