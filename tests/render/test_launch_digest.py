"""Issue 13 item 1: the job runs exactly the launch YAML that was preflighted and recorded."""

from __future__ import annotations

import hashlib

import pytest

from rlaunch.paths import LAUNCH_DIGEST_ENV
from rlaunch.render import render_launch
from rlaunch.render.launchdoc import LaunchError
from rlaunch.render.output import load_launch
from rlaunch.spec import parse_spec
from tests.runtimes.smoke.demo import smoke_spec


def written(tmp_path, **overrides) -> tuple[str, str]:
    text = render_launch(parse_spec(smoke_spec(**overrides)), store_prefix=str(tmp_path),
                         launcher_commit=None)
    return text, "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_a_job_reads_the_yaml_whose_digest_was_recorded(tmp_path, monkeypatch):
    text, digest = written(tmp_path)
    path = tmp_path / "launch.yaml"
    path.write_text(text)
    monkeypatch.setenv(LAUNCH_DIGEST_ENV, digest)
    assert load_launch(path).run.id


def test_a_job_refuses_a_yaml_overwritten_after_the_launch_checked_it(tmp_path, monkeypatch):
    text_a, digest_a = written(tmp_path)
    text_b, digest_b = written(tmp_path, seed=8)  # `rlaunch render B.json -o <same path>`
    path = tmp_path / "launch.yaml"
    path.write_text(text_b)
    monkeypatch.setenv(LAUNCH_DIGEST_ENV, digest_a)
    with pytest.raises(LaunchError) as caught:
        load_launch(path)
    assert str(caught.value) == (
        f"{path}: its digest is {digest_b}, but this attempt was preflighted and recorded with "
        f"{digest_a} ({LAUNCH_DIGEST_ENV}): the file changed after the launch checked it, so "
        f"the job refuses to run it. Launch again."
    )
