"""Hand-built GGUF headers, byte by byte, for tests and the reliability report.

``gguf.GGUFWriter`` writes only well-formed files; the reader must also face
files no writer would produce (NaN where a count belongs, text in a list of
numbers, arrays nested thousands deep). :func:`header_bytes` encodes any
key/value list, typed explicitly, so that a test can build exactly the damage
it means. :func:`base_fields` is a minimal, valid llama-architecture header to
damage one field at a time.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from gguf import GGUFValueType

_FORMATS: dict[GGUFValueType, str] = {
    GGUFValueType.UINT8: "<B", GGUFValueType.INT8: "<b", GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h", GGUFValueType.UINT32: "<I", GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f", GGUFValueType.BOOL: "<?", GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q", GGUFValueType.FLOAT64: "<d",
}


@dataclass(frozen=True)
class Array:
    """A GGUF array value: its item type and items (items may be Arrays)."""

    item_type: GGUFValueType
    items: Sequence[object]


def _string(text: str) -> bytes:
    raw = text.encode("utf-8")
    return struct.pack("<Q", len(raw)) + raw


def encode_value(vtype: GGUFValueType, value: object) -> bytes:
    """The bytes of one value of type ``vtype`` (without the type tag)."""
    if vtype is GGUFValueType.STRING:
        assert isinstance(value, str)
        return _string(value)
    if vtype is GGUFValueType.ARRAY:
        assert isinstance(value, Array)
        body = b"".join(encode_value(value.item_type, v) for v in value.items)
        return struct.pack("<IQ", int(value.item_type), len(value.items)) + body
    return struct.pack(_FORMATS[vtype], value)


def nested_array(depth: int) -> Array:
    """An array holding an array holding ... ``depth`` levels, the innermost empty."""
    inner = Array(GGUFValueType.UINT8, [])
    for _ in range(depth - 1):
        inner = Array(GGUFValueType.ARRAY, [inner])
    return inner


def nested_array_bytes(depth: int) -> bytes:
    """The same as ``encode_value(ARRAY, nested_array(depth))``, without recursion."""
    level = struct.pack("<IQ", int(GGUFValueType.ARRAY), 1)
    return level * (depth - 1) + struct.pack("<IQ", int(GGUFValueType.UINT8), 0)


Field = tuple[str, GGUFValueType, object]


def header_bytes(fields: Sequence[Field], *, version: int = 3, n_tensors: int = 0,
                 raw_values: dict[str, bytes] | None = None) -> bytes:
    """A GGUF header with ``fields`` (and no tensor infos unless the caller appends them).

    ``raw_values`` gives pre-encoded value bytes for some keys (see
    :func:`nested_array_bytes`).
    """
    raw_values = raw_values or {}
    out = [b"GGUF", struct.pack("<IQQ", version, n_tensors, len(fields))]
    for key, vtype, value in fields:
        out.append(_string(key) + struct.pack("<I", int(vtype)))
        out.append(raw_values[key] if key in raw_values else encode_value(vtype, value))
    return b"".join(out)


def base_fields(n_vocab: int = 16) -> list[Field]:
    """A minimal valid llama-architecture header: names, sizes and a tiny tokenizer."""
    t = GGUFValueType
    return [
        ("general.architecture", t.STRING, "llama"),
        ("general.name", t.STRING, "crafted"),
        ("llama.context_length", t.UINT32, 2048),
        ("llama.embedding_length", t.UINT32, 64),
        ("llama.block_count", t.UINT32, 2),
        ("llama.attention.head_count", t.UINT32, 4),
        ("llama.attention.head_count_kv", t.UINT32, 2),
        ("tokenizer.ggml.model", t.STRING, "gpt2"),
        ("tokenizer.ggml.tokens", t.ARRAY, Array(t.STRING, [f"tok{i}" for i in range(n_vocab)])),
        ("tokenizer.ggml.token_type", t.ARRAY, Array(t.INT32, [1] * n_vocab)),
        ("tokenizer.ggml.bos_token_id", t.UINT32, 0),
        ("tokenizer.ggml.eos_token_id", t.UINT32, 2),
    ]


def with_field(fields: Sequence[Field], key: str, vtype: GGUFValueType, value: object) -> list[Field]:
    """``fields`` with ``key`` replaced (or appended)."""
    out = [f for f in fields if f[0] != key]
    out.append((key, vtype, value))
    return out


def tensor_info_bytes(name: str, shape: Sequence[int], ggml_type: int, offset: int) -> bytes:
    """One tensor info entry (it follows the key/values in a header)."""
    return (_string(name) + struct.pack("<I", len(shape)) + b"".join(struct.pack("<Q", d) for d in shape)
            + struct.pack("<IQ", ggml_type, offset))


def small_model_header() -> bytes:
    """:func:`base_fields` plus two F32 tensor infos: every part of a header, in 1 KB."""
    tensors = tensor_info_bytes("token_embd.weight", (64, 16), 0, 0) + tensor_info_bytes(
        "output.weight", (64, 16), 0, 4096)
    return header_bytes(base_fields(), n_tensors=2) + tensors


# Where a mutation lands: a position in 1/4096ths of the data, so that one list of
# mutations means the same on headers of any length.
POSITIONS = range(4096)
BOUNDARIES = (0, 1, 2, 7, 8, 9, 12, 13, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63, 2**64 - 1)
Mutation = tuple[str, int, object]  # (flip | u64 | u32 | cut | insert, position, argument)


def mutate(data: bytes, ops: Sequence[Mutation]) -> bytes:
    """``data`` with each mutation applied in turn: XOR a byte, write a 64- or 32-bit value
    (boundary counts and lengths), cut the rest off, or insert bytes."""
    buf = bytearray(data)
    for kind, pos, arg in ops:
        if not buf:
            break
        at = pos * len(buf) // len(POSITIONS)
        if kind == "flip":
            assert isinstance(arg, int)
            buf[at] ^= arg
        elif kind == "u64":
            assert isinstance(arg, int)
            buf[at : at + 8] = struct.pack("<Q", arg)
        elif kind == "u32":
            assert isinstance(arg, int)
            buf[at : at + 4] = struct.pack("<I", arg)
        elif kind == "cut":
            del buf[at:]
        else:
            assert isinstance(arg, bytes)
            buf[at:at] = arg
    return bytes(buf)


def random_mutations(rng: random.Random, max_ops: int = 6) -> list[Mutation]:
    """A list of 1..max_ops mutations drawn from ``rng`` (the report's deterministic fuzz)."""
    ops: list[Mutation] = []
    for _ in range(rng.randint(1, max_ops)):
        kind = rng.choice(("flip", "u64", "u32", "cut", "insert"))
        pos = rng.randrange(len(POSITIONS))
        arg: object
        if kind == "flip":
            arg = rng.randint(1, 255)
        elif kind == "u64":
            arg = rng.choice(BOUNDARIES)
        elif kind == "u32":
            arg = rng.choice(BOUNDARIES[:11])
        elif kind == "insert":
            arg = rng.randbytes(rng.randint(1, 16))
        else:
            arg = 0
        ops.append((kind, pos, arg))
    return ops
