"""`rlaunch plans SPEC --nodes N --gpus-per-node G --accelerator A`: the role plans of a GPU
budget that preflight accepts, best first."""

from __future__ import annotations

import textwrap

import time
from typing import Any

import click

from rlaunch import compiled
from rlaunch.plans.search import (
    LORA_RANK,
    OPTIMIZER_OFFLOADED,
    POLICY_OFFLOAD,
    STRATEGIES,
    Allowed,
    Budget,
    Ranked,
    build_snippet,
    describe,
    plan_name,
    settings_lines,
    standing,
)
from rlaunch.plans.search import ranked as rank_plans
from rlaunch.plans.search import search as search_plans
from rlaunch.preflight.rules.settings import MEGATRON_OPTIMIZER_KWARGS
from rlaunch.progress import progress
from rlaunch.spec.documents import DocumentError, read_document
from rlaunch.spec.io import SpecError, parse_spec
from rlaunch.spec.run import RunSpec


def base_document(spec_file: str, *, model_file: str | None, release: str | None,
                  train_batch: int | None, samples: int | None,
                  lengths: dict[str, int | None]) -> dict[str, Any]:
    """The spec the plans are searched for: SPEC with the model, release and targets given."""
    base, model = _read(spec_file, "SPEC"), None
    if model_file is not None:
        model = _read(model_file, "--model")
    if not isinstance(base, dict) or not isinstance(base.get("role_plan"), dict):
        raise click.ClickException(f"{spec_file}: not a RunSpec document (no role_plan mapping);"
                                   " give a spec file such as `./pants package` writes"
                                   " (dist/<path>/<name>/spec.json)")
    base = dict(base)
    if model is not None:
        if not isinstance(model, dict) or model.get("type") != "hf_model":
            raise click.ClickException(f"--model {model_file}: not an hf_model document (its"
                                       " `type` must be hf_model, with its facts)")
        base["model"] = base["tokenizer"] = model
    if release is not None:
        base["runtime"] = {**base["runtime"], "package": f"skyrl=={release}", "git": None}
    batch = dict(base["role_plan"]["batch"])
    if train_batch is not None:
        batch["train_batch_size"] = train_batch
        batch["policy_mini_batch_size"] = min(batch["policy_mini_batch_size"], train_batch)
    if samples is not None:
        batch["n_samples_per_prompt"] = samples
    base["role_plan"] = {**base["role_plan"], "batch": batch}
    given = {name: value for name, value in lengths.items() if value is not None}
    if given:
        base["lengths"] = {**base["lengths"], **given}
    return base


def _read(path: str, what: str) -> Any:
    try:
        return read_document(path)
    except DocumentError as err:
        raise click.ClickException(f"{what} {path}: {err}") from None


@click.command("plans")
@click.argument("spec_file", metavar="SPEC")
@click.option("--nodes", type=click.IntRange(min=1), default=None,
              help="Nodes of the budget (default: SPEC's execution.allocation.num_nodes).")
@click.option("--gpus-per-node", type=click.IntRange(min=1), default=None,
              help="GPUs per node of the budget (default: SPEC's"
                   " execution.allocation.gpus_per_node).")
@click.option("--accelerator", default=None,
              help="The GPU, as preflight's memory table names it (H100, A100-40GB, ...;"
                   " default: SPEC's execution.allocation.accelerator).")
@click.option("--strategy", "strategies", type=click.Choice(STRATEGIES), multiple=True,
              help="Training strategies to search (repeatable); default both.")
@click.option("--model", "model_file", default=None, metavar="FILE",
              help="An hf_model document (with its facts) to plan for instead of SPEC's model.")
@click.option("--release", default=None, metavar="X.Y.Z",
              help="Plan for SkyRL release X.Y.Z (pins runtime.package skyrl==X.Y.Z).")
@click.option("--train-batch", type=int, default=None, help="train_batch_size (prompts).")
@click.option("--samples", type=int, default=None, help="n_samples_per_prompt.")
@click.option("--max-prompt-length", type=int, default=None)
@click.option("--max-generate-length", type=int, default=None)
@click.option("--top", type=click.IntRange(min=1), default=5, show_default=True,
              help="How many plans to print.")
@click.option("--allow-offload", is_flag=True,
              help="Also try FSDP's CPU offload of the reference, the policy, or both"
                   " (trainer.ref.fsdp_config.cpu_offload,"
                   " trainer.policy.fsdp_config.cpu_offload), and Megatron's CPU offload of the"
                   " policy's optimizer state (optimizer_cpu_offload and"
                   " optimizer_offload_fraction 1.0 in"
                   " trainer.policy.megatron_config.optimizer_config_kwargs), for plans that do"
                   " not fit without it. Offload costs speed: such a plan ranks after plans of"
                   " as many idle GPUs without it.")
@click.option("--allow-lora", "lora_rank", type=int, default=None, metavar="RANK",
              help="Also try LoRA adapters of rank RANK on the policy"
                   " (trainer.policy.model.lora.rank; alpha and target modules stay SPEC's or"
                   " SkyRL's defaults) for plans that do not fit with full fine-tuning. LoRA"
                   " changes what is trained: such a plan ranks after full fine-tuning ones"
                   " of as many idle GPUs.")
def plans_command(spec_file: str, nodes: int | None, gpus_per_node: int | None,
                  accelerator: str | None,
                  strategies: tuple[str, ...], model_file: str | None, release: str | None,
                  train_batch: int | None, samples: int | None, max_prompt_length: int | None,
                  max_generate_length: int | None, top: int, allow_offload: bool,
                  lora_rank: int | None) -> None:
    """Search the role plans of a GPU budget (NODES x GPUS_PER_NODE of ACCELERATOR; SPEC's
    own allocation unless given) that preflight accepts, for the model, data, runtime,
    lengths, algorithm and settings of SPEC (a RunSpec file, such as `./pants package` writes
    beside the launch YAML; `./pants plans TARGET` does both), and print the best few as
    role_plan(...) BUILD targets.

    The search tries: FSDP (SP) and Megatron (TP, PP, EP) policies, all roles colocated or the
    policy on GPUs of its own (the reference beside it or on GPUs of its own), vLLM engines of
    every TP x DP (EP for MoE models) over the GPUs left, and micro batches 1, 2, 4, 8 (the
    forward micro batch twice that). Each plan keeps SPEC's batch targets and settings; it is
    valid when preflight finds no error (every spec-scope rule). Offload and LoRA are not
    searched unless allowed (--allow-offload, --allow-lora RANK): each geometry then takes the
    cheapest that fits, none, then offload (FSDP: the reference, the policy, both; Megatron:
    the policy's optimizer state), then LoRA (alone, then with each offload), and the plan
    prints the settings it adds for the rl_run (they are settings, not role_plan fields).

    Ranking: fewest idle GPUs, then the cheapest concession (none, offload, LoRA), then fewest
    preflight warnings, then fewest engines crossing a node boundary, then the most memory left
    in the tightest training phase (preflight's estimates);
    one plan per geometry, at its largest micro batch. The ranking says which plans waste
    least and have the most memory to spare; it does NOT predict throughput or step time.
    """
    base = base_document(spec_file, model_file=model_file, release=release,
                         train_batch=train_batch, samples=samples,
                         lengths={"max_prompt_length": max_prompt_length,
                                  "max_input_length": max_prompt_length,
                                  "max_generate_length": max_generate_length})
    try:
        parsed = parse_spec(base, spec_file)
    except SpecError as err:
        raise click.ClickException(err.render()) from None
    strategies = strategies or STRATEGIES
    allowed = allowances(parsed, strategies, allow_offload, lora_rank)
    allocation = parsed.execution.allocation
    budget = Budget(nodes or allocation.num_nodes, gpus_per_node or allocation.gpus_per_node,
                    accelerator or allocation.accelerator)
    started = time.process_time()
    with progress(f"searching role plans on {budget.nodes} x {budget.gpus_per_node}"
                  f" {budget.accelerator}") as advance:
        result = search_plans(base, budget, strategies, allowed=allowed, report=lambda found:
                              advance(0, f"searching role plans: {found.preflighted:,}"
                                         f" preflighted, {found.pruned:,} ruled out,"
                                         f" {len(found.valid):,} valid"))
    plans = rank_plans(result, budget)
    spent = time.process_time() - started
    # Every line but the snippets is a comment: the output pastes into a BUILD file as it is.
    click.echo(f"# {len(plans)} valid plan geometries ({len(result.valid)} plans) on"
               f" {budget.nodes} x {budget.gpus_per_node} {budget.accelerator}:"
               f" {result.preflighted} preflighted,"
               f" {result.pruned} ruled out by an earlier finding's family,"
               f" {spent:.1f} CPU seconds, preflight {compiled.running()}"
               + (f"; {advice}" if (advice := compiled.advice()) else ""))
    own = parsed.role_plan
    if budget == Budget(allocation.num_nodes, allocation.gpus_per_node,
                        allocation.accelerator) and own.strategy in strategies:
        # The run's own budget: where its own plan stands, and why the first ranks higher.
        click.echo(f"# SPEC's own budget: {standing(plans, own.model_dump(mode='json'))}")
    if not plans:
        raise click.ClickException("no role plan of this budget passes preflight; preflight"
                                   " SPEC itself (`rlaunch preflight SPEC`) for errors no plan"
                                   " can fix, or give a larger budget")
    for index, plan in enumerate(plans[:top], start=1):
        click.echo(render(index, plan))


def allowances(spec: RunSpec, strategies: tuple[str, ...], offload: bool,
               lora_rank: int | None) -> Allowed:
    """The concessions the options allow, refused where they could not do what they say."""
    if offload and "fsdp" in strategies:
        _settable(spec, "--allow-offload", POLICY_OFFLOAD, True)
    if offload and "megatron" in strategies:
        _settable(spec, "--allow-offload", MEGATRON_OPTIMIZER_KWARGS, OPTIMIZER_OFFLOADED)
    if lora_rank is None:
        return Allowed(offload=offload)
    option = f"--allow-lora {lora_rank}"
    if lora_rank < 1:
        raise click.ClickException(
            f"{option}: a LoRA rank is a positive integer (e.g. 16 or 32); leave the option out"
            " to search full fine-tuning only")
    _settable(spec, option, LORA_RANK, lora_rank)
    own = spec.skyrl_setting(LORA_RANK)
    if isinstance(own, int) and own > 0:
        raise click.ClickException(
            f"{option}: SPEC already trains LoRA adapters (settings {LORA_RANK} = {own}), and"
            " every plan keeps them; drop --allow-lora, or set the rank in SPEC's settings")
    backend = spec.role_plan.rollout.backend
    if backend != "vllm":
        # SkyRL 0.3.0 and 0.4.0 skyrl/train/utils/utils.py validate_cfg: "LoRA enabled
        # requires vLLM backend" (preflight's SET001).
        raise click.ClickException(
            f"{option}: SPEC's rollout backend is {backend}, and SkyRL loads LoRA adapters"
            " into vLLM engines only (SET001), so no LoRA plan could pass; set SPEC's"
            " role_plan.rollout.backend to vllm, or drop --allow-lora")
    return Allowed(offload=offload, lora_rank=lora_rank)


def _settable(spec: RunSpec, option: str, name: str, value: Any) -> None:
    """Refuse an option whose setting the run's pinned runtime does not take."""
    catalog = spec.settings_catalog()
    problem = catalog if isinstance(catalog, str) else catalog.problem(name, value)
    if problem is not None:
        raise click.ClickException(
            f"{option}: the search would set {name}, and SPEC's runtime cannot take it:"
            f" {problem}; drop {option.split()[0]}")


def comment_lines(text: str) -> str:
    """`text` whole, as comment lines of a BUILD file (each line `#   `, wrapped at 100
    columns), each after a newline: the output stays valid BUILD syntax."""
    lines = textwrap.wrap(text, width=96, break_on_hyphens=False, subsequent_indent="  ")
    return "".join(f"\n#   {line}" for line in lines)


def render(index: int, plan: Ranked) -> str:
    spec = plan.valid.spec
    concession = plan.valid.candidate.concession
    warnings = "".join(comment_lines(f"warning {finding.code}: {finding.message}")
                       for finding in plan.valid.findings)
    return (f"\n# {index}. {describe(plan.facts)}{warnings}\n"
            f"{build_snippet(spec, plan_name(plan.facts, spec, concession.tag))}"
            f"{settings_lines(concession.settings)}")
