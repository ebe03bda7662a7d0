"""The Hugging Face hub as Specula needs it: find GGUF repositories, list their models.

Metadata goes through huggingface_hub (``HfApi.model_info``,
``HfApi.get_paths_info``, ``get_hf_file_metadata``, ``hf_hub_url``,
``build_hf_headers``), so the hub's protocol, redirects and auth stay its
business. Two things are done with ``requests`` instead: the search (the
library's paginated listing retries network errors and 5xx with an exponential
backoff of ~23 s, which would make an offline search hang) and the model
card's text.

The endpoint is resolved on every call (argument, then ``HF_ENDPOINT``, then
huggingface.co), because huggingface_hub freezes ``HF_ENDPOINT`` at import
time. ``HF_TOKEN`` is read by huggingface_hub on each request.

Everything the hub sends is treated as untrusted: malformed items are skipped
or reported as :class:`~specula.core.hub.errors.HubError`, file names are
checked before they can become local paths (and never hold control or
bidi-override characters), and every text a result exposes (tags, dates, the
card's description) is display-safe (:mod:`specula.core.safe_text`), so no
terminal or label receives escape sequences from the hub. The search reply is
read streamed, up to :data:`MAX_SEARCH_REPLY_BYTES`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath
from typing import Any

import requests
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url
from huggingface_hub.utils import build_hf_headers

from specula.core.gguf.model_info import quantization_from_name
from specula.core.gguf.split import group_gguf, is_complete, parse_split
from specula.core.hub.errors import ErrorKind, HubError, for_status, translate
from specula.core.safe_text import display_text, has_unsafe

DEFAULT_ENDPOINT = "https://huggingface.co"
SORTS = {"downloads": "downloads", "likes": "likes", "trending": "trendingScore",
         "modified": "lastModified"}
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")
_MAX_CARD_BYTES = 256 * 1024
# A search for 1,000 repositories answers about 0.3 MB; past this the reply is refused
# (it is read streamed, so a hostile reply costs at most this much memory, plus parsing).
MAX_SEARCH_REPLY_BYTES = 8 * 1024 * 1024


def resolve_endpoint(endpoint: str | None = None) -> str:
    """The hub's base URL: the argument, else ``HF_ENDPOINT``, else huggingface.co."""
    value = endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    return value.rstrip("/")


def offline_mode() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def validate_repo_id(repo_id: str) -> str:
    """``owner/name`` or :class:`HubError`; stops odd ids before they reach a URL or a path."""
    if not isinstance(repo_id, str) or not _REPO_ID.match(repo_id) or ".." in repo_id:
        raise HubError(ErrorKind.INVALID, f"not a repository id (owner/name): {repo_id!r}")
    return repo_id


def validate_filename(name: object) -> str:
    """A relative file path inside a repo, safe to join under a local folder."""
    if (not isinstance(name, str) or not name or len(name) > 1000 or "\\" in name
            or has_unsafe(name)):
        raise HubError(ErrorKind.INVALID, f"unsafe file name in repository: {name!r}")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or any(p in ("", ".", "..") for p in parts) or ":" in parts[0]:
        raise HubError(ErrorKind.INVALID, f"unsafe file name in repository: {name!r}")
    return name


def read_capped(response: requests.Response, cap: int, what: str) -> bytes:
    """The (decompressed) body, read in chunks; :class:`HubError` past ``cap`` bytes."""
    def too_big() -> HubError:
        return HubError(ErrorKind.BAD_REPLY,
                        f"the hub's reply for {what} is larger than {cap // (1024 * 1024)} MB; "
                        "refused")

    with response:
        declared = response.headers.get("Content-Length", "")
        if declared.isascii() and declared.isdigit() and int(declared) > cap:
            raise too_big()
        chunks: list[bytes] = []
        size = 0
        try:
            for chunk in response.iter_content(chunk_size=64 * 1024):
                size += len(chunk)
                if size > cap:
                    raise too_big()
                chunks.append(chunk)
        except requests.RequestException as exc:
            raise translate(exc, what) from exc
    return b"".join(chunks)


def _nonneg_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


@dataclass(frozen=True)
class RepoSummary:
    """One search result."""

    repo_id: str
    downloads: int | None
    likes: int | None
    last_modified: str | None
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["tags"] = list(self.tags)
        return d


@dataclass(frozen=True)
class RemoteFile:
    """A file in a repository with the size and sha256 the hub's LFS metadata gives."""

    path: str
    size: int | None
    sha256: str | None


@dataclass
class RemoteModel:
    """One model in a repository: a single GGUF file or all parts of a split one."""

    repo_id: str
    files: list[RemoteFile]
    quantization: str | None
    complete: bool = True

    @property
    def filename(self) -> str:
        """The file to name it by (the first part of a split model)."""
        return self.files[0].path

    @property
    def split(self) -> bool:
        return len(self.files) > 1 or parse_split(self.filename) is not None

    @property
    def total_size(self) -> int | None:
        sizes = [f.size for f in self.files]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)

    def to_dict(self) -> dict[str, object]:
        return {
            "repo_id": self.repo_id,
            "filename": self.filename,
            "quantization": self.quantization,
            "split": self.split,
            "complete": self.complete,
            "total_size": self.total_size,
            "files": [asdict(f) for f in self.files],
        }


@dataclass
class RepoListing:
    """What a repository offers: its GGUF models, grouped, and a short description."""

    repo_id: str
    models: list[RemoteModel]
    commit: str | None = None
    description: str | None = None
    ignored_files: list[str] = field(default_factory=list)

    def find(self, filename: str) -> RemoteModel | None:
        for model in self.models:
            if any(f.path == filename for f in model.files):
                return model
        return None

    def to_dict(self) -> dict[str, object]:
        return {
            "repo_id": self.repo_id,
            "commit": self.commit,
            "description": self.description,
            "models": [m.to_dict() for m in self.models],
            "ignored_files": self.ignored_files,
        }


@dataclass(frozen=True)
class RemoteFileMeta:
    """What a HEAD on ``resolve/`` tells: the version (etag, commit) and the size."""

    url: str
    etag: str | None
    commit: str | None
    size: int | None


def group_remote_files(repo_id: str, files: Iterable[RemoteFile]) -> list[RemoteModel]:
    """GGUF files grouped into models (split parts together); other files dropped."""
    by_path = {f.path: f for f in files}
    models = []
    for group in group_gguf(by_path):
        models.append(RemoteModel(repo_id, [by_path[p] for p in group],
                                  quantization_from_name(PurePosixPath(group[0]).name),
                                  complete=is_complete(group)))
    return models


def description_from_card(text: str, limit: int = 300) -> str | None:
    """The first prose paragraph of a model card (no front matter, headings, images, tables,
    inline HTML), display-safe."""
    if text.startswith("---"):
        end = text.find("\n---", 3)
        text = text[end + 4:] if end != -1 else ""
    paragraphs = re.split(r"\n\s*\n", text)
    for para in paragraphs:
        lines = [ln.strip() for ln in para.strip().splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith(("#", "<", "![", "|", "```", ">"))]
        if not lines:
            continue
        prose = " ".join(lines)
        prose = re.sub(r"!\[[^\]]*\]\([^)]*\)", "", prose)
        prose = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", prose)
        prose = re.sub(r"[*_`]", "", prose)
        # Inline HTML (<a>, <br>, <img>): dropped, so that a Qt label in AutoText mode
        # shows the text as plain text and loads nothing.
        prose = re.sub(r"<[^<>]*>", "", prose).replace("<", "‹").strip()
        if len(prose) < 20:
            continue
        prose = display_text(prose)
        return prose if len(prose) <= limit else prose[: limit - 1].rstrip() + "…"
    return None


class HubClient:
    """Read-only access to a hub endpoint; cheap to create, holds no state but a session."""

    def __init__(self, endpoint: str | None = None, token: str | None = None,
                 timeout: float = 20.0) -> None:
        self._endpoint = endpoint
        self.token = token
        self.timeout = timeout
        self.session = requests.Session()

    @property
    def endpoint(self) -> str:
        return resolve_endpoint(self._endpoint)

    def api(self) -> HfApi:
        return HfApi(endpoint=self.endpoint, token=self.token)

    def headers(self) -> dict[str, str]:
        """Auth (``HF_TOKEN`` or the given token) and user agent, as huggingface_hub sends them."""
        return dict(build_hf_headers(token=self.token, library_name="specula"))

    def _guard(self, what: str) -> None:
        if offline_mode():
            raise HubError(ErrorKind.OFFLINE, f"offline mode is on (HF_HUB_OFFLINE); cannot fetch {what}")

    def get(self, url: str, what: str, **kwargs: Any) -> requests.Response:
        """A GET through our session with hub headers; HTTP errors become :class:`HubError`."""
        self._guard(what)
        headers = {**self.headers(), **kwargs.pop("headers", {})}
        try:
            response = self.session.get(url, headers=headers, timeout=self.timeout, **kwargs)
        except Exception as exc:
            raise translate(exc, what, self.endpoint) from exc
        if response.status_code >= 400:
            response.close()
            raise for_status(response.status_code, what)
        return response

    def search(self, text: str, sort: str = "downloads", limit: int = 20) -> list[RepoSummary]:
        """GGUF repositories matching ``text``, most downloaded (or liked...) first."""
        if sort not in SORTS:
            raise HubError(ErrorKind.INVALID, f"unknown sort {sort!r} (one of {', '.join(SORTS)})")
        limit = max(1, min(int(limit), 1000))
        params = {"search": text, "filter": "gguf", "sort": SORTS[sort], "direction": "-1",
                  "limit": str(limit)}
        what = f"the search for {text!r}"
        response = self.get(f"{self.endpoint}/api/models", what, params=params, stream=True)
        body = read_capped(response, MAX_SEARCH_REPLY_BYTES, what)
        try:
            items = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise HubError(ErrorKind.BAD_REPLY, f"the hub sent a malformed reply for {what}") from exc
        if not isinstance(items, list):
            raise HubError(ErrorKind.BAD_REPLY, f"the hub sent a malformed reply for {what}")
        results = []
        for item in items[:limit]:
            if not isinstance(item, dict):
                continue
            repo_id = item.get("id") or item.get("modelId")
            if not isinstance(repo_id, str) or not _REPO_ID.match(repo_id):
                continue
            tags = item.get("tags")
            modified = item.get("lastModified")
            results.append(RepoSummary(
                repo_id,
                _nonneg_int(item.get("downloads")),
                _nonneg_int(item.get("likes")),
                display_text(modified[:64]) if isinstance(modified, str) else None,
                tuple(display_text(t[:200]) for t in tags if isinstance(t, str))
                if isinstance(tags, list) else (),
            ))
        return results

    def list_files(self, repo_id: str, *, with_description: bool = True) -> RepoListing:
        """The repository's GGUF models (split parts grouped) with sizes and sha256."""
        validate_repo_id(repo_id)
        what = f"repository {repo_id}"
        self._guard(what)
        try:
            info = self.api().model_info(repo_id, files_metadata=True, timeout=self.timeout)
            siblings = list(info.siblings or [])
            commit = info.sha if isinstance(info.sha, str) else None
        except Exception as exc:
            raise translate(exc, what, self.endpoint) from exc
        files: list[RemoteFile] = []
        ignored: list[str] = []
        names: set[str] = set()
        for sib in siblings:
            name = getattr(sib, "rfilename", None)
            try:
                validate_filename(name)
            except HubError:
                continue  # a hostile name is never offered
            assert isinstance(name, str)
            names.add(name)
            if not name.lower().endswith(".gguf"):
                ignored.append(name)
                continue
            lfs = getattr(sib, "lfs", None)
            sha = getattr(lfs, "sha256", None)
            size = _nonneg_int(getattr(lfs, "size", None)) or _nonneg_int(getattr(sib, "size", None))
            files.append(RemoteFile(name, size, sha if _is_sha256(sha) else None))
        listing = RepoListing(repo_id, group_remote_files(repo_id, files), commit,
                              ignored_files=ignored)
        if with_description and "README.md" in names:
            listing.description = self.card_description(repo_id)
        return listing

    def card_description(self, repo_id: str) -> str | None:
        """The model card's first paragraph; None when there is none or it cannot be fetched."""
        try:
            response = self.get(self.file_url(repo_id, "README.md"), f"{repo_id} model card",
                                stream=True)
            with response:
                raw = response.raw.read(_MAX_CARD_BYTES, decode_content=True)
        except (HubError, requests.RequestException, OSError):
            return None
        return description_from_card(raw.decode("utf-8", errors="replace"))

    def file_url(self, repo_id: str, filename: str, revision: str = "main") -> str:
        validate_repo_id(repo_id)
        validate_filename(filename)
        return str(hf_hub_url(repo_id, filename, revision=revision, endpoint=self.endpoint))

    def file_metadata(self, repo_id: str, filename: str, revision: str = "main") -> RemoteFileMeta:
        """HEAD the file: etag (the sha256 for LFS files), commit and size."""
        url = self.file_url(repo_id, filename, revision)
        what = f"{repo_id}/{filename}"
        self._guard(what)
        try:
            meta = get_hf_file_metadata(url, token=self.token, timeout=self.timeout,
                                        endpoint=self.endpoint)
        except Exception as exc:
            raise translate(exc, what, self.endpoint) from exc
        etag = meta.etag if isinstance(meta.etag, str) else None
        commit = meta.commit_hash if isinstance(meta.commit_hash, str) else None
        return RemoteFileMeta(url, etag, commit, _nonneg_int(meta.size))

    def lfs_info(self, repo_id: str, paths: list[str], revision: str = "main") -> dict[str, RemoteFile]:
        """Size and sha256 of ``paths`` from the hub's ``paths-info`` (the checksum to verify)."""
        validate_repo_id(repo_id)
        for p in paths:
            validate_filename(p)
        what = f"{repo_id}/{paths[0]}" if len(paths) == 1 else f"{repo_id} ({len(paths)} files)"
        self._guard(what)
        try:
            entries = self.api().get_paths_info(repo_id, paths, revision=revision)
            out: dict[str, RemoteFile] = {}
            for entry in entries:
                path = getattr(entry, "path", None)
                if path not in paths:
                    continue
                lfs = getattr(entry, "lfs", None)
                sha = getattr(lfs, "sha256", None)
                size = _nonneg_int(getattr(lfs, "size", None)) or _nonneg_int(getattr(entry, "size", None))
                out[str(path)] = RemoteFile(str(path), size, sha if _is_sha256(sha) else None)
        except Exception as exc:
            raise translate(exc, what, self.endpoint) from exc
        return out


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) is not None


def split_target(spec: str) -> tuple[str, str] | None:
    """``owner/repo/path/file.gguf`` -> (``owner/repo``, ``path/file.gguf``); None otherwise."""
    parts = spec.split("/")
    if len(parts) < 3:
        return None
    repo_id, filename = "/".join(parts[:2]), "/".join(parts[2:])
    try:
        validate_repo_id(repo_id)
        validate_filename(filename)
    except HubError:
        return None
    return repo_id, filename
