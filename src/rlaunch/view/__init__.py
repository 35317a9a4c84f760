"""Views of runs from what is on record, not from a live head.

`rlaunch ls`, `show` and `plot` read the launch ledger (`{prefix}/_ledger/`), each attempt's
`metrics.jsonl` and `job.log`, and the terminal manifest: they answer the same after the head that
ran a job is gone, and on any store prefix (a directory, gs://, s3://).
"""

from rlaunch.view.runs import RunStore, RunSummary, ViewError, summarize

__all__ = ["RunStore", "RunSummary", "ViewError", "summarize"]
