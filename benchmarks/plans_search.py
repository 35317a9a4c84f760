"""`rlaunch plans` search time: Qwen3-30B-A3B (the qwen3-30b-a3b-megatron experiment's spec) on a
budget of H100s, FSDP and Megatron each, in CPU seconds (time.process_time: the machine is
shared) and wall seconds. Target (issue 27): the 2 x 8 search in under 10 s.

    PYTHONPATH=src:tests $(scripts/runtime) benchmarks/plans_search.py [--nodes N]
        [--allow-offload] [--allow-lora RANK]    # the search with those concessions allowed

The smallest size (`--nodes 1 --gpus-per-node 2`) is what the test suite runs.
"""

from __future__ import annotations

import argparse
import time

from plans.test_search import experiment
from rlaunch.plans.search import Allowed, Budget, ranked, search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--allow-offload", action="store_true")
    parser.add_argument("--allow-lora", type=int, default=0, metavar="RANK")
    args = parser.parse_args()
    allowed = Allowed(offload=args.allow_offload, lora_rank=args.allow_lora)
    allowing = ", ".join(["offload"] * allowed.offload
                         + [f"LoRA rank {allowed.lora_rank}"] * (allowed.lora_rank > 0))
    base = experiment("qwen3-30b-a3b-megatron")
    budget = Budget(args.nodes, args.gpus_per_node, "H100")
    for strategy in ("fsdp", "megatron"):
        cpu, wall = time.process_time(), time.perf_counter()
        result = search(base, budget, (strategy,), allowed=allowed)
        plans = ranked(result, budget)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(f"{strategy} on {args.nodes} x {args.gpus_per_node} H100"
              f"{' allowing ' + allowing if allowing else ''}: {cpu:.2f} CPU s"
              f" ({wall:.2f} s wall); {result.preflighted} preflighted, {result.pruned} pruned,"
              f" {len(result.valid)} valid plans in {len(plans)} geometries")


if __name__ == "__main__":
    main()
