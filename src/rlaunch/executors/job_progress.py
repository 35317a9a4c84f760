"""What a followed job is doing, read from its output as it streams: training steps and bytes
staged, shown as bars (rlaunch.progress) on the launcher's terminal.

The lines are those rlaunch's own job code prints, and their formatters are the owners of the
formats (the tests feed this module those formatters' output):

- `step 6/30 | reward ...`: a training step (`runtimes.smoke.metrics.step_line`);
- `staging model: m@v: 12.3 MB of 50.0 MB (25%), 2 of 8 file(s), 6.1 MB/s`: bytes staged into
  a node cache (`store.transfer.ByteProgress.line`), one bar per node when a Ray task on each
  node stages (`runtimes.staging_ray` labels its lines `[node IP ID]`, behind the prefix Ray
  puts on a task's output).

The job's output itself is echoed unchanged; this only watches it. Lines split across chunks
are joined before they are read.
"""

from __future__ import annotations

import re

from rlaunch.progress import Board

STEP = re.compile(r"^step (?P<done>\d+)/(?P<total>\d+) \|")
STAGED = re.compile(
    r"(?:\[(?P<node>node [^\]]+)\] )?(?P<what>staging [^:\s]+: \S+): "
    r"(?P<done>[\d.]+ [KMG]?B) of (?P<total>[\d.]+ [KMG]?B) \((?P<share>\d+)%\)"
)
TRAINING = "training"


class JobProgress:
    """Feed it the job's output (`feed`); it keeps one bar for the training steps and one per
    staged input on `board`."""

    def __init__(self, board: Board) -> None:
        self._board = board
        self._partial = ""

    def feed(self, text: str) -> None:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        for line in lines:
            self._read(line.rstrip("\r"))

    def _read(self, line: str) -> None:
        if step := STEP.match(line):
            self._board.set(TRAINING, f"{TRAINING}: step {step['done']}/{step['total']}",
                            int(step["done"]), int(step["total"]))
        elif staged := STAGED.search(line):
            what = f"[{staged['node']}] {staged['what']}" if staged["node"] else staged["what"]
            self._board.set(what, f"{what}: {staged['done']} of {staged['total']}",
                            int(staged["share"]), 100)
