"""Run inside a SkyRL contract env (scripts/skyrl-contract-env RELEASE), not under pytest.

    PYTHONPATH=src python handoff_batch.py CASES_JSON RESULT_JSON

CASES_JSON maps a case id to the argv of `python -m rlaunch.runtimes.skyrl_handoff`. Each case
runs the module's own `main(argv)`, in this one process, so that SkyRL's imports (the real torch
and ray among them, a few seconds of CPU) are paid once per release rather than once per case;
each case's stdout is kept apart. Writes one JSON object to RESULT_JSON: per id, the exit status
`main` returned, its stdout, and the traceback if it raised (a crash the test then reports).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from pathlib import Path

from rlaunch.runtimes import skyrl_handoff


def run(argv: list[str]) -> dict[str, object]:
    out = io.StringIO()
    crash = ""
    with contextlib.redirect_stdout(out):
        try:
            code = skyrl_handoff.main(argv)
        except Exception:  # reported with the case, as a crashed process would be
            code, crash = 1, traceback.format_exc()
    return {"code": code, "stdout": out.getvalue(), "crash": crash}


def main(cases_json: str, result_json: str) -> int:
    cases = json.loads(Path(cases_json).read_text(encoding="utf-8"))
    results = {case_id: run(argv) for case_id, argv in cases.items()}
    Path(result_json).write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
