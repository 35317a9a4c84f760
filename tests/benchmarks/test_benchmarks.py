"""Each benchmark of benchmarks/ that runs on this machine alone, once at its smallest size: it
must run to the end and print its figures (the figures themselves are not asserted: timing on a
shared machine is no test). pants_check.py runs in the e2e layer
(tests/e2e/test_pants_check_benchmark.py): it runs the real ./pants."""

from __future__ import annotations

import re

from benchmarks.runner import run_benchmark


def test_preflight_throughput_prints_random_and_worked_example_rates() -> None:
    lines = run_benchmark("preflight_throughput.py", "--plans", "50", "--seconds", "0.2")
    rate = r"[\d,]+ plans per CPU second \(\d+ us/plan\)"
    assert len(lines) == 4, lines
    assert re.fullmatch(
        rf"random plans \(50, \d+ with an error finding\), parse \+ every rule: {rate};"
        r" (meets|BELOW) the target of 10,000", lines[0]), lines[0]
    assert re.fullmatch(rf"worked examples \(6\), parse \+ every rule: {rate}", lines[1]), lines[1]
    assert re.fullmatch(
        r"run_preflight alone on the parsed random plans: [\d,]+ plans per CPU second",
        lines[2]), lines[2]
    assert re.fullmatch(
        r"random plans with the memos emptied before each: [\d,]+ plans per CPU second \(\d+"
        r" us/plan; load average [\d.]+ on \d+ cores\)", lines[3]), lines[3]


def test_install_prints_when_uv_and_the_pants_venv_were_done() -> None:
    lines = run_benchmark("install.py", "--only", "pants")
    assert lines[-1:] and re.fullmatch(
        r"uv: uv done after [\d.]+ s, pants done after [\d.]+ s; total [\d.]+ s \(load average"
        r" [\d.]+ on \d+ cores\)", lines[-1]), lines


def test_plans_search_prints_the_time_of_each_strategy() -> None:
    lines = run_benchmark("plans_search.py", "--nodes", "1", "--gpus-per-node", "2")
    assert [line.split(" on ")[0] for line in lines] == ["fsdp", "megatron"], lines
    for line in lines:
        assert re.fullmatch(
            r"\w+ on 1 x 2 H100: [\d.]+ CPU s \([\d.]+ s wall\); \d+ preflighted, \d+ pruned,"
            r" \d+ valid plans in \d+ geometries", line), line
