"""`./pants plans TARGET`: the role plans of a GPU budget that preflight accepts for an rl_run, as
`rlaunch plans` prints them (docs/plans.md).

The run's spec is built the way `package` builds it (the same RunSpecDocument, written into a
sandbox), and `python -m rlaunch plans` searches it in one Process on the project runtime. The
goal's options are passed through to the library, which checks them and says what is wrong; the
budget defaults to the run's own allocation. The search is deterministic in its inputs, so a
successful search is cached like `check` (its CPU-seconds line is that of the run that computed
it).
"""

from __future__ import annotations

from typing import Optional

from pants.engine.console import Console
from pants.engine.fs import CreateDigest, Digest, FileContent
from pants.engine.goal import Goal, GoalSubsystem
from pants.engine.process import FallibleProcessResult
from pants.engine.rules import Get, collect_rules, goal_rule
from pants.engine.target import Targets
from pants.option.option_types import BoolOption, IntOption, StrListOption, StrOption
from pants.util.strutil import help_text

from rlaunch_pants.process import RlaunchProcess
from rlaunch_pants.run_fields import RlRunRolePlanField
from rlaunch_pants.specs import RunSpecDocument, RunSpecRequest, spec_file_path


class PlansSubsystem(GoalSubsystem):
    name = "plans"
    help = help_text(
        """
        Search the role plans of a GPU budget that preflight accepts for one `rl_run` target,
        and print the best few as `role_plan(...)` targets (`rlaunch plans` on the run's spec:
        docs/plans.md says what is searched and what the ranking claims).

            ./pants plans --nodes=2 --gpus-per-node=8 --accelerator=H100 --strategy=megatron \\
                experiments/qwen3-30b-a3b-megatron:grpo

        The options go between `plans` and the target (Pants scopes a flag to the goal before
        it; after the target, write `--plans-nodes=2`). The budget defaults to the run's own
        allocation. The output is valid BUILD syntax;
        a plan that needs offload or LoRA (`--allow-offload`, `--allow-lora=RANK`) prints the
        settings the rl_run must add under its role_plan.
        """
    )

    nodes = IntOption(default=None, help="Nodes of the budget (default: the run's own).")
    gpus_per_node = IntOption(
        default=None, help="GPUs per node of the budget (default: the run's own)."
    )
    accelerator = StrOption(
        default=None,
        help="The GPU, as preflight's memory table names it (H100, A100-40GB, ...; default: the "
        "run's own).",
    )
    strategy = StrListOption(
        default=[], help="Training strategies to search, `fsdp` and/or `megatron`; default both."
    )
    release = StrOption(
        default=None, help="Plan for SkyRL release X.Y.Z instead of the run's pinned one."
    )
    train_batch = IntOption(default=None, help="train_batch_size (prompts) to plan for.")
    samples = IntOption(default=None, help="n_samples_per_prompt to plan for.")
    max_prompt_length = IntOption(default=None, help="max_prompt_length to plan for.")
    max_generate_length = IntOption(default=None, help="max_generate_length to plan for.")
    top = IntOption(default=None, help="How many plans to print (the library's default: 5).")
    allow_offload = BoolOption(
        default=False,
        help="Also try CPU offload (FSDP: the reference, the policy, both; Megatron: the "
        "policy's optimizer state) for plans that do not fit without it; such a plan ranks "
        "after plans of as many idle GPUs without it.",
    )
    allow_lora = IntOption(
        default=None,
        help="Also try LoRA adapters of this rank on the policy for plans that do not fit with "
        "full fine-tuning; such a plan ranks after full fine-tuning ones.",
    )

    def library_args(self) -> tuple[str, ...]:
        """The options as `rlaunch plans` takes them (unset ones left out: the library's
        defaults)."""
        values: list[tuple[str, Optional[object]]] = [
            ("--nodes", self.nodes),
            ("--gpus-per-node", self.gpus_per_node),
            ("--accelerator", self.accelerator),
            ("--release", self.release),
            ("--train-batch", self.train_batch),
            ("--samples", self.samples),
            ("--max-prompt-length", self.max_prompt_length),
            ("--max-generate-length", self.max_generate_length),
            ("--top", self.top),
            ("--allow-lora", self.allow_lora),
        ]
        args = [part for flag, value in values if value is not None for part in (flag, str(value))]
        for strategy in self.strategy:
            args += ["--strategy", strategy]
        if self.allow_offload:
            args.append("--allow-offload")
        return tuple(args)


class Plans(Goal):
    subsystem_cls = PlansSubsystem
    environment_behavior = Goal.EnvironmentBehavior.LOCAL_ONLY


def one_run(addresses: list[str], given: list[str]) -> Optional[str]:
    """Why the targets asked for are not exactly one rl_run, or None."""
    if len(addresses) == 1:
        return None
    example = "./pants plans --nodes=2 --gpus-per-node=8 --accelerator=H100 experiments/x:grpo"
    if not addresses:
        others = f" ({', '.join(given)} {'is' if len(given) == 1 else 'are'} not)" if given else ""
        return (f"`./pants plans` needs one rl_run target{others}: the plans are searched for "
                f"one run's spec, e.g. `{example}`")
    return (f"`./pants plans` takes one rl_run target, got {len(addresses)}: "
            f"{', '.join(addresses)}; name one (the plans are searched for one run's spec)")


@goal_rule
async def plans(console: Console, subsystem: PlansSubsystem, targets: Targets) -> Plans:
    runs = [t.address for t in targets if t.has_field(RlRunRolePlanField)]
    problem = one_run([str(a) for a in runs], [str(t.address) for t in targets])
    if problem is not None:
        console.print_stderr(problem)
        return Plans(exit_code=1)
    address = runs[0]
    document = await Get(RunSpecDocument, RunSpecRequest(address))
    spec_path = spec_file_path(address)
    inputs = await Get(Digest, CreateDigest([FileContent(spec_path, document.json.encode())]))
    result = await Get(
        FallibleProcessResult,
        RlaunchProcess(
            args=("plans", spec_path, *subsystem.library_args()),
            description=f"Search the role plans of {address}",
            input_digest=inputs,
        ),
    )
    # The library's own output: plans on stdout, its errors (naming the option) on stderr.
    console.print_stdout(result.stdout.decode(), end="")
    console.print_stderr(in_pants_terms(result.stderr.decode()), end="")
    return Plans(exit_code=result.exit_code)


# What click says of the command around an option it refuses, and what it is under Pants.
CLICK_USAGE = {
    "Usage: rlaunch plans [OPTIONS] SPEC": "Usage: ./pants plans [OPTIONS] TARGET",
    "Try 'rlaunch plans --help' for help.": "Try `./pants help plans` for help.",
}


def in_pants_terms(stderr: str) -> str:
    """The library's errors, with its usage lines saying how to ask Pants."""
    return "\n".join(CLICK_USAGE.get(line, line) for line in stderr.split("\n"))


def rules():  # type: ignore[no-untyped-def]
    return collect_rules()
