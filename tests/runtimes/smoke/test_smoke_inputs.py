"""The runtime verifies every input against its build record, refuses to run a calendar
version that already finished, and refuses to resume checkpoints trained from another export
of an upstream run (rlaunch/runtimes/smoke/inputs.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from rlaunch.render import LaunchDocument
from rlaunch.runtimes.smoke import checkpoint as ckpt
from rlaunch.runtimes.smoke.config import SmokeConfigError, load_config
from rlaunch.runtimes.smoke.inputs import (
    export_contents,
    refuse_finished_calendar,
    resume_source,
    verify_inputs,
)
from rlaunch.spec import fingerprint_of
from rlaunch.store import RECORD_FILE

from .demo import write_records
from .smoke_helpers import write_launch


@pytest.fixture()
def launched(tiny_model_dir: Path, tmp_path: Path) -> tuple[dict, object]:
    """(launch document, its SmokeConfig) with every input built and recorded."""
    path, document = write_launch(tmp_path, tiny_model_dir)
    return document, load_config(LaunchDocument.parse(document, str(path)))


def _refused(config) -> str:
    with pytest.raises(SmokeConfigError) as raised:
        verify_inputs(config)
    return str(raised.value)


def test_inputs_built_with_their_records_pass(launched) -> None:
    document, config = launched
    verify_inputs(config)
    assert [ref.slot for ref in config.inputs] == ["model", "tokenizer", "train_data",
                                                   "eval_data"]
    record = json.loads((Path(document["inputs"]["model"]["uri"]) / RECORD_FILE).read_text())
    assert record["identity"] == "countdown-smoke-sft@dev"
    assert record["fingerprint"] == document["inputs"]["model"]["fingerprint"]
    assert record["provenance"]["builder_class"] == "smoke.demo:build_inputs"
    assert {entry["path"] for entry in record["files"]} == {
        "config.json", "model.safetensors", "tokenizer.json"}


def test_an_input_without_a_record_is_not_built(launched) -> None:
    document, config = launched
    data = Path(document["inputs"]["train_data"]["uri"])
    (data / RECORD_FILE).unlink()
    assert _refused(config) == (
        f"inputs.train_data: countdown-smoke-data@dev is not built: {data} has files but no "
        f"build record ({RECORD_FILE} is written last by a finished build); materialize the "
        "run's inputs first: `rlaunch launch` and `./pants run` do it before they submit, "
        "`rlaunch build FILE` builds one"
    )


def test_a_missing_input_folder_is_named(launched) -> None:
    import shutil

    document, config = launched
    model = Path(document["inputs"]["model"]["uri"])
    shutil.rmtree(model)
    assert _refused(config).startswith(
        f"inputs.model: countdown-smoke-sft@dev is not built: {model} does not exist ("
    )


def test_a_record_of_other_content_is_refused_with_both_fingerprints(launched) -> None:
    document, config = launched
    entry = document["inputs"]["tokenizer"]
    path = Path(entry["uri"]) / RECORD_FILE
    record = json.loads(path.read_text())
    record["fingerprint"] = "sha256:" + "e" * 64
    path.write_text(json.dumps(record))
    assert _refused(config) == (
        f"inputs.tokenizer: {path} was edited by hand or damaged: it records "
        f"countdown-smoke-tokenizer@dev with fingerprint sha256:{'e' * 64}, but its own config "
        f"and deps give {fingerprint_of(record['config'])}; restore it, or "
        "delete the artifact's folder and build it again"
    )
    # (The demo's record has no builder in its config: fingerprinted as a hub artifact is.)
    # A record that its own content does give: another build of the identity.
    record["config"] = {"builder": "other", "config": {}}
    other = record["fingerprint"] = fingerprint_of({**record["config"], "deps": {}})
    path.write_text(json.dumps(record))
    assert _refused(config) == (
        f"inputs.tokenizer: {entry['uri']} holds countdown-smoke-tokenizer@dev with fingerprint "
        f"{other}, but the launch YAML names countdown-smoke-tokenizer@dev with "
        f"fingerprint {entry['fingerprint']}; the store changed since the YAML was rendered: "
        "launch again (a dev input is rebuilt), or bump the input's version if its content "
        "changed"
    )


def test_a_payload_changed_after_its_build_names_the_file(launched) -> None:
    document, config = launched
    model = Path(document["inputs"]["model"]["uri"])
    (model / "config.json").write_text("{}")
    message = _refused(config)
    assert message.startswith(f"inputs.model: countdown-smoke-sft@dev at {model} does not "
                              "match its record (config.json: 2 bytes, the record says ")
    assert message.endswith("rebuild it with `./pants run <its built_artifact target> -- --force` "
        "(or `rlaunch build FILE --force`)")


def test_records_are_rewritten_to_the_files_as_they_are(launched) -> None:
    document, config = launched
    data = Path(document["inputs"]["eval_data"]["uri"])
    (data / "eval.parquet").write_text("")
    write_records(document)
    verify_inputs(config)


def test_a_skyrl_export_below_the_record_is_refused(launched) -> None:
    """A run export recorded with its model in `global_step_N/policy` (SkyRL's layout): the
    smoke runtime reads an input at its root, so it says where the model is and what reads it."""
    document, config = launched
    model = Path(document["inputs"]["model"]["uri"])
    record = json.loads((model / RECORD_FILE).read_text())
    (model / RECORD_FILE).write_text(json.dumps(dict(record,
                                                     payload_folder="global_step_8/policy")))
    assert _refused(config) == (
        f"inputs.model: countdown-smoke-sft@dev is a run's export whose model is in "
        f"{model}/global_step_8/policy (SkyRL's layout, global_step_8/policy), not at {model}, "
        "where the smoke runtime reads its inputs: a smoke stage reads the export of a smoke "
        "run; run this stage on the skyrl runtime, which stages that folder"
    )


def _with_manifest(tiny_model_dir: Path, tmp_path: Path, version: str):
    path, document = write_launch(tmp_path, tiny_model_dir, version=version)
    manifest = Path(document["artifacts"]["terminal_manifest"])
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({"final_step": 8, "attempt_id": "a-1",
                                    "weights_sha256": "sha256:abc"}))
    return load_config(LaunchDocument.parse(document, str(path))), manifest


def test_a_finished_calendar_version_is_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    config, manifest = _with_manifest(tiny_model_dir, tmp_path, "2026.11.29")
    with pytest.raises(SmokeConfigError) as raised:
        refuse_finished_calendar(config)
    assert str(raised.value) == (
        f"countdown-smoke@2026.11.29 already finished: its terminal manifest {manifest} is "
        "written (final step 8, attempt a-1, weights sha256:abc); a calendar version runs "
        "once. To train again, bump run.version (e.g. 2026.11.29.1) or use a dev version"
    )
    manifest.unlink()
    refuse_finished_calendar(config)  # not finished: it may run (or resume)


def test_a_finished_dev_version_may_run_again(tiny_model_dir: Path, tmp_path: Path) -> None:
    config, _ = _with_manifest(tiny_model_dir, tmp_path, "dev")
    refuse_finished_calendar(config)


def test_a_dataset_input_named_by_its_config_gets_a_record(tmp_path: Path) -> None:
    # An hf_dataset's `source.config` is its subset's name, not a builder's config dict.
    root = tmp_path / "gsm8k-train" / "2026.11.01"
    root.mkdir(parents=True)
    (root / "train.jsonl").write_text("{}\n")
    document = {"inputs": {"train_data": {
        "identity": "gsm8k-train@2026.11.01", "kind": "dataset", "type": "hf_dataset",
        "fingerprint": "sha256:" + "b" * 64, "uri": str(root),
        "source": {"repo_id": "openai/gsm8k", "revision": "e" * 40, "config": "main"},
    }}}
    write_records(document)
    record = json.loads((root / RECORD_FILE).read_text())
    assert (record["identity"], record["type"], record["config"]) == (
        "gsm8k-train@2026.11.01", "hf_dataset", {})
    assert record["provenance"]["builder"] == "demo"


def _content(model: Path) -> str:
    """The export's content as `sha256sum` would give it: the digest of its manifest lines."""
    files = json.loads((model / RECORD_FILE).read_text())["files"]
    lines = "".join(f"{entry['sha256']}  {entry['path']}\n" for entry in files)
    return "sha256:" + hashlib.sha256(lines.encode()).hexdigest()


def test_checkpoints_trained_from_another_export_of_the_upstream_run_are_not_resumed(
    tiny_model_dir: Path, tmp_path: Path
) -> None:
    path, document = write_launch(tmp_path, tiny_model_dir)
    # The model is another run's export, as a pipeline stage reads it.
    document["inputs"]["model"]["type"] = "run_export"
    write_records(document)
    config = load_config(LaunchDocument.parse(document, str(path)))
    model = Path(document["inputs"]["model"]["uri"])
    trained_from = _content(model)
    assert export_contents(config) == {
        "model": {"identity": "countdown-smoke-sft@dev", "content": trained_from}}
    root = config.checkpoint_root
    root.mkdir(parents=True)
    ckpt.record_runtime(root, runtime_fingerprint=config.runtime_fingerprint,
                        run_fingerprint=config.fingerprint, run_id=config.run_id,
                        exports=export_contents(config))
    staging = ckpt.staging_dir(root, 2)
    ckpt.commit(root, 2, staging, {"global_step": 2}, keep=-1)
    assert resume_source(config) == root / "global_step_2"

    # The upstream relaunched, and exported the same bytes (recorded again): still resumed.
    write_records(document)
    assert resume_source(config) == root / "global_step_2"

    # It exported other weights: refused, naming the input, both contents and the fix.
    (model / "model.safetensors").write_bytes(b"other weights")
    write_records(document)
    with pytest.raises(ckpt.CheckpointError) as caught:
        resume_source(config)
    assert str(caught.value) == (
        f"checkpoint root {root} holds checkpoints trained from the export of "
        f"countdown-smoke-sft@dev with content {trained_from} (inputs.model) (see "
        f"{root / 'runtime.json'}), this run reads that export with content {_content(model)}: "
        "the upstream run was launched again since and exported other weights; resuming would "
        "go on training from the previous ones. Set resume.mode none to start over from the "
        "new export, or launch this run under a new version"
    )
    assert resume_source(dataclasses.replace(config, resume_mode="none")) is None
