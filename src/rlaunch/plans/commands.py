"""`rlaunch plans SPEC --nodes N --gpus-per-node G --accelerator A`: the role plans of a GPU
budget that preflight accepts, best first."""

from __future__ import annotations

import time
from typing import Any

import click

from rlaunch.plans.search import STRATEGIES, Budget, Ranked, build_snippet, describe, plan_name
from rlaunch.plans.search import ranked as rank_plans
from rlaunch.plans.search import search as search_plans
from rlaunch.spec.documents import DocumentError, read_document
from rlaunch.spec.io import SpecError, parse_spec


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
@click.option("--nodes", type=click.IntRange(min=1), required=True, help="Nodes of the budget.")
@click.option("--gpus-per-node", type=click.IntRange(min=1), required=True,
              help="GPUs per node of the budget.")
@click.option("--accelerator", required=True,
              help="The GPU, as preflight's memory table names it (H100, A100-40GB, ...).")
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
def plans_command(spec_file: str, nodes: int, gpus_per_node: int, accelerator: str,
                  strategies: tuple[str, ...], model_file: str | None, release: str | None,
                  train_batch: int | None, samples: int | None, max_prompt_length: int | None,
                  max_generate_length: int | None, top: int) -> None:
    """Search the role plans of a GPU budget (NODES x GPUS_PER_NODE of ACCELERATOR) that
    preflight accepts, for the model, data, runtime, lengths, algorithm and settings of SPEC
    (a RunSpec file, such as `./pants package` writes beside the launch YAML), and print the
    best few as role_plan(...) BUILD targets.

    The search tries: FSDP (SP) and Megatron (TP, PP, EP) policies, all roles colocated or the
    policy on GPUs of its own (the reference beside it or on GPUs of its own), vLLM engines of
    every TP x DP (EP for MoE models) over the GPUs left, and micro batches 1, 2, 4, 8 (the
    forward micro batch twice that). Each plan keeps SPEC's batch targets and settings; it is
    valid when preflight finds no error (every spec-scope rule). Offload and LoRA are not
    searched: SPEC's settings decide them.

    Ranking: fewest idle GPUs, then fewest preflight warnings, then fewest engines crossing a
    node boundary, then the most memory left in the tightest training phase (preflight's
    estimates);
    one plan per geometry, at its largest micro batch. The ranking says which plans waste
    least and have the most memory to spare; it does NOT predict throughput or step time.
    """
    base = base_document(spec_file, model_file=model_file, release=release,
                         train_batch=train_batch, samples=samples,
                         lengths={"max_prompt_length": max_prompt_length,
                                  "max_input_length": max_prompt_length,
                                  "max_generate_length": max_generate_length})
    try:
        parse_spec(base, spec_file)
    except SpecError as err:
        raise click.ClickException(err.render()) from None
    budget = Budget(nodes, gpus_per_node, accelerator)
    started = time.process_time()
    result = search_plans(base, budget, strategies or STRATEGIES)
    plans = rank_plans(result, budget)
    spent = time.process_time() - started
    # Every line but the snippets is a comment: the output pastes into a BUILD file as it is.
    click.echo(f"# {len(plans)} valid plan geometries ({len(result.valid)} plans) on {nodes} x"
               f" {gpus_per_node} {accelerator}: {result.preflighted} preflighted,"
               f" {result.pruned} ruled out by an earlier finding's family,"
               f" {spent:.1f} CPU seconds")
    if not plans:
        raise click.ClickException("no role plan of this budget passes preflight; preflight"
                                   " SPEC itself (`rlaunch preflight SPEC`) for errors no plan"
                                   " can fix, or give a larger budget")
    for index, plan in enumerate(plans[:top], start=1):
        click.echo(render(index, plan))


def render(index: int, plan: Ranked) -> str:
    spec = plan.valid.spec
    warnings = "".join(f"\n#   warning {finding.code}: {finding.message[:160]}"
                       for finding in plan.valid.findings)
    return (f"\n# {index}. {describe(plan.facts)}{warnings}\n"
            f"{build_snippet(spec, plan_name(plan.facts, spec))}")
