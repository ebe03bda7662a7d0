"""A local HTTP server that speaks the Hugging Face hub protocol as huggingface_hub uses it.

Endpoints (read off huggingface_hub 2.x: hf_api.py, file_download.py):

* ``GET  /api/models?search=&filter=gguf&sort=&limit=`` search (a JSON list)
* ``GET  /api/models/{repo}[?blobs=True]`` model info with ``siblings``
  (``rfilename``, and with blobs ``size``, ``blobId``, ``lfs: {size, sha256, pointerSize}``)
* ``GET  /api/models/{repo}/tree/main`` tree entries (``type, oid, size, path, lfs: {oid, size, pointerSize}``)
* ``POST /api/models/{repo}/paths-info/main`` form ``paths=...`` -> tree entries
* ``HEAD|GET /{repo}/resolve/main/{file}``: LFS files redirect (302) to a CDN URL on
  another host name (``localhost`` vs ``127.0.0.1``) carrying ``X-Repo-Commit``,
  ``X-Linked-Etag``, ``X-Linked-Size``; small files are served directly
* ``GET  /cdn/{repo}/{file}`` the bytes, with ``Range`` (206 + ``Content-Range``)

Faults a test can switch on: drop the connection after N bytes, lie about the
sha256, answer a status (404/401/500) for a path prefix, require a token, send
a hostile reply for a path prefix. Every request is logged (method, path, headers).
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class FakeFile:
    data: bytes
    lfs: bool = True
    claimed_sha256: str | None = None  # a lie told by the API, when set

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def git_oid(self) -> str:
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()


@dataclass
class FakeRepo:
    repo_id: str
    files: dict[str, FakeFile] = field(default_factory=dict)
    downloads: int = 0
    likes: int = 0
    tags: list[str] = field(default_factory=lambda: ["gguf"])
    private: bool = False


@dataclass
class Logged:
    method: str
    path: str
    headers: dict[str, str]
    query: dict[str, list[str]] = field(default_factory=dict)


class FakeHub:
    """The server and its state; tests add repos and faults, then read ``log``."""

    def __init__(self) -> None:
        self.repos: dict[str, FakeRepo] = {}
        self.log: list[Logged] = []
        self.token: str | None = None  # when set, private repos need "Bearer <token>"
        self.drop_after: dict[str, int] = {}  # file path -> bytes sent before dropping (once)
        self.status_for: dict[str, int] = {}  # path prefix -> status to answer
        self.hostile: dict[str, bytes] = {}  # path prefix -> raw body to answer with 200
        self.ignore_range = False
        self.stall_after: dict[str, int] = {}  # file path -> bytes sent before stalling (once)
        self.stalled = threading.Event()  # set when a body stalls
        self.release = threading.Event()  # set by the test to let a stalled body continue
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.cdn = f"http://localhost:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    def start(self) -> FakeHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def add_repo(self, repo_id: str, files: dict[str, bytes | Path | FakeFile], **kw: object) -> FakeRepo:
        repo = FakeRepo(repo_id, **kw)  # type: ignore[arg-type]
        for name, content in files.items():
            if isinstance(content, FakeFile):
                repo.files[name] = content
            else:
                data = content.read_bytes() if isinstance(content, Path) else content
                repo.files[name] = FakeFile(data, lfs=name.endswith(".gguf"))
        self.repos[repo_id] = repo
        return repo

    def requests_to(self, fragment: str, method: str = "GET") -> list[Logged]:
        return [r for r in self.log if fragment in r.path and r.method == method]

    # -- JSON the API returns -----------------------------------------------------
    def tree_entry(self, path: str, f: FakeFile) -> dict[str, object]:
        entry: dict[str, object] = {"type": "file", "oid": f.git_oid, "size": len(f.data), "path": path}
        if f.lfs:
            entry["size"] = 134
            entry["lfs"] = {"oid": f.claimed_sha256 or f.sha256, "size": len(f.data), "pointerSize": 134}
        return entry

    def model_info(self, repo: FakeRepo, blobs: bool) -> dict[str, object]:
        siblings = []
        for path, f in repo.files.items():
            sib: dict[str, object] = {"rfilename": path}
            if blobs:
                sib["size"] = len(f.data)
                sib["blobId"] = f.git_oid
                if f.lfs:
                    sib["lfs"] = {"size": len(f.data), "sha256": f.claimed_sha256 or f.sha256,
                                  "pointerSize": 134}
            siblings.append(sib)
        return {"_id": "x" + repo.repo_id, "id": repo.repo_id, "modelId": repo.repo_id,
                "author": repo.repo_id.split("/")[0], "sha": COMMIT, "private": repo.private,
                "downloads": repo.downloads, "likes": repo.likes, "tags": repo.tags,
                "lastModified": "2025-01-01T00:00:00.000Z", "siblings": siblings}


def _make_handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # keep test output clean
            pass

        # -- helpers ------------------------------------------------------------
        def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
                  content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _json(self, obj: object, status: int = 200) -> None:
            self._send(status, json.dumps(obj).encode())

        def _error(self, status: int, message: str, code: str | None = None) -> None:
            headers = {"X-Error-Message": message}
            if code:
                headers["X-Error-Code"] = code
            self._send(status, json.dumps({"error": message}).encode(), headers)

        def _repo(self, repo_id: str) -> FakeRepo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "Repository not found", "RepoNotFound")
                return None
            if repo.private:
                auth = self.headers.get("Authorization", "")
                if hub.token is None or auth != f"Bearer {hub.token}":
                    self._error(401, "Invalid credentials in Authorization header")
                    return None
            return repo

        def _intercept(self, path: str) -> bool:
            query = parse_qs(urlsplit(self.path).query)
            hub.log.append(Logged(self.command, path, {k.lower(): v for k, v in self.headers.items()}, query))
            for prefix, status in hub.status_for.items():
                if path.startswith(prefix):
                    self._error(status, f"fake error {status}")
                    return True
            for prefix, body in hub.hostile.items():
                if path.startswith(prefix):
                    self._send(200, body)
                    return True
            return False

        # -- verbs --------------------------------------------------------------
        def do_HEAD(self) -> None:
            self.do_GET()

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            path = unquote(url.path)
            if self._intercept(path):
                return
            query = parse_qs(url.query)
            if path == "/api/models":
                return self._search(query)
            m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/main(/.*)?", path)
            if m:
                repo = self._repo(m.group(1))
                if repo:
                    self._json([hub.tree_entry(p, f) for p, f in repo.files.items()])
                return None
            m = re.fullmatch(r"/api/models/([^/]+/[^/]+)", path)
            if m:
                repo = self._repo(m.group(1))
                if repo:
                    self._json(hub.model_info(repo, "blobs" in query))
                return None
            m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/main/(.+)", path)
            if m:
                return self._resolve(m.group(1), m.group(2))
            m = re.fullmatch(r"/cdn/([^/]+/[^/]+)/(.+)", path)
            if m:
                return self._cdn(m.group(1), m.group(2))
            self._error(404, "no route")
            return None

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            path = unquote(url.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode()
            if self._intercept(path):
                return
            m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/paths-info/main", path)
            if not m:
                self._error(404, "no route")
                return
            repo = self._repo(m.group(1))
            if repo is None:
                return
            if "json" in self.headers.get("Content-Type", ""):
                wanted = json.loads(body).get("paths", [])
            else:
                wanted = parse_qs(body).get("paths", [])
            self._json([hub.tree_entry(p, repo.files[p]) for p in wanted if p in repo.files])

        def _search(self, query: dict[str, list[str]]) -> None:
            text = (query.get("search") or [""])[0].lower()
            filters = query.get("filter", [])
            sort = (query.get("sort") or ["downloads"])[0]
            limit = int((query.get("limit") or ["1000"])[0])
            repos = [r for r in hub.repos.values()
                     if text in r.repo_id.lower() and all(f in r.tags for f in filters)
                     and not r.private]
            key = "likes" if sort == "likes" else "downloads"
            repos.sort(key=lambda r: getattr(r, key), reverse=True)
            self._json([{"_id": "x" + r.repo_id, "id": r.repo_id, "likes": r.likes,
                         "downloads": r.downloads, "tags": r.tags, "private": False,
                         "lastModified": "2025-01-01T00:00:00.000Z"} for r in repos[:limit]])

        def _resolve(self, repo_id: str, name: str) -> None:
            repo = self._repo(repo_id)
            if repo is None:
                return
            f = repo.files.get(name)
            if f is None:
                self._error(404, "Entry not found", "EntryNotFound")
                return
            common = {"X-Repo-Commit": COMMIT, "Accept-Ranges": "bytes"}
            if f.lfs:
                location = f"{hub.cdn}/cdn/{quote(repo_id)}/{quote(name)}?sig=fake"
                self._send(302, b"", {**common, "Location": location, "ETag": f'"{f.git_oid}"',
                                      "X-Linked-Etag": f'"{f.sha256}"',
                                      "X-Linked-Size": str(len(f.data))})
                return
            self._body(f, {**common, "ETag": f'"{f.git_oid}"'}, name)

        def _cdn(self, repo_id: str, name: str) -> None:
            repo = hub.repos.get(repo_id)
            f = repo.files.get(name) if repo else None
            if f is None:
                self._error(404, "no such object")
                return
            self._body(f, {"ETag": f'"{f.sha256}"', "Accept-Ranges": "bytes"}, name)

        def _body(self, f: FakeFile, headers: dict[str, str], name: str) -> None:
            data, status, start = f.data, 200, 0
            rng = self.headers.get("Range")
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")
            if m and not hub.ignore_range:
                start = int(m.group(1))
                end = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
                if start >= len(data):
                    self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"})
                    return
                headers = {**headers, "Content-Range": f"bytes {start}-{end}/{len(data)}"}
                data, status = data[start : end + 1], 206
            stall = hub.stall_after.pop(name, None) if self.command == "GET" else None
            if stall is not None:
                return self._stalled(status, data, headers, stall)
            drop = hub.drop_after.pop(name, None) if self.command == "GET" else None
            if drop is None or drop - start >= len(data):
                self._send(status, data, headers, "application/octet-stream")
                return
            # Promise the whole body, send part of it, then cut the connection.
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data[: max(drop - start, 0)])
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True

        def _stalled(self, status: int, data: bytes, headers: dict[str, str], stall: int) -> None:
            """Send ``stall`` bytes, then wait until the test releases the rest."""
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            try:
                self.wfile.write(data[:stall])
                self.wfile.flush()
                hub.stalled.set()
                hub.release.wait(10)
                self.wfile.write(data[stall:])
            except OSError:
                pass  # the client went away (that is what the test wanted)

    return Handler
