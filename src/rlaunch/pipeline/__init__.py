"""Pipelines: a run that reads other runs' exports launches them first (docs/pipelines.md)."""

from rlaunch.pipeline.plan import Stage, plan_pipeline, stage_specs
from rlaunch.pipeline.runner import run_pipeline

__all__ = ["Stage", "plan_pipeline", "run_pipeline", "stage_specs"]
