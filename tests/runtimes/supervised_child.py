"""A child for the adapter's supervision tests, in the place of a runtime's entrypoint or
handoff check: it writes nothing a runtime writes. `CHILD_MODE=fail` exits 3 at once;
`CHILD_MODE=wait` writes its pid to `CHILD_READY`, then waits for a signal and exits with
128 + its number."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def main() -> int:
    if os.environ.get("CHILD_MODE") == "fail":
        return 3

    def stop(signum: int, frame: object) -> None:
        print(f"child: got signal {signum}", flush=True)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    Path(os.environ["CHILD_READY"]).write_text(str(os.getpid()))
    time.sleep(120)
    return 1


if __name__ == "__main__":
    sys.exit(main())
