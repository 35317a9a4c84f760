"""Print every finding of preflight on a fixed set of specs, one JSON line per spec, and first
which modules ran (rlaunch.compiled.running): tests/test_compiled.py runs it once on the compiled
modules and once on the pure ones and compares.

The specs: each rule's own example (every rule's error path, at world scope), the worked
examples, and random plans (benchmarks/preflight_throughput.py's generator, seeded).

    PYTHONPATH=src:benchmarks python tests/compiled_findings.py RANDOM_PLANS"""

from __future__ import annotations

import json
import sys

from preflight_throughput import random_plans
from rlaunch import compiled
from rlaunch.preflight import all_rules, run_preflight
from rlaunch.spec import parse_spec
from rlaunch.spec.examples import WORKED_EXAMPLES, worked_example


def show(findings: list) -> str:
    return json.dumps([[f.code, f.severity, list(f.paths), f.message, f.fix] for f in findings])


def main(count: int) -> None:
    rules = all_rules()  # imports every module preflight runs, before `running` looks
    print(compiled.running())
    for rule in rules:
        spec = parse_spec(rule.example.spec_data(), rule.code)
        print(show(run_preflight(spec, scope="all", world=rule.example.build_world())))
    for name in sorted(WORKED_EXAMPLES):
        print(show(run_preflight(parse_spec(worked_example(name), name))))
    for document in random_plans(count):
        print(show(run_preflight(parse_spec(document, "random"))))


if __name__ == "__main__":
    main(int(sys.argv[1]))
