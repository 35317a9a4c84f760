"""Launching a pipeline: the planned stages in order, each through the one submission path.

Each stage is launched as `rlaunch launch` would launch it alone (its own preflight, ledger
record, smoke gate and lock), by the sweep's point launcher, on one local Ray head kept between
stages. Before the first launch, each stage's tokenizer is compared with the one its upstream
runs trained with (`rlaunch.pipeline.tokenizers`). A stage that does not succeed stops the
chain and is named; running the pipeline again reuses what finished and resumes there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rlaunch.executors import local_head
from rlaunch.launch import EXIT_OK, EXIT_REFUSED, LaunchRefused, LaunchRequest, launch
from rlaunch.pipeline.plan import Stage, describe, plan_pipeline
from rlaunch.pipeline.tokenizers import refuse_tokenizer_mismatches
from rlaunch.progress import progress
from rlaunch.spec import RunSpec
from rlaunch.sweep.runner import PointLauncher, SweepPoint

Line = Callable[[str], None]


def _dry_run(stages: list[Stage], *, source: str, out_dir: Path, store: str | None,
             repo: Path | None, line: Line, say: Line) -> int:
    first: list[str] = []
    for index, stage in enumerate(stages, start=1):
        if stage.action != "launch":
            continue
        spec = stage.spec
        try:
            request = LaunchRequest(spec=spec, source=source, dry_run=True, store=store,
                                    out=out_dir / spec.name / "launch.yaml", repo=repo,
                                    upstream_runs_first=tuple(first))
            result = launch(
                request, say=lambda text, tag=f"[{index}/{len(stages)}]": say(f"{tag} {text}"))
        except LaunchRefused as err:
            line(f"[{index}/{len(stages)}] {spec.identity}: refused\n{err}")
            return err.exit_code
        line(f"[{index}/{len(stages)}] {spec.identity}: dry run, nothing submitted "
             f"({result.yaml_path})")
        first.append(spec.identity)
    line("pipeline: dry run; nothing submitted")
    return EXIT_OK


def run_pipeline(
    terminals: list[RunSpec],
    *,
    title: str,
    source: str,
    out_dir: Path,
    store: str | None,
    repo: Path | None,
    dry_run: bool,
    line: Line,
    say: Line,
    rehearse: bool = False,
) -> int:
    """Plan the runs `terminals` and every run upstream of them, print the plan, and launch
    every stage that is not reused, upstream first; the exit code. `title` names the pipeline
    in its lines: the terminal run (`rlaunch launch`), or the artifact that reads the runs
    (`rlaunch build` of an eval stage). `rehearse`: every stage is rehearsed (`store` is then
    the rehearsal store, where the finished rehearsals of upstream stages are reused)."""
    try:
        stages = plan_pipeline(terminals, store)
    except LaunchRefused as err:
        line(f"pipeline of {title}: refused\n{err}")
        return err.exit_code
    describe(title, stages, store, line)
    try:
        refuse_tokenizer_mismatches(stages, store, build=not dry_run, say=say)
    except LaunchRefused as err:
        line(f"pipeline of {title}: refused\n{err}")
        return err.exit_code
    if dry_run:
        return _dry_run(stages, source=source, out_dir=out_dir, store=store, repo=repo,
                        line=line, say=say)
    todo = [(index, stage) for index, stage in enumerate(stages, start=1)
            if stage.action == "launch"]
    if not todo:
        line(f"pipeline of {title}: every stage finished with this spec; nothing launched")
        return EXIT_OK
    state_dir = local_head.default_state_dir()
    previous_head = local_head.read_record(state_dir)
    try:
        with progress("pipeline", total=len(todo)) as advance:
            launcher = PointLauncher(total=len(stages), out_dir=out_dir, store=store,
                                     repo=repo, line=line, say=say, advance=advance,
                                     rehearse=rehearse)
            for index, stage in todo:
                outcome = launcher.launch_point(index, SweepPoint(source, stage.spec))
                if outcome.status != "SUCCEEDED":
                    line(f"pipeline of {title}: stopped at [{index}/{len(stages)}] "
                         f"{stage.spec.identity} ({outcome.status}); fix it and run the "
                         f"pipeline again: finished stages are reused, it resumes there")
                    return outcome.exit_code or EXIT_REFUSED
    finally:
        local_head.stop_if_started_since(previous_head, state_dir, say)
    line(f"pipeline of {title}: {len(todo)} launched, {len(stages) - len(todo)} reused; "
         f"every stage finished")
    return EXIT_OK
