"""`hf_snapshot`: a Hugging Face model or dataset repo, downloaded at its pinned commit.

The payload is the repo's files at that commit. A model's declared facts are checked against
its config.json. When a model's tokenizer pin is another repo or commit, the tokenizer files of
that pin go to `tokenizer/` inside the payload. A dataset's `config` (subset) does not change
the download, the whole repo at the commit; when the repo's README.md card lists its
configurations (a YAML `configs:` header), a config not among them is refused. The endpoint
and token come from `HF_ENDPOINT` and `HF_TOKEN`, read when the build runs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import yaml

from rlaunch.builders.base import AnyArtifact, BuildError, Log, expect_type
from rlaunch.builders.facts import verify_model_facts
from rlaunch.spec.artifacts import HFDataset, HFModel, identity
from rlaunch.spec.syntax import COMMIT

DEFAULT_ENDPOINT = "https://huggingface.co"
# What a tokenizer is made of, in the layouts transformers and sentencepiece use.
TOKENIZER_PATTERNS = [
    "tokenizer*",
    "vocab*",
    "merges.txt",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template*",
    "*.model",
    "*.tiktoken",
]


class HFSnapshotBuilder:
    """Downloads `repo_id` at `revision` (a 40-hex commit) with huggingface_hub."""

    name = "hf_snapshot"

    def build(self, artifact: AnyArtifact, deps: dict[str, Path], out_dir: Path, log: Log) -> None:
        expect_type(self.name, artifact, HFModel, HFDataset)
        repo_type = "dataset" if isinstance(artifact, HFDataset) else "model"
        _download(artifact, artifact.repo_id, artifact.revision, repo_type, out_dir, log)
        if isinstance(artifact, HFDataset):
            _check_dataset_config(artifact, out_dir)
        if not isinstance(artifact, HFModel):
            return
        verify_model_facts(artifact, out_dir, f"{artifact.repo_id}@{artifact.revision}")
        tokenizer_pin = (artifact.tokenizer_repo_id, artifact.tokenizer_revision)
        if tokenizer_pin != (artifact.repo_id, artifact.revision):
            target = out_dir / "tokenizer"
            _download(artifact, *tokenizer_pin, "model", target, log, TOKENIZER_PATTERNS)
            if not any(path.is_file() for path in target.rglob("*")):
                raise BuildError(
                    f"{identity(artifact)}: tokenizer repo {tokenizer_pin[0]}@{tokenizer_pin[1]} "
                    f"has no tokenizer files (looked for {', '.join(TOKENIZER_PATTERNS)})"
                )


def card_header(readme: Path) -> dict | None:
    """The YAML header of a dataset card (README.md), or None when it has none that parses.

    A card that cannot be read as such says nothing: checks that need it are skipped rather
    than failing a build on a malformed README."""
    if not readme.is_file():
        return None
    text = readme.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    header, separator, _ = text[3:].partition("\n---")
    if not separator:
        return None
    try:
        data = yaml.safe_load(header)
    except yaml.YAMLError:
        return None
    return data if isinstance(data, dict) else None


def _card_config_entries(readme: Path) -> list[dict]:
    header = card_header(readme)
    configs = header.get("configs") if header is not None else None
    if not isinstance(configs, list):
        return []
    return [entry for entry in configs if isinstance(entry, dict)]


def card_configs(readme: Path) -> list[str] | None:
    """The `config_name`s of a dataset card's YAML header `configs:`, or None if it lists none."""
    names = [
        str(entry["config_name"])
        for entry in _card_config_entries(readme)
        if entry.get("config_name") is not None
    ]
    return names or None


def card_split_patterns(readme: Path, config: str | None, split: str) -> list[str] | None:
    """The `data_files` path patterns a dataset card gives one split of one configuration
    (`configs: - config_name: main, data_files: - {split: train, path: main/train-*}`); None
    when the card does not say."""
    for entry in _card_config_entries(readme):
        if config is not None and entry.get("config_name") != config:
            continue
        files = entry.get("data_files")
        if not isinstance(files, list):
            continue
        for item in files:
            if isinstance(item, dict) and item.get("split") == split:
                paths = item.get("path")
                return [paths] if isinstance(paths, str) else [str(path) for path in paths or []]
    return None


def _check_dataset_config(artifact: HFDataset, out_dir: Path) -> None:
    if artifact.config is None:
        return
    listed = card_configs(out_dir / "README.md")
    if listed is None or artifact.config in listed:
        return
    raise BuildError(
        f"{identity(artifact)}: config {artifact.config!r} is not a configuration of "
        f"{artifact.repo_id}@{artifact.revision}; its README.md lists "
        f"{', '.join(repr(name) for name in listed)}: set `config` to one of them"
    )


def _download(
    artifact: AnyArtifact,
    repo_id: str,
    revision: str,
    repo_type: str,
    target: Path,
    log: Log,
    allow_patterns: list[str] | None = None,
) -> None:
    ident = identity(artifact)
    if not COMMIT.fullmatch(revision):
        raise BuildError(
            f"{ident}: revision {revision!r} of {repo_id} is not a 40-hex commit sha; branches "
            f"and tags move, so hf_snapshot downloads pinned commits only"
        )
    # huggingface_hub reads HF_ENDPOINT once at import; read it per build instead.
    endpoint = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    token = os.environ.get("HF_TOKEN") or None
    log(f"{ident}: downloading {repo_type} {repo_id}@{revision} from {endpoint}")
    # Lazy: huggingface_hub takes a second to import and only a download needs it.
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{repo_type} repo {repo_id} at {endpoint}"
    # The shared HF cache would be an ambient input; a throwaway one keeps the build hermetic.
    with tempfile.TemporaryDirectory(prefix="rlaunch-hf-cache-") as cache_dir:
        try:
            snapshot_download(
                repo_id,
                repo_type=repo_type,
                revision=revision,
                cache_dir=cache_dir,
                local_dir=target,
                endpoint=endpoint,
                token=token,
                allow_patterns=allow_patterns,
            )
        except RevisionNotFoundError:
            raise BuildError(
                f"{ident}: revision {revision} does not exist in {where}; pin a commit sha from "
                f"the repo's history"
            ) from None
        except GatedRepoError:
            raise BuildError(
                f"{ident}: {where} is gated; accept its terms on the Hub and set HF_TOKEN to a "
                f"token of an account that did"
            ) from None
        except RepositoryNotFoundError:
            raise BuildError(
                f"{ident}: {where} was not found, or it is private and HF_TOKEN is not set to a "
                f"token that can read it"
            ) from None
        except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as err:
            reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise BuildError(
                f"{ident}: downloading {repo_id}@{revision} from {endpoint} failed: {reason}"
            ) from None
    # snapshot_download keeps its bookkeeping in local_dir/.cache/huggingface: not payload.
    metadata = target / ".cache" / "huggingface"
    if metadata.is_dir():
        shutil.rmtree(metadata)
        if not any((target / ".cache").iterdir()):
            (target / ".cache").rmdir()
