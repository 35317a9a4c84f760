"""Experiments as Click mains: `@rl_build_options` (docs/launching.md, "Experiments in Python").

    @click.command()
    @rl_build_options
    @click.option("--steps", type=int, default=20)
    def main(version: str, steps: int) -> list[RunSpec]:
        return [smoke_run(version, steps), full_run(version, steps)]

The decorated main builds and returns its terminal RunSpec(s) (its run handles) for `--version`.
The decorator then, for each handle in order:
- without `--run`: preflights it in the real world and prints the plan (roles, GPUs, identities,
  paths); nothing is submitted;
- with `--dry-run`: also writes its launch YAML and prints what would be submitted;
- with `--run`: launches it through `rlaunch.launch.launch`, the same function `rlaunch launch`
  and `./pants run` call (there is no other submission path), stopping at the first failure.
A handle whose model is another run's export is a pipeline: it goes through
`rlaunch.pipeline.run_pipeline`, as `rlaunch launch` of its spec does (upstream runs that have
not finished are launched first).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from rlaunch.executors import local_head
from rlaunch.launch import LaunchRefused, LaunchRequest, Plan, launch, preflight
from rlaunch.paths import run_paths
from rlaunch.pipeline import plan_pipeline, run_pipeline
from rlaunch.pipeline.plan import describe
from rlaunch.spec import RunSpec, SpecError, parse_spec

Handles = RunSpec | dict[str, Any] | Iterable[RunSpec | dict[str, Any]]


def _as_specs(handles: Handles, where: str) -> list[RunSpec]:
    items = [handles] if isinstance(handles, (RunSpec, dict)) else list(handles or [])
    specs = []
    for index, item in enumerate(items):
        if isinstance(item, RunSpec):
            specs.append(item)
        elif isinstance(item, dict):
            specs.append(parse_spec(item, f"{where} handle {index}"))
        else:
            raise click.UsageError(
                f"{where} returned a {type(item).__name__} as run handle {index}; return a "
                f"RunSpec (or a list of them, launched in order)"
            )
    if not specs:
        raise click.UsageError(f"{where} returned no run handle; return the RunSpec(s) to launch")
    return specs


def export_of(run: RunSpec | dict[str, Any]) -> dict[str, Any]:
    """Another run's export as a model (`model`, `reference_model`, `critic_model` or a built
    artifact's deps) of a pipeline stage written in Python: identity `run@version`, fingerprint
    derived from the run's. Returning the stage launches `run` first unless it finished."""
    data = run.model_dump(mode="json") if isinstance(run, RunSpec) else dict(run)
    return {"type": "run_export", "name": data["name"], "version": data["version"], "run": data}


def _gpus(nodes: int, per_node: int) -> str:
    return f"{nodes} node(s) x {per_node} GPU(s) = {nodes * per_node} GPU(s)"


def describe_plan(plan: Plan) -> list[str]:
    """The plan of one preflighted run: identities, roles and their GPUs, derived paths."""
    spec = plan.spec
    role_plan, allocation = spec.role_plan, spec.execution.allocation
    policy, rollout, batch = role_plan.policy, role_plan.rollout, role_plan.batch
    paths = run_paths(plan.store_prefix, spec.name, spec.version)
    layout = role_plan.policy_parallelism
    split = layout.replica_factors() + (f", EP {layout.expert}" if layout.megatron else "")

    def aux(role: Any) -> str:
        if role is None:
            return "none"
        if role.colocated_with_policy:
            return f"colocated with the policy ({_gpus(role.num_nodes, role.num_gpus_per_node)})"
        return _gpus(role.num_nodes, role.num_gpus_per_node)

    inputs = ", ".join(f"{slot} {ident}" for slot, ident in spec.input_identities().items())
    smoke = (f"; smoke of {spec.smoke_of.name}@{spec.smoke_of.version}" if spec.smoke_of else "")
    return [
        f"{spec.identity}: fingerprint {spec.fingerprint}{smoke}",
        f"  runtime    {spec.runtime.name} ({spec.runtime.profile} "
        f"{spec.runtime.package or spec.runtime.git}), {spec.runtime_fingerprint}",
        f"  execution  {spec.execution.executor}; allocation "
        f"{_gpus(allocation.num_nodes, allocation.gpus_per_node)} {allocation.accelerator}, "
        f"{allocation.cpus_per_node} CPUs per node",
        f"  policy     {role_plan.strategy} {_gpus(policy.num_nodes, policy.num_gpus_per_node)}, "
        f"{split} -> DP {layout.data_parallel}",
        f"  reference  {aux(role_plan.reference)}",
        f"  critic     {aux(role_plan.critic)}",
        f"  rollout    {rollout.num_engines} engine(s) x (TP {rollout.tensor_parallel_size} x "
        f"PP {rollout.pipeline_parallel_size} x DP {rollout.data_parallel_size}) = "
        f"{rollout.total_gpus} GPU(s), EP {rollout.expert_parallel_size}, {rollout.backend}; "
        f"colocate_all {str(role_plan.placement.colocate_all).lower()}",
        f"  batch      train {batch.train_batch_size} prompts x {batch.n_samples_per_prompt} "
        f"samples, policy mini {batch.policy_mini_batch_size}, micro train "
        f"{batch.micro_train_batch_size_per_gpu} / forward "
        f"{batch.micro_forward_batch_size_per_gpu} per GPU",
        f"  inputs     {inputs}",
        f"  run root   {paths.run_root}",
        f"  checkpoint {paths.checkpoint_root}",
        f"  export     {paths.export_root}",
        f"  terminal   {paths.terminal_manifest}",
        f"  ledger     {paths.ledger_record}",
    ]


def run_handles(
    specs: list[RunSpec],
    *,
    run: bool,
    dry_run: bool,
    store: str | None,
    follow: bool,
    skip_smoke_gate: str | None,
    keep_head: bool,
    source: str,
    echo: Callable[[str], None] = click.echo,
) -> int:
    """Plan, dry-run or launch each run in order; the exit code of the first that fails."""
    def say(message: str) -> None:
        click.echo(message, err=True)

    # The runs share one local head; the one this experiment started is stopped at the end.
    state_dir = local_head.default_state_dir()
    previous_head = local_head.read_record(state_dir)
    try:
        return _run_each(specs, run=run, dry_run=dry_run, store=store, follow=follow,
                         skip_smoke_gate=skip_smoke_gate, source=source, echo=echo, say=say)
    finally:
        if run and follow and not keep_head:
            local_head.stop_if_started_since(previous_head, state_dir, say)


def _run_each(
    specs: list[RunSpec],
    *,
    run: bool,
    dry_run: bool,
    store: str | None,
    follow: bool,
    skip_smoke_gate: str | None,
    source: str,
    echo: Callable[[str], None],
    say: Callable[[str], None],
) -> int:
    smokes: dict[str, str] = {}
    for spec in specs:
        # A smoke returned before its full run will have run by then (with --run it really
        # has: the gate is checked for real); a plan or dry run reports the gate as pending.
        pending = smokes.get(spec.identity)
        if spec.smoke_of is not None:
            smokes[f"{spec.smoke_of.name}@{spec.smoke_of.version}"] = spec.identity
        try:
            if spec.run_exports():
                code = _pipeline(spec, run=run, dry_run=dry_run, store=store, source=source,
                                 echo=echo, say=say)
                if code:
                    return code
            elif run or dry_run:
                request = LaunchRequest(
                    spec=spec, source=source, dry_run=dry_run and not run, follow=follow,
                    skip_smoke_gate=skip_smoke_gate, store=store, hold_head=True,
                    smoke_runs_first=pending)
                result = launch(request, echo=lambda text: click.echo(text, nl=False), say=say)
                if result.exit_code:
                    return result.exit_code
            else:
                plan = preflight(spec, source=source, store=store,
                                 skip_smoke_gate=skip_smoke_gate, say=say,
                                 smoke_runs_first=pending)
                for line in describe_plan(plan):
                    echo(line)
        except LaunchRefused as refused:
            say(f"rlaunch: {spec.identity} refused\n{refused}")
            return refused.exit_code
    if not run and not dry_run:
        echo("preflight passed; nothing was submitted (add --run to launch)")
    return 0


def _pipeline(spec: RunSpec, *, run: bool, dry_run: bool, store: str | None, source: str,
              echo: Callable[[str], None], say: Callable[[str], None]) -> int:
    """A run that reads other runs' exports: its whole pipeline, as `rlaunch launch` runs it
    (without `--run` or `--dry-run`: the pipeline's plan and the run's own preflight)."""
    if run or dry_run:
        return run_pipeline([spec], title=spec.identity, source=source, out_dir=Path("dist"),
                            store=store, repo=None, dry_run=dry_run and not run, line=echo,
                            say=say)
    stages = plan_pipeline([spec], store)
    describe(spec.identity, stages, store, echo)
    upstream = [stage.spec.identity for stage in stages[:-1] if stage.action == "launch"]
    plan = preflight(spec, source=source, store=store, say=say, upstream_runs_first=upstream)
    for line in describe_plan(plan):
        echo(line)
    return 0


def rl_build_options(func: Callable[..., Handles]) -> Callable[..., None]:
    """Decorate an experiment's Click main (below `@click.command()`): adds `--version`
    (required, passed to main), `--run`, `--dry-run`, `--store`, `--follow/--detach`,
    `--skip-smoke-gate` and `--keep-head`, and launches what main returns."""
    if isinstance(func, click.Command):
        raise TypeError(
            "@rl_build_options goes below @click.command(), directly on the main function"
        )
    where = f"{func.__module__}.{func.__qualname__}"

    @functools.wraps(func)
    def main(
        *args: Any,
        run: bool,
        dry_run: bool,
        store: str | None,
        follow: bool,
        skip_smoke_gate: str | None,
        keep_head: bool,
        **kwargs: Any,
    ) -> None:
        try:
            specs = _as_specs(func(*args, **kwargs), where)
        except SpecError as err:
            raise click.ClickException(err.render()) from None
        code = run_handles(specs, run=run, dry_run=dry_run, store=store, follow=follow,
                           skip_smoke_gate=skip_smoke_gate, keep_head=keep_head, source=where)
        click.get_current_context().exit(code)

    options = [
        click.option("--version", "version", required=True, metavar="VERSION",
                     help="Version of the runs: YYYY.MM.DD[.N] (immutable once launched) or "
                          "dev / <label>-dev."),
        click.option("--run", is_flag=True,
                     help="Launch the runs. Without it: preflight them and print the plan."),
        click.option("--dry-run", is_flag=True,
                     help="Write each launch YAML and print what would be submitted."),
        click.option("--store", metavar="PREFIX", help="Artifact store prefix."),
        click.option("--follow/--detach", default=True, show_default=True,
                     help="Stream each job's logs until it ends, or return once submitted."),
        click.option("--skip-smoke-gate", metavar="REASON",
                     help="Launch a calendar-versioned full run without a recorded smoke."),
        click.option("--keep-head", is_flag=True,
                     help="local: leave the Ray head running afterwards."),
    ]
    for option in reversed(options):
        main = option(main)
    return main
