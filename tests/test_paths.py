"""rlaunch.paths.resolve_store_prefix: the one store-prefix precedence of every command."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlaunch.paths import STORE_ENV, resolve_store_prefix


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(STORE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_option_wins_then_the_spec_then_the_environment_then_the_cache(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert resolve_store_prefix() == str(cache / "cache" / "rlaunch" / "store")
    monkeypatch.setenv(STORE_ENV, "gs://env/store")
    assert resolve_store_prefix() == "gs://env/store"
    assert resolve_store_prefix(None, "s3://spec/store") == "s3://spec/store"
    assert resolve_store_prefix("/opt/option", "s3://spec/store") == "/opt/option"


def test_a_local_prefix_is_made_absolute_and_a_url_kept(cache: Path) -> None:
    assert resolve_store_prefix("store/") == str(cache / "store")
    assert resolve_store_prefix(None, "rel") == str(cache / "rel")
    assert resolve_store_prefix("~/s") == str(Path.home() / "s")
    assert resolve_store_prefix("file:///x/y") == "file:///x/y"
