"""The library's header cache: ModelInfo per file, keyed by real path, size and mtime.

Why: reading fifty GGUF headers (vocabularies of 150k tokens each) takes
seconds; a listing should be instant. A JSON file under the data folder keeps
each file's summary with the size and mtime it was read at; an entry is reused
only while both still match, so a replaced or re-downloaded file is read again.
Tokens are not stored (megabytes per model): pairing re-reads the two headers
it compares.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from specula.core import files, json_files, paths
from specula.core.gguf.model_info import ModelInfo

INDEX_VERSION = 2  # 2: ModelInfo says what a model is (memory, experts, MTP): read headers again
_INFO_FIELDS = {f.name for f in dataclasses.fields(ModelInfo)} - {"tokenizer", "chat_template"}
_KINDS: dict[str, type] = {"int": int, "str": str, "bool": bool}
# Each cached field's kind from ModelInfo's annotations ("int | None" -> (int, None)).
_FIELD_KINDS: dict[str, json_files.Kind] = {
    f.name: tuple(_KINDS.get(part.strip(), type(None)) for part in str(f.type).split("|"))
    for f in dataclasses.fields(ModelInfo) if f.name in _INFO_FIELDS}


def default_index_path() -> Path:
    return paths.data_dir() / "library-index.json"


def info_to_json(info: ModelInfo) -> dict[str, object]:
    d = info.to_dict()
    return {k: v for k, v in d.items() if k in _INFO_FIELDS}


def info_from_json(data: object) -> ModelInfo | None:
    """A ModelInfo without tokens or template body; None for an entry we cannot trust."""
    if not isinstance(data, dict):
        return None
    values = {k: data.get(k) for k in _INFO_FIELDS}
    if not isinstance(values.get("source"), str) or not isinstance(values.get("gguf_version"), int):
        return None
    values["has_chat_template"] = bool(values.get("has_chat_template"))
    if any(not json_files.is_kind(v, _FIELD_KINDS[k]) for k, v in values.items()):
        return None  # a value of the wrong kind: the header is read again
    try:
        return ModelInfo(**values)  # type: ignore[arg-type]
    except TypeError:
        return None


@dataclass
class IndexEntry:
    size: int
    mtime_ns: int
    info: ModelInfo | None
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"size": self.size, "mtime_ns": self.mtime_ns,
                "info": info_to_json(self.info) if self.info else None, "error": self.error}


class LibraryIndex:
    """Load, query and save the header cache; a damaged file is set aside (with a
    notice) and the cache starts empty."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_index_path()
        self.entries: dict[str, IndexEntry] = {}
        self.dirty = False
        self._load()

    def _load(self) -> None:
        data = json_files.load(json_files.JsonFile(
            self.path, "library index (a cache of model headers)",
            {"version": int, "files": dict},
            consequence="The library reads the models' headers again")).value
        if data is None or data.get("version") != INDEX_VERSION:
            return
        for key, raw in data.get("files", {}).items():
            if not isinstance(raw, dict):
                continue
            size, mtime = raw.get("size"), raw.get("mtime_ns")
            if not isinstance(size, int) or not isinstance(mtime, int):
                continue
            error = raw.get("error")
            info = info_from_json(raw.get("info"))
            if info is None and not isinstance(error, str):
                continue
            self.entries[key] = IndexEntry(size, mtime, info, error if isinstance(error, str) else None)

    def lookup(self, key: str, size: int, mtime_ns: int) -> IndexEntry | None:
        entry = self.entries.get(key)
        if entry and entry.size == size and entry.mtime_ns == mtime_ns:
            return entry
        return None

    def put(self, key: str, entry: IndexEntry) -> None:
        self.entries[key] = entry
        self.dirty = True

    def drop(self, key: str) -> None:
        if self.entries.pop(key, None) is not None:
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"version": INDEX_VERSION,
                "files": {k: e.to_json() for k, e in sorted(self.entries.items())}}
        try:
            files.atomic_write_json(self.path, data)
        except OSError:
            return  # an index that cannot be written only costs a rescan
        self.dirty = False
