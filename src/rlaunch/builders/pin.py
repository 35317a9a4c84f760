"""`rlaunch pin`: resolve a Hugging Face model revision to its commit and read its facts there.

The revision (a branch, a tag or a commit) is resolved with huggingface_hub's `model_info` to
the 40-hex commit it points at now; config.json is read at that commit, and the parameter count
from the safetensors headers (huggingface_hub's `get_safetensors_metadata`: the single file or
every shard of the index). The result is an `hf_model` target, printed or written into a BUILD
file in place of the target of the same name (or repo).
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rlaunch.builders.facts import DTYPES, config_facts
from rlaunch.builders.hf_snapshot import DEFAULT_ENDPOINT

# The facts in the order an hf_model states them (the schema's order).
FACT_ORDER = (
    "num_attention_heads", "num_key_value_heads", "max_position_embeddings", "num_experts",
    "num_hidden_layers", "hidden_size", "intermediate_size", "vocab_size", "head_dim",
    "torch_dtype", "num_parameters",
)
_NULLABLE = ("num_experts", "head_dim")


class PinError(Exception):
    """A revision that cannot be resolved, or a model whose facts cannot all be read."""


@dataclass(frozen=True)
class Pin:
    repo_id: str
    requested: str
    commit: str
    facts: dict[str, Any]
    endpoint: str


def facts_of(config: dict[str, Any], num_parameters: int, where: str) -> dict[str, Any]:
    """The hf_model facts of a config.json and parameter count; PinError naming each fact the
    config does not give."""
    found = config_facts(config)
    found["num_parameters"] = num_parameters
    missing = [key for key in FACT_ORDER if found.get(key) is None and key not in _NULLABLE]
    if missing:
        raise PinError(f"config.json of {where} has no {', '.join(missing)}: an hf_model needs "
                       f"them as facts (multimodal configs are read from text_config)")
    if found["torch_dtype"] not in DTYPES:
        raise PinError(f"config.json of {where} has torch_dtype {found['torch_dtype']!r}; "
                       f"facts take one of {', '.join(DTYPES)}")
    return {key: found[key] for key in FACT_ORDER}


def resolve(repo_id: str, revision: str, endpoint: str | None = None,
            token: str | None = None) -> Pin:
    """Resolve `revision` of model repo `repo_id` to its commit and read the facts there."""
    endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    token = token or os.environ.get("HF_TOKEN") or None
    # lazy: huggingface_hub takes a second to import and only `pin` needs it here.
    from huggingface_hub import HfApi, hf_hub_download
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        NotASafetensorsRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
        SafetensorsParsingError,
    )

    api = HfApi(endpoint=endpoint, token=token)
    where = f"model repo {repo_id} at {endpoint}"
    try:
        commit = api.model_info(repo_id, revision=revision).sha
        if not commit:
            raise PinError(f"{where} did not say which commit {revision!r} is")
        config_file = hf_hub_download(repo_id, "config.json", revision=commit,
                                      endpoint=endpoint, token=token)
        config = json.loads(Path(config_file).read_text(encoding="utf-8"))
        metadata = api.get_safetensors_metadata(repo_id, revision=commit)
    except RevisionNotFoundError:
        raise PinError(f"revision {revision!r} does not exist in {where}") from None
    except GatedRepoError:
        raise PinError(f"{where} is gated; accept its terms on the Hub and set HF_TOKEN to a "
                       f"token of an account that did") from None
    except RepositoryNotFoundError:
        raise PinError(f"{where} was not found, or it is private and HF_TOKEN is not set to a "
                       f"token that can read it") from None
    except NotASafetensorsRepoError:
        raise PinError(f"{where} has no model.safetensors or model.safetensors.index.json at "
                       f"{revision}, so its parameters cannot be counted") from None
    except SafetensorsParsingError as err:
        raise PinError(f"a safetensors header of {where} cannot be read: {err}") from None
    except (HfHubHTTPError, OSError, ValueError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise PinError(f"reading {repo_id}@{revision} from {endpoint} failed: {reason}") from None
    if not isinstance(config, dict):
        raise PinError(f"config.json of {repo_id}@{commit} is not a JSON object")
    parameters = sum(metadata.parameter_count.values())
    return Pin(repo_id, revision, commit, facts_of(config, parameters, f"{repo_id}@{commit}"),
               endpoint)


def _literal(value: Any) -> str:
    return "None" if value is None else json.dumps(value)


def hf_model_text(pin: Pin, name: str | None, version: str) -> str:
    """The hf_model target of a pin, as a BUILD file states it."""
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    facts = [f"{key}={_literal(pin.facts[key])}" for key in FACT_ORDER]
    fact_lines, line = [], ""
    for item in facts:
        if line and len(line) + len(item) + 2 > 84:
            fact_lines.append(line + ",")
            line = item
        else:
            line = f"{line}, {item}" if line else item
    fact_lines.append(line)
    indent = "\n" + " " * 15
    lines = ["hf_model("]
    if name:
        lines.append(f"    name={json.dumps(name)},")
    lines += [
        f"    repo_id={json.dumps(pin.repo_id)},",
        f"    # `rlaunch pin` resolved {pin.requested!r} at {pin.endpoint} on {when}; facts from",
        "    # config.json and the safetensors headers at this commit.",
        f"    revision={json.dumps(pin.commit)},",
        f"    facts=dict({indent.join(fact_lines)}),",
        f"    version={json.dumps(version)},",
        ")",
    ]
    return "\n".join(lines) + "\n"


def _keyword(call: ast.Call, key: str) -> Any:
    for keyword in call.keywords:
        if keyword.arg == key and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return None


def write_into(build_file: Path, text: str, repo_id: str, name: str | None) -> str:
    """Put the target `text` into `build_file`: in place of the hf_model named `name` (or, with
    no name, of the one pinning `repo_id`), else at its end. Returns `replaced` or `added`."""
    source = build_file.read_text(encoding="utf-8") if build_file.exists() else ""
    try:
        tree = ast.parse(source, filename=str(build_file))
    except SyntaxError as err:
        raise PinError(f"{build_file} is not valid BUILD syntax (line {err.lineno}): "
                       f"{err.msg}") from None
    matches = []
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                and call.func.id == "hf_model"):
            continue
        same = (_keyword(call, "name") == name) if name else (
            _keyword(call, "repo_id") == repo_id and _keyword(call, "name") is None)
        if same:
            matches.append(node)
    if len(matches) > 1:
        raise PinError(f"{build_file} has {len(matches)} hf_model targets that match; name the "
                       f"one to replace with --name")
    lines = source.splitlines(keepends=True)
    if matches:
        node = matches[0]
        start, end = node.lineno - 1, node.end_lineno or node.lineno
        build_file.write_text("".join(lines[:start]) + text + "".join(lines[end:]),
                              encoding="utf-8")
        return "replaced"
    separator = "" if not source else ("\n" if source.endswith("\n") else "\n\n")
    build_file.parent.mkdir(parents=True, exist_ok=True)
    build_file.write_text(source + separator + text, encoding="utf-8")
    return "added"
