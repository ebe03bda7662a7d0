"""A bounded GGUF header parser over any byte source.

Why not ``gguf.GGUFReader``: it memory-maps a whole local file, so it cannot
read the first megabytes of a remote file fetched with HTTP range requests, and
it trusts the counts and lengths it finds. This parser reads only the header
(key/values and tensor infos), through a :class:`ByteSource`, and checks every
count and length against the source's size and fixed caps before it allocates,
so a hostile or truncated file fails fast with a :class:`GGUFError` that names
the file and the problem.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from gguf import GGUFValueType

from specula.core.safe_text import display_text

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)

# Caps that no real model comes near; a file beyond them is refused, not parsed.
MAX_KV_COUNT = 65_536
MAX_TENSOR_COUNT = 1_000_000
MAX_STRING_BYTES = 64 * 1024 * 1024
MAX_ARRAY_ITEMS = 16 * 1024 * 1024
MAX_TOTAL_ARRAY_ITEMS = 8 * 1024 * 1024
"""Items in all of a header's arrays together. Each item becomes a Python object (8 to
60 bytes for a 1 to 10 byte item in the file), so a file made of arrays would cost
about ten times its size: four 16M-item arrays of bytes in a 64 MB file took 760 MB.
The largest vocabularies (262,144 tokens; texts, scores, types and merges) hold under
2M items in all."""
MAX_DIMS = 8
MAX_ARRAY_DEPTH = 8  # arrays of arrays: real files nest one level; each level is 12 bytes
MAX_HEADER_BYTES = 512 * 1024 * 1024

_SCALARS: dict[int, tuple[str, int]] = {
    GGUFValueType.UINT8: ("<B", 1),
    GGUFValueType.INT8: ("<b", 1),
    GGUFValueType.UINT16: ("<H", 2),
    GGUFValueType.INT16: ("<h", 2),
    GGUFValueType.UINT32: ("<I", 4),
    GGUFValueType.INT32: ("<i", 4),
    GGUFValueType.FLOAT32: ("<f", 4),
    GGUFValueType.BOOL: ("<?", 1),
    GGUFValueType.UINT64: ("<Q", 8),
    GGUFValueType.INT64: ("<q", 8),
    GGUFValueType.FLOAT64: ("<d", 8),
}


class GGUFError(ValueError):
    """A file that is not a readable GGUF; the message names the file and the problem
    (display-safe: a key name from the file cannot carry escape sequences to a terminal)."""

    def __init__(self, source_name: str, problem: str) -> None:
        super().__init__(display_text(f"{source_name}: {problem}"))
        self.source_name = source_name
        self.problem = problem


class ByteSource(Protocol):
    """Random access to the bytes of a (possibly remote) file."""

    name: str

    @property
    def size(self) -> int | None:
        """Total size in bytes, or None when unknown."""

    def read(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``offset``; fewer only at the end of the file."""


class FileSource:
    """A local file as a :class:`ByteSource`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.name = str(path)
        try:
            self._size = self.path.stat().st_size
        except OSError as exc:
            raise GGUFError(self.name, f"cannot open the file ({exc.strerror})") from exc

    @property
    def size(self) -> int | None:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        try:
            with self.path.open("rb") as fh:
                fh.seek(offset)
                return fh.read(length)
        except OSError as exc:
            raise GGUFError(self.name, f"cannot read the file ({exc.strerror})") from exc


class BytesSource:
    """Bytes already in memory (e.g. the first megabytes of a remote file)."""

    def __init__(self, data: bytes, name: str = "<bytes>", size: int | None = None) -> None:
        self._data = data
        self.name = name
        self._size = size if size is not None else len(data)

    @property
    def size(self) -> int | None:
        return self._size

    def read(self, offset: int, length: int) -> bytes:
        return self._data[offset : offset + length]


@dataclass
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass
class GGUFHeader:
    """What the header of a GGUF file says, values as plain Python objects."""

    source_name: str
    version: int
    fields: dict[str, object]
    tensors: list[TensorInfo] = field(default_factory=list)
    header_bytes: int = 0
    file_size: int | None = None


class _Cursor:
    """Sequential reads over a ByteSource with read-ahead and bounds checks."""

    def __init__(self, source: ByteSource) -> None:
        self.src = source
        self.size = source.size
        self.pos = 0
        self._buf = b""
        self._buf_start = 0
        self._chunk = 1 << 20
        self.items = 0  # array items read so far (MAX_TOTAL_ARRAY_ITEMS)

    def _fail(self, problem: str) -> GGUFError:
        return GGUFError(self.src.name, problem)

    def need(self, n: int, what: str) -> None:
        """Refuse a read of ``n`` bytes the file cannot hold (before allocating)."""
        if self.size is not None and self.pos + n > self.size:
            raise self._fail(
                f"truncated header: {what} needs {n} bytes at offset {self.pos}, "
                f"file has {self.size}"
            )
        if self.pos + n > MAX_HEADER_BYTES:
            raise self._fail(f"header larger than {MAX_HEADER_BYTES} bytes: {what}")

    def take(self, n: int, what: str) -> bytes:
        self.need(n, what)
        end = self.pos + n
        if not (self._buf_start <= self.pos and end <= self._buf_start + len(self._buf)):
            want = max(n, self._chunk)
            self._chunk = min(self._chunk * 2, 16 << 20)
            self._buf = self.src.read(self.pos, want)
            self._buf_start = self.pos
            if len(self._buf) < n:
                raise self._fail(f"truncated header: {what} at offset {self.pos}")
        rel = self.pos - self._buf_start
        self.pos = end
        return self._buf[rel : rel + n]

    def scalar(self, vtype: int, what: str) -> object:
        fmt, size = _SCALARS[vtype]
        return struct.unpack(fmt, self.take(size, what))[0]

    def u32(self, what: str) -> int:
        return int(struct.unpack("<I", self.take(4, what))[0])

    def u64(self, what: str) -> int:
        return int(struct.unpack("<Q", self.take(8, what))[0])

    def string(self, what: str) -> str:
        n = self.u64(what)
        if n > MAX_STRING_BYTES:
            raise self._fail(f"absurd string length {n} in {what}")
        return self.take(n, what).decode("utf-8", errors="replace")

    def string_array(self, count: int, what: str) -> list[str]:
        """Fast path for the token and merge arrays (hundreds of thousands of items)."""
        self.need(count * 8, what)
        out: list[str] = []
        append = out.append
        unpack = struct.unpack_from
        for _ in range(count):
            # Refill through take() only when the item crosses the buffer's end.
            rel = self.pos - self._buf_start
            if rel + 8 <= len(self._buf):
                n = unpack("<Q", self._buf, rel)[0]
                if n > MAX_STRING_BYTES:
                    raise self._fail(f"absurd string length {n} in {what}")
                if rel + 8 + n <= len(self._buf):
                    self.need(8 + n, what)
                    append(self._buf[rel + 8 : rel + 8 + n].decode("utf-8", errors="replace"))
                    self.pos += 8 + n
                    continue
            append(self.string(what))
        return out


def _read_value(cur: _Cursor, vtype: int, key: str, depth: int = 0) -> object:
    if vtype == GGUFValueType.STRING:
        return cur.string(key)
    if vtype in _SCALARS:
        return cur.scalar(vtype, key)
    if vtype == GGUFValueType.ARRAY:
        item_type = cur.u32(key)
        count = cur.u64(key)
        if count > MAX_ARRAY_ITEMS:
            raise cur._fail(f"absurd array length {count} in {key}")
        # the fewest bytes each item takes: a file too short says so before the budget does
        smallest = 8 if item_type == GGUFValueType.STRING else (
            _SCALARS[item_type][1] if item_type in _SCALARS else 12)
        cur.need(count * smallest, key)
        cur.items += count
        if cur.items > MAX_TOTAL_ARRAY_ITEMS:
            raise cur._fail(f"the header's arrays hold more than {MAX_TOTAL_ARRAY_ITEMS:,} "
                            f"items in all (at {key})")
        if item_type == GGUFValueType.STRING:
            return cur.string_array(count, key)
        if item_type in _SCALARS:
            fmt, size = _SCALARS[item_type]
            raw = cur.take(size * count, key)
            return list(struct.unpack(f"<{count}{fmt[1]}", raw))
        if item_type == GGUFValueType.ARRAY:
            if depth + 1 >= MAX_ARRAY_DEPTH:
                raise cur._fail(f"arrays nested more than {MAX_ARRAY_DEPTH} deep in {key}")
            return [_read_value(cur, GGUFValueType.ARRAY, key, depth + 1) for _ in range(count)]
        raise cur._fail(f"unknown array item type {item_type} in {key}")
    raise cur._fail(f"unknown value type {vtype} in {key}")


def _check_vocabulary(name: str, tokens: object) -> None:
    """Two tokens with the same text: llama.cpp's vocabulary loader maps each text to one
    id and then asserts that no text was lost (``GGML_ASSERT(id_to_token.size() ==
    token_to_id.size())`` in llama-vocab.cpp), which aborts the process; refuse the file
    here instead. Empty texts are read as llama.cpp reads them (``[EMPTY_<id>]``); a
    pair whose text was not UTF-8 (read here with replacement characters, so it may be
    two different byte strings) is left to llama.cpp."""
    if not isinstance(tokens, list) or not tokens or not isinstance(tokens[0], str):
        return
    seen: dict[str, int] = {}
    for i, word in enumerate(tokens):
        text = word if isinstance(word, str) and word else f"[EMPTY_{i}]"
        j = seen.setdefault(text, i)
        if j != i and "\ufffd" not in text:
            raise GGUFError(name, f"the vocabulary holds the token text {display_text(text)!r} "
                            f"twice (ids {j} and {i}); llama.cpp cannot load it")


def read_header(source: ByteSource, *, with_tensors: bool = True) -> GGUFHeader:
    """Parse the header of ``source``; raise :class:`GGUFError` on anything wrong."""
    cur = _Cursor(source)
    if source.size is not None and source.size < 24:
        raise GGUFError(source.name, f"not a GGUF file (only {source.size} bytes)")
    magic = cur.take(4, "magic")
    if magic != GGUF_MAGIC:
        raise GGUFError(source.name, f"not a GGUF file (starts with {magic!r}, expected b'GGUF')")
    version = cur.u32("version")
    if version not in SUPPORTED_VERSIONS:
        raise GGUFError(source.name, f"unsupported GGUF version {version} (supported: 2, 3)")
    n_tensors = cur.u64("tensor count")
    n_kv = cur.u64("key/value count")
    if n_tensors > MAX_TENSOR_COUNT:
        raise GGUFError(source.name, f"absurd tensor count {n_tensors}")
    if n_kv > MAX_KV_COUNT:
        raise GGUFError(source.name, f"absurd key/value count {n_kv}")
    fields: dict[str, object] = {}
    for i in range(n_kv):
        key = cur.string(f"key #{i}")
        vtype = cur.u32(key)
        fields[key] = _read_value(cur, vtype, key)
    _check_vocabulary(source.name, fields.get("tokenizer.ggml.tokens"))
    tensors: list[TensorInfo] = []
    if with_tensors:
        for i in range(n_tensors):
            name = cur.string(f"tensor #{i} name")
            n_dims = cur.u32(name)
            if n_dims > MAX_DIMS:
                raise GGUFError(source.name, f"tensor {name} has absurd rank {n_dims}")
            shape = tuple(cur.u64(name) for _ in range(n_dims))
            ggml_type = cur.u32(name)
            offset = cur.u64(name)
            tensors.append(TensorInfo(name, shape, ggml_type, offset))
    return GGUFHeader(source.name, version, fields, tensors, cur.pos, source.size)
