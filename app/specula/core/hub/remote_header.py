"""A GGUF file on the hub as a :class:`~specula.core.gguf.reader.ByteSource`.

Why: a model's tokenizer, quantization, context length and size sit in the
first megabytes of its file, so ``read_model_info(RemoteSource(...))`` tells
whether a draft fits a target before gigabytes are downloaded. The header
parser reads sequentially from offset 0, so this source keeps the fetched
prefix, extends it with HTTP range requests of growing size (few round trips
for a large vocabulary, little waste for a small one), and stores it on disk
under the cache folder keyed by repo, file and etag: the second look at a file
costs nothing, and a new upload (new etag) is never served stale bytes.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from specula.core import files, paths
from specula.core.gguf.model_info import ModelInfo, read_model_info
from specula.core.hub.client import HubClient, RemoteFileMeta
from specula.core.hub.errors import ErrorKind, HubError, translate

FIRST_FETCH = 256 * 1024
MAX_FETCH = 32 * 1024 * 1024
MAX_CACHED_PREFIX = 512 * 1024 * 1024
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def _cache_file(repo_id: str, filename: str, etag: str | None) -> Path:
    key = hashlib.sha256(f"{repo_id}\0{filename}\0{etag}".encode()).hexdigest()[:32]
    return paths.cache_dir() / "remote-headers" / f"{key}.bin"


class RemoteSource:
    """Random access to a hub file by range GETs, with an on-disk prefix cache."""

    def __init__(self, repo_id: str, filename: str, *, hub: HubClient | None = None,
                 revision: str = "main", use_cache: bool = True) -> None:
        self.hub = hub or HubClient()
        self.repo_id = repo_id
        self.filename = filename
        self.name = f"{repo_id}/{filename}"
        self.meta: RemoteFileMeta = self.hub.file_metadata(repo_id, filename, revision)
        self.url = self.meta.url
        self.requests_made = 0
        self._cache_path = _cache_file(repo_id, filename, self.meta.etag) if use_cache else None
        self._prefix = self._load_cache()
        self._next_fetch = max(FIRST_FETCH, len(self._prefix))

    @property
    def size(self) -> int | None:
        return self.meta.size

    def _load_cache(self) -> bytes:
        if self._cache_path is None or self.meta.etag is None:
            return b""
        try:
            data = self._cache_path.read_bytes()
        except OSError:
            return b""
        if self.size is not None and len(data) > self.size:
            return b""  # not this file's bytes
        return data

    def _save_cache(self) -> None:
        if self._cache_path is None or self.meta.etag is None:
            return
        try:
            self._cache_path.parent.mkdir(parents=True, exist_ok=True)
            files.atomic_write_bytes(self._cache_path, self._prefix)
        except OSError:
            pass  # a cache that cannot be written only costs a refetch

    def _fetch(self, start: int, end: int) -> bytes:
        """Bytes ``start..end-1`` (fewer only at the end of the file)."""
        what = f"the header of {self.name}"
        self.requests_made += 1
        response = self.hub.get(self.url, what, headers={"Range": f"bytes={start}-{end - 1}",
                                                         "Accept-Encoding": "identity"},
                                stream=True)
        with response:
            skip = 0
            if response.status_code == 206:
                m = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
                if not m or int(m.group(1)) != start:
                    raise HubError(ErrorKind.BAD_REPLY, f"the hub answered the wrong range for {what}")
            elif response.status_code == 200:
                skip = start  # the server ignored the range: skip to where we want
            else:
                raise HubError(ErrorKind.BAD_REPLY,
                               f"unexpected answer {response.status_code} for {what}")
            want = end - start
            chunks: list[bytes] = []
            got = 0
            try:
                for chunk in response.iter_content(64 * 1024):
                    if skip:
                        drop = min(skip, len(chunk))
                        chunk = chunk[drop:]
                        skip -= drop
                    chunks.append(chunk)
                    got += len(chunk)
                    if got >= want:
                        break
            except Exception as exc:
                raise translate(exc, what, self.hub.endpoint) from exc
        return b"".join(chunks)[:want]

    def read(self, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        end = offset + length
        if self.size is not None:
            end = min(end, self.size)
        if end <= offset:
            return b""
        if end > len(self._prefix) and offset <= len(self._prefix) + self._next_fetch:
            self._extend(end)
        if end <= len(self._prefix):
            return self._prefix[offset:end]
        return self._fetch(offset, end)  # far from the prefix: fetch it alone

    def _extend(self, end: int) -> None:
        """Grow the cached prefix to at least ``end`` bytes, doubling the fetch each time."""
        start = len(self._prefix)
        stop = max(end, start + self._next_fetch)
        if self.size is not None:
            stop = min(stop, self.size)
        if stop > MAX_CACHED_PREFIX:
            return
        data = self._fetch(start, stop)
        self._prefix += data
        self._next_fetch = min(self._next_fetch * 2, MAX_FETCH)
        self._save_cache()


def read_remote_info(repo_id: str, filename: str, hub: HubClient | None = None) -> ModelInfo:
    """``read_model_info`` of a hub file, reading only its header."""
    return read_model_info(RemoteSource(repo_id, filename, hub=hub))
