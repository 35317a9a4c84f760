"""Staging throughput from moto's S3 server: rlaunch's staging (cold, then warm) against a plain
parallel copy of the same files.

    PYTHONPATH=src $(scripts/runtime) benchmarks/staging_throughput.py [--files 8] [--mb 16]
        [--threads 8]

Starts moto's S3 server on 127.0.0.1 (tests/objectstores.py), builds one artifact of `--files`
random files of `--mb` MB each into an s3:// store, then times:
- plain: `fs.get_file` of every file, `--threads` at a time, into a fresh folder (no checks);
- staging cold: `rlaunch.runtimes.staging.stage_inputs` into an empty node cache (reads the
  record, copies, verifies every sha256, renames into place);
- staging warm: the same call again, as a later launch would (must copy 0 bytes: it reads the
  record from the store and checks the local files against it). Files hashed within
  RACY_SECONDS of being written are trusted only after one more hash (git's "racily clean"
  rule, rlaunch.store.digests), so the first warm run hashes them once more and later ones
  check them by identity (stat) only: "warm again". A warm run that copies a byte stops the
  benchmark.

The smallest size (`--files 2 --mb 1 --threads 2`) is what the test suite runs.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import fsspec
from pydantic import TypeAdapter

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from objectstores import running  # noqa: E402
from rlaunch.builders import AnyArtifact, Log, build_artifact  # noqa: E402
from rlaunch.runtimes import staging  # noqa: E402
from rlaunch.spec.artifacts import Artifact  # noqa: E402
from rlaunch.store.digests import RACY_SECONDS  # noqa: E402
from rlaunch.store.transfer import DEFAULT_STREAMS, STREAMS_VARIABLE  # noqa: E402

ARTIFACT = TypeAdapter(Artifact)


class RandomFilesBuilder:
    """`files` files of `mb` MB of random bytes (seeded by `seed`)."""

    name = "random_files"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        config = artifact.config
        generator = random.Random(config["seed"])
        for index in range(config["files"]):
            (out_dir / f"part-{index:03d}.bin").write_bytes(
                generator.randbytes(config["mb"] * 1_000_000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--mb", type=int, default=16)
    parser.add_argument("--threads", type=int, default=DEFAULT_STREAMS)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rlaunch-staging-bench-"))
    os.environ["XDG_CACHE_HOME"] = str(work / "xdg")
    try:
        with running("s3", work / "logs") as server, server.applied():
            store = server.prefix()
            spec = ARTIFACT.validate_python({
                "type": "built", "name": "blob", "version": "2026.01.01", "kind": "model",
                "builder": "staging_throughput:RandomFilesBuilder",
                "config": {"files": args.files, "mb": args.mb, "seed": 0},
                "deps": {}, "facts": None, "rows": None,
            })
            result = build_artifact(spec, store, log=lambda message: None)
            total = result.record.total_bytes
            item = staging.StageInput("model", result.record.identity, result.fingerprint,
                                      result.uri)
            remote, root = fsspec.core.url_to_fs(result.uri)
            print(f"artifact: {args.files} files x {args.mb} MB = {total / 1e6:.0f} MB on "
                  f"{server.endpoint} (moto S3), {args.threads} threads")

            plain_dir = work / "plain"
            plain_dir.mkdir()
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.threads) as pool:
                list(pool.map(lambda e: remote.get_file(f"{root}/{e.path}",
                                                        str(plain_dir / e.path)),
                              result.record.files))
            plain = time.perf_counter() - started
            report("plain parallel copy", total, plain)

            os.environ[STREAMS_VARIABLE] = str(args.threads)
            cache = work / "node-cache"
            for label in ("staging cold", "staging warm", "staging warm again"):
                if label == "staging warm":
                    # A later launch: files hashed within RACY_SECONDS of being written are
                    # hashed again on the next read (rlaunch.store.digests); a launch comes later.
                    time.sleep(RACY_SECONDS)
                started = time.perf_counter()
                [staged] = staging.stage_inputs([item], cache, say=lambda line: None)
                report(label, staged.bytes_copied, time.perf_counter() - started)
                if label != "staging cold" and staged.bytes_copied:
                    sys.exit(f"{label} copied {staged.bytes_copied} bytes: the node cache "
                             "already held every file, so it should have copied none")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(label: str, copied: int, seconds: float) -> None:
    rate = f"{copied / 1e6 / seconds:7.1f} MB/s" if copied else "      - MB/s"
    print(f"{label:22s} {copied / 1e6:8.1f} MB copied in {seconds:6.2f} s  {rate}")


if __name__ == "__main__":
    main()
