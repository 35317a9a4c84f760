"""Preflight throughput: plans parsed and preflighted (every spec-scope rule) per CPU second.

Two workloads, each parse (pydantic validation) + run_preflight, in one process:
- random plans: role plans drawn from a seeded generator (strategy, footprints, parallel sizes,
  engines, placement, batch sizes) over the worked examples' models; most carry findings. Each
  document is made as the search makes a candidate: a role plan and an execution of its own, the
  other sections the worked example's (parse_spec keys them by content, not identity, so this
  saves it no work). A search holds one candidate at a time, so a timed pass holds `--pass`
  plans (100), not thousands: with 3,000 documents alive through a pass the collector walked
  their ~36,000 containers, 8-12 us/plan of garbage collection that no search pays, against
  1-2 us/plan in passes of 100 (gc.callbacks; the first line prints it). No
  random figure sees a plan twice: each timed pass takes plans never drawn before (one
  seeded generator goes on from pass to pass, and a document equal to one drawn before is
  dropped), generated outside the timed region. A memo can then hold only what a search shares
  too: the part beside the plan (6 models) and sub-sections equal by chance, never a whole plan
  seen before. The first line's count of plans with an error finding is of a first batch that
  no figure times;
- the worked examples (rlaunch.spec.examples), as they are: the same 6 plans pass after pass,
  a warm figure.
The rate of run_preflight alone on fresh random plans (parsed outside the timed region) is
printed too, and the random plans' rate with parse_spec's and run_preflight's memos emptied
before every plan: what reusing the part beside the plan is worth (it is validated once per
distinct content, and a rule that reads nothing of the plan runs once per distinct rest of the
spec: every rule has run on exactly each plan's inputs); the rules' own memos of pure values
(the memory rules' estimates, shapes and verdicts, BATCH010's batch sizes, the placement
groups) stay as they are.
CPU time (time.process_time) is measured, not wall time: the machine is shared. Target: >= 10,000
plans per CPU second on random plans, which a search over role plans needs (`rlaunch plans`).
The interpreter's build counts: the fourth line names it. So does whether preflight's modules
run compiled by Cython (scripts/compile, rlaunch.compiled; 1.2 to 1.5 times the pure modules'
rate at this machine's usual speed, about the same in its slow hours) or pure: the fifth line
says which, and where from. scripts/runtime builds the runtime from the OS's CPython 3.11 when
there is one (Debian's: PGO and LTO), which runs these plans with 14% fewer instructions than
pyenv's default build (docs/plans.md).

    PYTHONPATH=src $(scripts/runtime) benchmarks/preflight_throughput.py [--plans N] [--pass N]
        [--seconds S] [--repeat N] [--top N]

The random plans are measured `--repeat` times (3), each time on plans never drawn before, and
the verdict is on the median: this machine's speed moves by a quarter within hours (the first
line prints the range), and by up to half for hours at a time. The sixth line gives the CPU time
of a fixed loop (`calibration`), run before each measurement: a loose guide to the machine's
speed, which preflight's rate follows only in part (docs/plans.md). The two lines after it
are a profile of `--plans` fresh random plans, a pass at a time: parse_spec's wall time a plan
and each rule's (those run_preflight runs on every plan), on the pass's fresh plans and then on
the same plans again, when every memo holds their inputs: where a plan's time goes, and how far
memos alone could take it.
The smallest size (`--plans 50 --pass 10 --seconds 0.2 --repeat 1`) is what the test suite runs.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import platform
import random
import statistics
import sysconfig
import time
from collections.abc import Callable
from typing import Any

from rlaunch import compiled
from rlaunch.preflight import run_preflight
from rlaunch.preflight.engine.runner import forget_reused, plan_rules
from rlaunch.spec import RunSpec, parse_spec
from rlaunch.spec.io import forget_parsed
from rlaunch.spec.examples import WORKED_EXAMPLES, worked_example

TARGET_PER_SECOND = 10_000
SIZES = (1, 2, 4, 8)


def random_plan(rng: random.Random, base: dict[str, Any]) -> dict[str, Any]:
    """A worked example with a random role plan, allocation and batch sizes. Built as the search
    builds a candidate (rlaunch.plans.search.candidate): a new role plan and execution, the rest
    the base's own sections, shared (parse_spec keys them by content, never by identity). Deep
    copy a document before changing any other section: the change would reach the base."""
    spec = {**base, "role_plan": copy.deepcopy(base["role_plan"]),
            "execution": copy.deepcopy(base["execution"])}
    plan = spec["role_plan"]
    gpus = rng.choice((4, 8))
    nodes = rng.choice((1, 2, 4, 5, 8))
    spec["execution"]["allocation"].update(num_nodes=nodes, gpus_per_node=gpus)
    plan["strategy"] = rng.choice(("fsdp", "megatron"))
    for role in ("policy", "reference"):
        if role == "reference" and rng.random() < 0.3:
            plan["reference"] = None
            continue
        section = plan[role]
        section.update(
            num_nodes=rng.choice((1, 2, nodes)), num_gpus_per_node=gpus,
            tensor_parallel_size=rng.choice(SIZES), pipeline_parallel_size=rng.choice((1, 2)),
            expert_parallel_size=rng.choice(SIZES), sequence_parallel_size=rng.choice((1, 2)),
        )
    plan["rollout"].update(
        num_engines=rng.choice((1, 2, 4, 8)), tensor_parallel_size=rng.choice(SIZES),
        data_parallel_size=rng.choice((1, 2, 8)), expert_parallel_size=rng.choice((1, 8)),
    )
    colocate_all = rng.random() < 0.5
    plan["placement"] = {"colocate_all": colocate_all,
                         "colocate_policy_ref": colocate_all or rng.random() < 0.5}
    if plan["reference"] is not None:
        plan["reference"]["colocated_with_policy"] = plan["placement"]["colocate_policy_ref"]
    plan["batch"].update(
        train_batch_size=rng.choice((32, 64, 128, 256)),
        policy_mini_batch_size=rng.choice((16, 32, 64)),
        micro_train_batch_size_per_gpu=rng.choice((1, 2, 4)),
        micro_forward_batch_size_per_gpu=rng.choice((2, 4, 8)),
        n_samples_per_prompt=rng.choice((4, 5, 8, 16)),
    )
    return spec


def random_plans(count: int, seed: int = 27) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    bases = [worked_example(name) for name in sorted(WORKED_EXAMPLES)]
    return [random_plan(rng, rng.choice(bases)) for _ in range(count)]


class FreshPlans:
    """Batches of random plans, none equal to a plan of an earlier batch (or of its own).

    A plan is known by the hash of its base's name, role plan and execution (the rest of a
    document is its base's own): equal plans have equal hashes, so none is timed twice, and a
    collision could only drop a plan never drawn. Keeping each whole document as sorted JSON
    instead (about 3 KB a plan, 24 us to write) made the process hold about 100 MB of strings
    by the end and wrote them between timed passes, which no search does: the same plans
    measured 7,366 to 7,694 plans per CPU second that way, 8,617 to 9,293 this way (three runs
    of each, alternating, 2026-12-04; docs/plans.md)."""

    def __init__(self, count: int, seed: int = 27) -> None:
        self.count = count
        self.rng = random.Random(seed)
        self.bases = [(name, worked_example(name)) for name in sorted(WORKED_EXAMPLES)]
        self.seen: set[int] = set()

    def batch(self, count: int | None = None) -> list[dict[str, Any]]:
        """`count` plans (default: the count given at the start)."""
        found: list[dict[str, Any]] = []
        while len(found) < (self.count if count is None else count):
            name, base = self.rng.choice(self.bases)
            document = random_plan(self.rng, base)
            key = hash(json.dumps((name, document["role_plan"], document["execution"]),
                                  sort_keys=True))
            if key not in self.seen:
                self.seen.add(key)
                found.append(document)
        return found


class GcClock:
    """CPU time spent in Python's garbage collector within `with` blocks (gc.callbacks, kept
    only while inside one): a full collection walks every tracked object, so what a memo keeps
    per plan costs time that no instruction count of the rules shows."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._began = 0.0

    def __enter__(self) -> GcClock:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.process_time()
        else:
            self.spent += time.process_time() - self._began


def cpu_rate(action: Callable[[list[Any]], None], batch: Callable[[], list[Any]],
             seconds: float) -> tuple[float, float]:
    """Items per CPU second of `action` over batches of items, made by `batch()` outside the
    timed region, one batch a pass, for at least `seconds` of CPU time and at least one pass;
    and the CPU seconds per item spent collecting garbage within it."""
    items, spent, collecting = 0, 0.0, GcClock()
    while True:
        work = batch()
        start = time.process_time()
        with collecting:
            action(work)
        spent += time.process_time() - start
        items += len(work)
        if spent >= seconds:
            return items / spent, collecting.spent / items


CALIBRATION_STEPS = 500_000


def calibration() -> float:
    """CPU seconds of a fixed loop of pure Python that is none of rlaunch's code (integer steps,
    and dict stores every fourth): the same instructions every time, on a few KB of data. A
    loose guide to the machine's speed: on 2026-12-03 preflight's rate correlated with it by
    -0.2 to -0.6 over 44 samples (docs/plans.md)."""
    start = time.process_time()
    total, table = 0, {}
    for step in range(CALIBRATION_STEPS):
        total += step % 7
        if step % 4 == 0:
            table[step] = total
    return time.process_time() - start


def parse_and_preflight(documents: list[dict[str, Any]]) -> None:
    for document in documents:
        run_preflight(parse_spec(document, "bench"))


def cold_parse_and_preflight(documents: list[dict[str, Any]]) -> None:
    for document in documents:
        forget_parsed()
        forget_reused()
        run_preflight(parse_spec(document, "bench"))


def preflight_only(specs: list[RunSpec]) -> None:
    for spec in specs:
        run_preflight(spec)


def rule_profile(batches: list[list[dict[str, Any]]]) -> tuple[float, dict[str, float],
                                                               dict[str, float]]:
    """A profile of preflight on batches of fresh plans, one batch at a time as a timed pass
    takes them: the wall microseconds a plan of parse_spec, and of each rule that reads the role
    plan (`plan_rules`: the rules run_preflight runs on every plan), on the batch's fresh plans
    and then on the same plans again, when every memo a rule keeps holds their inputs (the floor
    that memos can reach). Wall time, read around each rule (perf_counter_ns: CPU time per call
    costs a system call), less the clock's own cost per reading."""
    clock = min(_clock_cost() for _ in range(5))
    plans = sum(map(len, batches))
    parsing = 0
    passes: list[dict[str, float]] = [{}, {}]
    for documents in batches:
        began = time.perf_counter_ns()
        specs = [parse_spec(document, "bench") for document in documents]
        parsing += time.perf_counter_ns() - began
        for spent in passes:
            for spec in specs:
                rules, check = plan_rules(spec)
                for rule in rules:
                    start = time.perf_counter_ns()
                    for _finding in rule.func(check):  # a rule may yield its findings
                        pass
                    spent[rule.code] = spent.get(rule.code, 0) + time.perf_counter_ns() - start
    fresh, warm = ({code: max(ns / plans - clock, 0.0) / 1e3 for code, ns in spent.items()}
                   for spent in passes)
    return parsing / plans / 1e3, fresh, warm


def _clock_cost() -> float:
    """Nanoseconds between two perf_counter_ns readings, the mean of 10,000."""
    read = time.perf_counter_ns
    began = read()
    for _ in range(10_000):
        read()
    return (read() - began) / 10_000


def profile_lines(parse: float, fresh: dict[str, float], warm: dict[str, float], top: int
                  ) -> list[str]:
    costliest = sorted(fresh, key=fresh.__getitem__, reverse=True)[:top]
    shown = ", ".join(f"{code} {fresh[code]:.1f} ({warm[code]:.1f})" for code in costliest)
    return [
        f"profile of {len(fresh)} rules that read the plan (wall us/plan on fresh plans; with"
        f" every memo holding the plan's inputs, in brackets): all {sum(fresh.values()):.0f}"
        f" ({sum(warm.values()):.0f}), parse_spec {parse:.0f}",
        f"costliest {len(costliest)}: {shown}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=int, default=3000,
                        help="random plans drawn for the count of those with an error finding")
    parser.add_argument("--pass", dest="per_pass", type=int, default=100,
                        help="fresh random plans a timed pass parses and preflights (a search"
                             " holds one candidate at a time)")
    parser.add_argument("--seconds", type=float, default=3.0, help="CPU time per measurement")
    parser.add_argument("--repeat", type=int, default=3,
                        help="measurements of the random plans, each on plans not drawn before;"
                             " the verdict is on their median (this machine's speed moves by a"
                             " quarter within hours, and a single figure with it)")
    parser.add_argument("--top", type=int, default=8,
                        help="rules named in the profile's second line, the costliest first")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    if args.top < 1:
        parser.error(f"--top must be at least 1, got {args.top}")

    examples = [worked_example(name) for name in sorted(WORKED_EXAMPLES)]
    parse_and_preflight(examples)  # warm the caches (executor registry, rule list)
    fresh = FreshPlans(args.per_pass)
    errors = sum(any(f.severity == "error" for f in run_preflight(parse_spec(document, "bench")))
                 for document in fresh.batch(args.plans))

    def parsed() -> list[RunSpec]:
        return [parse_spec(document, "bench") for document in fresh.batch()]

    speeds: list[float] = []
    measured: list[tuple[float, float]] = []
    for _ in range(args.repeat):
        speeds.append(calibration())
        measured.append(cpu_rate(parse_and_preflight, fresh.batch, args.seconds))
    measured.sort()
    random_rate, random_gc = statistics.median_low(measured)
    rates = [rate for rate, _ in measured]
    example_rate, _ = cpu_rate(parse_and_preflight, lambda: examples, args.seconds / 3)
    rules_rate, _ = cpu_rate(preflight_only, parsed, args.seconds / 3)
    cold_rate, _ = cpu_rate(cold_parse_and_preflight, fresh.batch, args.seconds / 3)
    profile = profile_lines(*rule_profile(
        [fresh.batch() for _ in range(max(args.plans // args.per_pass, 1))]), args.top)
    verdict = "meets" if random_rate >= TARGET_PER_SECOND else "BELOW"
    print(f"random plans ({args.plans:,}, {errors:,} with an error finding; timed"
          f" {args.per_pass:,} a pass), parse + every rule:"
          f" {random_rate:,.0f} plans per CPU second ({1e6 / random_rate:.0f} us/plan, of which"
          f" {1e6 * random_gc:.0f} us collecting garbage), the median of {args.repeat}"
          f" measurement(s) from {rates[0]:,.0f} to {rates[-1]:,.0f}; {verdict} the target of"
          f" {TARGET_PER_SECOND:,}")
    print(f"worked examples ({len(examples)}), parse + every rule: {example_rate:,.0f} plans per"
          f" CPU second ({1e6 / example_rate:.0f} us/plan)")
    print(f"run_preflight alone on the parsed random plans: {rules_rate:,.0f} plans per CPU"
          f" second")
    print(f"random plans, parse_spec's and run_preflight's memos emptied before each:"
          f" {cold_rate:,.0f} plans per CPU"
          f" second ({1e6 / cold_rate:.0f} us/plan; load average {os.getloadavg()[0]:.1f} on"
          f" {os.cpu_count()} cores; CPython {platform.python_version()} from"
          f" {sysconfig.get_config_var('BINDIR')})")
    print(f"preflight's modules: {compiled.STATUS}")
    print(f"this machine's speed: a fixed loop of {CALIBRATION_STEPS:,} steps of pure Python"
          f" took {1e3 * min(speeds):.0f} to {1e3 * max(speeds):.0f} ms of CPU, run before each"
          " measurement of the random plans (the less, the faster it ran; preflight's rate"
          " follows it only in part)")
    print("\n".join(profile))

if __name__ == "__main__":
    main()
