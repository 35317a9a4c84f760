"""Staging runs in SkyRL's environment: the adapter stages the job's inputs with the
interpreter that runs SkyRL (rlaunch.executors.runtime_python), so that environment must read
the store. Here SkyRL 0.3.0's contract env (the rehearsal env, 3rdparty/skyrl-rehearsal.txt)
stages an artifact from moto's S3 server and from the GCS emulator through its own s3fs and
gcsfs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from builders.helpers import node, parse
from contract.skyrl_env import REPO_ROOT, contract_python
from objectstores import ObjectStoreServer
from rlaunch.builders import build_artifact

STAGE = """
import json, sys
from pathlib import Path
from rlaunch.runtimes.staging import StageInput, stage_inputs
item = StageInput("train_data", *sys.argv[1:4])
[staged] = stage_inputs([item], Path(sys.argv[4]), say=lambda line: None)
print(json.dumps([staged.path, staged.files_copied, sorted(sys.modules)]))
"""


def test_the_skyrl_environment_stages_from_s3_and_gcs(
    s3_server: ObjectStoreServer, gcs_server: ObjectStoreServer, tmp_path: Path
) -> None:
    python = contract_python()
    for server in (s3_server, gcs_server):
        prefix = server.prefix()
        with server.applied():
            built = build_artifact(parse(node("data", tmp_path / "calls", content="v1")),
                                   prefix, log=lambda line: None)
        cache = tmp_path / f"cache-{server.scheme}"
        done = subprocess.run(
            [python, "-c", STAGE, built.record.identity, built.fingerprint, built.uri,
             str(cache)],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, **server.env(), "PYTHONPATH": str(REPO_ROOT / "src")},
        )
        assert done.returncode == 0, done.stderr
        path, copied, modules = json.loads(done.stdout)
        assert copied == 2
        assert json.loads(Path(path, "payload.txt").read_text()) == {"content": "v1"}
        assert ("s3fs" if server.scheme == "s3" else "gcsfs") in modules
