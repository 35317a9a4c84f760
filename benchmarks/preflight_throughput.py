"""Preflight throughput: plans preflighted per second in one process (spec scope).

The Pants plugin preflights many specs in one process, so the in-process rate of the rules on
already-parsed specs is what matters; parsing (pydantic validation) is measured separately and
is not part of the hot loop. Target: >= 5,000 plans/s on the 2-core development machine.

    PYTHONPATH=src $(scripts/runtime) benchmarks/preflight_throughput.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import os
import time

from rlaunch.preflight import run_preflight
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import WORKED_EXAMPLES, worked_example

TARGET_PER_SECOND = 5_000


def measure(action, seconds: float) -> tuple[int, float, float]:
    """Run `action` (one pass over the specs) repeatedly for about `seconds` of wall time;
    return the passes, the wall time and this process's CPU time."""
    passes = 0
    start, start_cpu = time.perf_counter(), time.process_time()
    while True:
        action()
        passes += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return passes, elapsed, time.process_time() - start_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    args = parser.parse_args()

    documents = [worked_example(name) for name in sorted(WORKED_EXAMPLES)]
    specs = [parse_spec(document, "bench") for document in documents]

    def preflight_all() -> None:
        for spec in specs:
            run_preflight(spec)

    def parse_all() -> None:
        for document in documents:
            parse_spec(document, "bench")

    preflight_all()  # warm the caches (executor registry, rule list)
    passes, elapsed, cpu = measure(preflight_all, args.seconds)
    plans = passes * len(specs)
    rate, cpu_rate = plans / elapsed, plans / cpu
    parse_passes, parse_elapsed, parse_cpu = measure(parse_all, args.seconds / 3)
    parse_rate = parse_passes * len(documents) / parse_cpu
    # Wall time depends on what else runs on the machine; CPU time is the cost of the rules.
    verdict = "meets" if cpu_rate >= TARGET_PER_SECOND else "BELOW"
    print(f"preflight (spec scope, parsed specs): {cpu_rate:,.0f} plans per CPU second"
          f" ({1e6 / cpu_rate:.0f} us/plan); {verdict} the target of {TARGET_PER_SECOND:,}/s")
    print(f"  wall clock: {rate:,.0f} plans/s ({plans:,} plans in {elapsed:.2f} s;"
          f" load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"  for reference, parsing (pydantic validation): {parse_rate:,.0f} specs per CPU"
          " second")


if __name__ == "__main__":
    main()
