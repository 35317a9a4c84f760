"""Store overhead at gigabytes: build and launch costs against start-up, transfers against a plain
parallel copy.

    PYTHONPATH=src $(scripts/runtime) benchmarks/store_scale.py [--gib 2] [--streams 8]
        [--skip-s3] [--skip-local] [--only NAME] [--s3-rounds N] [--repeats 5]

The smallest size (`--gib 0.002 --streams 2 --repeats 1 --only scale-shards`) is what the test
suite runs: two files of 1 MiB, each step once (scale-big runs the same steps on one file).

Two adopted artifacts of `--gib` GiB each are made in a scratch folder outside the repo (it is
deleted at the end): `scale-shards` (1 MiB files) and `scale-big` (one file). For each:

- cold build (`rlaunch build FILE`: copy into the store, hash), the first no-op build after it,
  the steady no-op build, and a `--verify` build (every file hashed), each a fresh process,
  next to `rlaunch --help` start-up;
- no-op launch: in a fresh process, what a launch does with an input that is already built
  (`materialize` in the launcher, then the runtime's own input check `verify_input`), next to
  the same process doing nothing but import the same modules.

Then against the moto S3 server of `tests/objectstores.py` (127.0.0.1): upload and download of
each artifact's files with `rlaunch.store.transfer` (what `ArtifactStore.publish` and
`ArtifactStore.local_path` run), next to a plain parallel copy of the same bytes with s3transfer's
`TransferManager` (the engine of boto3 and `aws s3 cp`; multipart uploads and ranged downloads)
with the same number of requests in flight and the same part and range sizes. rlaunch's S3
transfers run on s3transfer too (`rlaunch.store.s3_transfer`), so this measures what rlaunch adds:
its client made from the s3fs settings, one listing per folder instead of a HEAD per file on the
way down, progress by bytes.

Two things about moto decide what can be measured at 2 GiB (docs/artifacts.md):
- CompleteMultipartUpload assembles the object in the request (every part read back and joined in
  memory, then written to a temporary file): 16-58 s for 2 GiB at load 11-20 here, past
  s3fs's 15 s read timeout (botocore's is 60 s). The client then retried while the first
  completion was still running, and moto failed the retry (`seek of closed file`, then
  `NoSuchUpload`). Both clients here get a read timeout of `READ_TIMEOUT_SECONDS`.
- every GET, ranged or not, reads the whole object from its temporary file under the object's
  lock before slicing out the range, so one ranged read of a 2 GiB object costs a full 2 GiB read
  and ranged reads of one object run one at a time. A download's time is the number of ranges
  times that, whatever the client: both copies use 50 MiB ranges (41 for 2 GiB; 8 MiB ranges
  would be 256 full reads).

Targets (issue 17): a no-op build and a no-op launch within 0.2 s of start-up; transfers at
least 70% of the plain parallel copy's throughput.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import boto3
import fsspec
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from s3transfer.manager import TransferManager

from rlaunch.store import s3_transfer
from rlaunch.store.transfer import FileCopy, download, upload

REPO = Path(__file__).resolve().parents[1]
# The S3 server is the tests' (tests/objectstores.py: moto on 127.0.0.1, its own process group).
sys.path.insert(0, str(REPO / "tests"))
from objectstores import running  # noqa: E402

MIB = 1 << 20
REPEATS = 5  # timings of a no-op build or launch, of which the median is printed
READ_TIMEOUT_SECONDS = 900  # moto's CompleteMultipartUpload of 2 GiB, at load (see above)
UPLOAD_PART_BYTES = s3_transfer.PART_BYTES  # rlaunch's S3 upload parts (s3transfer's default)
DOWNLOAD_RANGE_BYTES = s3_transfer.RANGE_BYTES  # rlaunch's S3 ranged reads (s3fs's block size)
NEEDED_FREE_FACTOR = 5  # sources, store copies, the S3 server's copies, downloads, slack

# What a launch does with an input that is already built, in a fresh process: the launcher's
# `materialize` (reuse after checking the files), then the runtime's own input check. It prints
# the seconds those two steps took, after the imports.
_LAUNCH_PROGRAM = """
import json
import sys
import time
from pathlib import Path
from rlaunch.builders import materialize_artifacts
from rlaunch.builders.commands import load_artifact
from rlaunch.runtimes.smoke.config import InputRef
from rlaunch.runtimes.smoke.inputs import verify_input
started = time.perf_counter()
if sys.argv[1] == "launch":
    artifact = load_artifact(sys.argv[2])
    paths = materialize_artifacts({"model": artifact}, sys.argv[3], log=lambda line: None)
    data = json.loads(Path(paths["model"], "_record.json").read_text())
    verify_input(InputRef("model", data["identity"], data["fingerprint"], paths["model"],
                          data["type"]))
print(time.perf_counter() - started)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _wall(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, check=True, capture_output=True, env=_env(), text=True)
    return time.perf_counter() - started, done.stdout


def _paired(baseline: list[str], measured: list[str],
            repeats: int) -> tuple[float, float, float]:
    """Medians of `baseline`, `measured` and their difference over `repeats` pairs, run
    alternately (the machine is shared: pairs see the same load)."""
    pairs = [(_wall(baseline)[0], _wall(measured)[0]) for _ in range(repeats)]
    return (statistics.median(a for a, _ in pairs), statistics.median(b for _, b in pairs),
            statistics.median(b - a for a, b in pairs))


def _rlaunch(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlaunch", *args]


def make_shards(root: Path, gib: float) -> str:
    """`gib` GiB of 1 MiB random files in 16 folders; returns the manifest sha256."""
    lines = []
    count = int(gib * 1024)
    for index in range(count):
        relative = f"shard-{index % 16:02d}/part-{index:05d}.bin"
        data = os.urandom(MIB)
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        lines.append((relative.encode(), f"{hashlib.sha256(data).hexdigest()}  {relative}\n"))
    manifest = "".join(line for _, line in sorted(lines))
    return hashlib.sha256(manifest.encode()).hexdigest()


def make_big(path: Path, gib: float) -> str:
    """One file of `gib` GiB; returns its sha256."""
    digest = hashlib.sha256()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        for _ in range(int(gib * 1024)):
            block = os.urandom(MIB)
            digest.update(block)
            handle.write(block)
    return digest.hexdigest()


def artifact_file(folder: Path, name: str, uri: Path, sha256: str) -> Path:
    spec = {"type": "adopted", "name": name, "version": "2026.01.01", "kind": "dataset",
            "uri": str(uri), "sha256": sha256, "facts": None, "rows": None}
    path = folder / f"{name}.json"
    path.write_text(json.dumps(spec))
    return path


def local_overheads(scratch: Path, artifacts: dict[str, Path], repeats: int) -> None:
    store = str(scratch / "store")
    help_command = _rlaunch("--help")
    idle = [sys.executable, "-c", _LAUNCH_PROGRAM, "idle"]
    print(f"times are medians of {repeats}; a no-op is timed alternately with its start-up "
          f"baseline, and '+' is the median of the pairs' differences")
    for name, spec in artifacts.items():
        build = _rlaunch("build", str(spec), "--store", store)
        cold = _wall(build)[0]
        first = _wall(build)[0]
        time.sleep(2.5)  # past the digest cache's racy window: what the next launch sees
        second = _wall(build)[0]
        help_seconds, steady, extra = _paired(help_command, build, repeats)
        verify = _wall([*build, "--verify"])[0]
        launch = [sys.executable, "-c", _LAUNCH_PROGRAM, "launch", str(spec), store]
        idle_seconds, launch_seconds, launch_extra = _paired(idle, launch, repeats)
        inside = statistics.median(float(_wall(launch)[1]) for _ in range(repeats))
        print(f"{name}:")
        print(f"  cold build (copy, hash, publish)   {cold:8.3f}s")
        print(f"  first no-op build right after      {first:8.3f}s  (re-hashes files hashed "
              f"within 2 s of being written)")
        print(f"  next no-op build                   {second:8.3f}s")
        print(f"  no-op build                        {steady:8.3f}s  vs rlaunch --help "
              f"{help_seconds:.3f}s: +{extra:.3f}s (target <= 0.2s)")
        print(f"  --verify build (every file read)   {verify:8.3f}s")
        print("  no-op launch (materialize + the runtime's input check)")
        print(f"    in a fresh process               {launch_seconds:8.3f}s  vs the same "
              f"process idle {idle_seconds:.3f}s: +{launch_extra:.3f}s (target <= 0.2s)")
        print(f"    the two steps alone, in-process  {inside:8.3f}s")


def _copies(source_root: Path, target_root: str | Path) -> list[FileCopy]:
    copies = []
    for path in sorted(p for p in source_root.rglob("*") if p.is_file()):
        relative = path.relative_to(source_root).as_posix()
        copies.append(FileCopy(str(path), f"{target_root}/{relative}", path.stat().st_size))
    return copies


def _flipped(copies: list[FileCopy], target_root: Path, store_root: str) -> list[FileCopy]:
    """The same objects back into local files under `target_root`."""
    return [
        FileCopy(item.target, str(target_root / item.target[len(store_root) + 1:]), item.size)
        for item in copies
    ]


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds / 1e6:7.1f} MB/s"


def s3_transfers(scratch: Path, sources: dict[str, Path], streams: int, rounds: int) -> None:
    """Upload and download each source folder with rlaunch's transfers and with s3transfer."""
    with running("s3", scratch / "s3-logs") as server, server.applied():
        timeouts = {"read_timeout": READ_TIMEOUT_SECONDS}
        fs = fsspec.get_filesystem_class("s3")(skip_instance_cache=True,
                                               **server.storage_options(),
                                               config_kwargs=timeouts)
        bucket = server.bucket("store-scale")
        client = boto3.client("s3", endpoint_url=server.endpoint, config=Config(**timeouts))
        configs = (
            TransferConfig(max_concurrency=streams, multipart_threshold=UPLOAD_PART_BYTES,
                           multipart_chunksize=UPLOAD_PART_BYTES),
            TransferConfig(max_concurrency=streams, multipart_threshold=DOWNLOAD_RANGE_BYTES,
                           multipart_chunksize=DOWNLOAD_RANGE_BYTES),
        )
        print(f"S3: moto server at {server.endpoint}; at most {streams} requests in flight "
              f"each; {UPLOAD_PART_BYTES // MIB} MiB parts up, {DOWNLOAD_RANGE_BYTES // MIB} MiB "
              f"ranges down; read timeout {READ_TIMEOUT_SECONDS} s", flush=True)
        for name, source in sources.items():
            try:
                for round_ in range(rounds):
                    _compare(fs, client, configs, bucket, scratch, name, source, streams,
                             plain_first=round_ % 2 == 1)
            except Exception as err:  # a server failure ends this artifact, not the benchmark
                print(f"{name}: failed: {type(err).__name__}: {err}")
        kept = Path(tempfile.gettempdir()) / f"store-scale-{server.log.name}"
        shutil.copy(server.log, kept)
        print(f"server log (one line per request, with its time): {kept}")


def _ours(fs: Any, scratch: Path, bucket: str, name: str, source: Path,
          streams: int) -> tuple[float, float]:
    """Seconds to upload `source` with rlaunch's transfers, then to download it back."""
    root = f"{bucket}/rlaunch/{name}"
    up = _copies(source, root)
    started = time.perf_counter()
    upload(fs, up, what=f"uploading {name}", streams=streams)
    seconds_up = time.perf_counter() - started
    down = _flipped(up, scratch / "down-rlaunch" / name, root)
    started = time.perf_counter()
    download(fs, down, what=f"downloading {name}", streams=streams)
    seconds_down = time.perf_counter() - started
    fs.rm(root, recursive=True)
    shutil.rmtree(scratch / "down-rlaunch" / name)
    return seconds_up, seconds_down


def _plain(fs: Any, client: Any, configs: tuple[TransferConfig, TransferConfig], scratch: Path,
           bucket: str, name: str, source: Path) -> tuple[float, float]:
    """The same with s3transfer's TransferManager alone."""
    root = f"{bucket}/plain/{name}"
    up = _copies(source, root)
    started = time.perf_counter()
    with TransferManager(client, configs[0]) as manager:
        futures = [manager.upload(item.source, bucket, item.target[len(bucket) + 1:])
                   for item in up]
        for future in futures:
            future.result()
    seconds_up = time.perf_counter() - started
    down = _flipped(up, scratch / "down-plain" / name, root)
    for item in down:
        Path(item.target).parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with TransferManager(client, configs[1]) as manager:
        futures = [manager.download(bucket, item.source[len(bucket) + 1:], item.target)
                   for item in down]
        for future in futures:
            future.result()
    seconds_down = time.perf_counter() - started
    fs.rm(root, recursive=True)
    shutil.rmtree(scratch / "down-plain" / name)
    return seconds_up, seconds_down


def _compare(fs: Any, client: Any, configs: tuple[TransferConfig, TransferConfig], bucket: str,
             scratch: Path, name: str, source: Path, streams: int, plain_first: bool) -> None:
    """Upload then download `source` with rlaunch's transfers and with s3transfer (in the
    order `plain_first` says); print both rates and their ratio."""
    total = sum(item.size for item in _copies(source, "x"))
    count = len(_copies(source, "x"))
    if plain_first:
        base_up, base_down = _plain(fs, client, configs, scratch, bucket, name, source)
        ours_up, ours_down = _ours(fs, scratch, bucket, name, source, streams)
    else:
        ours_up, ours_down = _ours(fs, scratch, bucket, name, source, streams)
        base_up, base_down = _plain(fs, client, configs, scratch, bucket, name, source)
    order = "s3transfer first" if plain_first else "rlaunch first"
    print(f"{name} ({count} file(s), {total / 1e9:.2f} GB; {order}):")
    print(f"  upload    rlaunch {ours_up:7.2f}s {_rate(total, ours_up)}   s3transfer "
          f"{base_up:7.2f}s {_rate(total, base_up)}   ratio {base_up / ours_up:5.0%} "
          f"(target >= 70%)")
    print(f"  download  rlaunch {ours_down:7.2f}s {_rate(total, ours_down)}   "
          f"s3transfer {base_down:7.2f}s {_rate(total, base_down)}   ratio "
          f"{base_down / ours_down:5.0%} (target >= 70%)")
    print(f"  load average after: {_load()}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=2.0, help="GiB per artifact (default 2)")
    parser.add_argument("--streams", type=int, default=8, help="concurrent transfers (8)")
    parser.add_argument("--skip-s3", action="store_true", help="local overheads only")
    parser.add_argument("--s3-rounds", type=int, default=1,
                        help="S3 comparisons per artifact, alternating which copy goes first")
    parser.add_argument("--skip-local", action="store_true", help="S3 transfers only")
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help=f"timings of each no-op, the median printed ({REPEATS})")
    parser.add_argument("--only", choices=["scale-shards", "scale-big"],
                        help="one of the two artifacts")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="rlaunch-store-scale-"))
    needed = NEEDED_FREE_FACTOR * 2 * args.gib * (1 << 30)
    free = shutil.disk_usage(scratch).free
    if free < needed:
        shutil.rmtree(scratch)
        raise SystemExit(f"store_scale: {scratch.parent} has {free / 1e9:.1f} GB free, the "
                         f"benchmark needs {needed / 1e9:.1f} GB; pass a smaller --gib")
    os.environ["XDG_CACHE_HOME"] = str(scratch / "xdg")  # digest cache and node cache
    os.environ["RLAUNCH_TRANSFER_STREAMS"] = str(args.streams)
    try:
        started = time.perf_counter()
        artifacts, sources = {}, {}
        if args.only in (None, "scale-shards"):
            sha = make_shards(scratch / "source" / "shards", args.gib)
            sources["scale-shards"] = scratch / "source" / "shards"
            artifacts["scale-shards"] = artifact_file(scratch, "scale-shards",
                                                      sources["scale-shards"], sha)
        if args.only in (None, "scale-big"):
            sha = make_big(scratch / "source" / "big" / "model.bin", args.gib)
            sources["scale-big"] = scratch / "source" / "big"
            artifacts["scale-big"] = artifact_file(scratch, "scale-big",
                                                   sources["scale-big"] / "model.bin", sha)
        print(f"made {len(sources)} x {args.gib:g} GiB in {scratch} in "
              f"{time.perf_counter() - started:.1f}s; load average {_load()}", flush=True)
        if not args.skip_local:
            local_overheads(scratch, artifacts, args.repeats)
        if not args.skip_s3:
            s3_transfers(scratch, sources, args.streams, args.s3_rounds)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
