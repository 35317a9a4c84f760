"""A local Hugging Face Hub for tests: the real huggingface_hub client talks HTTP to 127.0.0.1.

The server answers what snapshot_download (huggingface_hub 2.4) asks for a pinned commit: the
tree listing `/api/{models|datasets}/{repo}/tree/{rev}?recursive=True`, then per file a HEAD and
a GET of `/{[datasets/]repo}/resolve/{rev}/{path}` with X-Repo-Commit, ETag and Content-Length
(a `Range: bytes=a-b` GET gets those bytes, as get_safetensors_metadata reads headers); and
what `model_info` asks to resolve a revision: `/api/models/{repo}/revision/{rev}` -> its `sha`.
Repos are `{("models" | "datasets", "org/name", commit): {path: bytes}}`; refs (branches, tags)
`{("models" | "datasets", "org/name", ref): commit}`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import unquote, urlsplit

Repos = dict[tuple[str, str, str], dict[str, bytes]]
Refs = dict[tuple[str, str, str], str]


class HubHandler(BaseHTTPRequestHandler):
    repos: ClassVar[Repos] = {}
    refs: ClassVar[Refs] = {}
    requests_seen: ClassVar[list[tuple[str, str, str | None]]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, *, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        self.requests_seen.append((self.command, path, self.headers.get("authorization")))
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 6 and parts[4] == "tree":
            self._tree(parts[1], f"{parts[2]}/{parts[3]}", parts[5], body)
            return
        if parts[0] == "api" and len(parts) == 6 and parts[4] == "revision":
            self._revision(parts[1], f"{parts[2]}/{parts[3]}", parts[5], body)
            return
        kind = "models"
        if parts[0] == "datasets":
            kind, parts = "datasets", parts[1:]
        if len(parts) >= 5 and parts[2] == "resolve":
            self._file(kind, f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:]), body)
            return
        self._error(404, "RepoNotFound", "not a route of this hub", body)

    def _commit(self, kind: str, repo: str, revision: str) -> str:
        return self.refs.get((kind, repo, revision), revision)

    def _revision(self, kind: str, repo: str, revision: str, body: bool) -> None:
        commit = self._commit(kind, repo, revision)
        files = self.repos.get((kind, repo, commit))
        if files is None:
            known = any(key[:2] == (kind, repo) for key in self.repos)
            code = "RevisionNotFound" if known else "RepoNotFound"
            self._error(404, code, f"Invalid rev id: {revision}", body)
            return
        info = {"id": repo, "sha": commit,
                "siblings": [{"rfilename": name} for name in sorted(files)]}
        self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, body)

    def _tree(self, kind: str, repo: str, revision: str, body: bool) -> None:
        files = self.repos.get((kind, repo, self._commit(kind, repo, revision)))
        if files is None:
            known = any(key[:2] == (kind, repo) for key in self.repos)
            code = "RevisionNotFound" if known else "RepoNotFound"
            self._error(404, code, f"Invalid rev id: {revision}", body)
            return
        listing = []
        folders = sorted({name.rsplit("/", 1)[0] for name in files if "/" in name})
        for folder in folders:
            listing.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": folder})
        for name, content in sorted(files.items()):
            listing.append({"type": "file", "oid": hashlib.sha1(content).hexdigest(),
                            "size": len(content), "path": name})
        self._send(200, json.dumps(listing).encode(), {"Content-Type": "application/json"}, body)

    def _file(self, kind: str, repo: str, revision: str, name: str, body: bool) -> None:
        commit = self._commit(kind, repo, revision)
        content = self.repos.get((kind, repo, commit), {}).get(name)
        if content is None:
            self._error(404, "EntryNotFound", f"{name} not found", body)
            return
        headers = {"X-Repo-Commit": commit,
                   "ETag": f'"{hashlib.sha1(content).hexdigest()}"',
                   "Content-Type": "application/octet-stream"}
        wanted = self.headers.get("range", "")
        if wanted.startswith("bytes="):
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            end = min(int(last), len(content) - 1) if last else len(content) - 1
            headers["Content-Range"] = f"bytes {first}-{end}/{len(content)}"
            self._send(206, content[int(first):end + 1], headers, body)
            return
        self._send(200, content, headers, body)

    def _error(self, status: int, code: str, message: str, body: bool) -> None:
        payload = json.dumps({"error": message}).encode()
        self._send(status, payload, {"X-Error-Code": code, "X-Error-Message": message,
                                     "Content-Type": "application/json"}, body)

    def _send(self, status: int, payload: bytes, headers: dict[str, str], body: bool) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)


@contextmanager
def serve_hub(
    repos: Repos, refs: Refs | None = None
) -> Iterator[tuple[str, list[tuple[str, str, str | None]]]]:
    """A Hub serving `repos` (and the branches or tags `refs`) on 127.0.0.1: its URL and the
    requests it saw (method, path, authorization), for as long as the block runs."""
    seen: list[tuple[str, str, str | None]] = []
    handler = type("ServedHub", (HubHandler,),
                   {"repos": repos, "refs": refs or {}, "requests_seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def hub_environment(url: str) -> dict[str, str]:
    """What points huggingface_hub (and hf_snapshot) at the local Hub."""
    return {"HF_ENDPOINT": url, "HF_TOKEN": "hf_test_token", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
