"""Values of the wrong kind and arrays nested deep: a GGUFError naming the key, nothing else.

Before: NaN or infinity in a context length or BOS id gave ValueError /
OverflowError tracebacks, text in the token types ValueError, and a 60 KB file
of nested arrays RecursionError, from every command.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from gguf import GGUFValueType as T

from specula.core.gguf.model_info import GGUFError, read_model_info
from specula.core.gguf.reader import MAX_ARRAY_DEPTH, BytesSource, read_header
from specula_tools.crafted_gguf import (
    Array,
    base_fields,
    header_bytes,
    nested_array,
    nested_array_bytes,
    with_field,
)

BAD_VALUES = [
    ("llama.context_length", T.FLOAT32, math.nan, "llama.context_length should be an integer"),
    ("llama.context_length", T.FLOAT64, math.inf, "llama.context_length should be an integer"),
    ("llama.context_length", T.FLOAT32, -math.inf, "should be an integer, found -inf"),
    ("llama.context_length", T.FLOAT32, 2048.5, "should be an integer, found 2048.5"),
    ("llama.context_length", T.STRING, "4096", "should be an integer, found '4096'"),
    ("tokenizer.ggml.bos_token_id", T.FLOAT32, math.nan, "bos_token_id should be an integer"),
    ("tokenizer.ggml.eos_token_id", T.FLOAT64, math.inf, "eos_token_id should be an integer"),
    ("tokenizer.ggml.bos_token_id", T.BOOL, True, "bos_token_id should be an integer"),
    ("tokenizer.ggml.token_type", T.ARRAY, Array(T.STRING, ["normal"] * 16),
     "token_type should be an integer, found 'normal'"),
    ("tokenizer.ggml.token_type", T.ARRAY, Array(T.FLOAT32, [math.nan] * 16),
     "token_type should be an integer, found nan"),
    ("tokenizer.ggml.token_type", T.UINT32, 1, "token_type should be a list of integers"),
    ("tokenizer.ggml.tokens", T.UINT32, 7, "tokens should be a list of token texts"),
    ("tokenizer.ggml.add_bos_token", T.FLOAT32, math.nan, "add_bos_token should be true or false"),
    ("llama.attention.head_count_kv", T.ARRAY, Array(T.FLOAT32, [math.inf, 2.0]),
     "head_count_kv should be an integer"),
    ("general.file_type", T.FLOAT64, math.nan, "general.file_type should be an integer"),
    ("general.architecture", T.UINT32, 5, "general.architecture should be text"),
]


@pytest.mark.parametrize(("key", "vtype", "value", "says"), BAD_VALUES,
                         ids=[f"{k}={v!r}" for k, _t, v, _s in BAD_VALUES])
def test_wrong_kinds_of_values_are_gguf_errors(key: str, vtype: T, value: object, says: str) -> None:
    data = header_bytes(with_field(base_fields(), key, vtype, value))
    with pytest.raises(GGUFError, match=says.replace(".", r"\.").replace("(", r"\(")) as err:
        read_model_info(BytesSource(data, "crafted.gguf"))
    assert str(err.value).startswith("crafted.gguf: ")


def test_whole_floats_are_accepted_as_counts() -> None:
    """Some writers store counts as floats; a finite whole one means what it says."""
    data = header_bytes(with_field(base_fields(), "llama.context_length", T.FLOAT32, 4096.0))
    assert read_model_info(BytesSource(data, "f.gguf")).context_length == 4096


def test_the_base_header_is_valid() -> None:
    info = read_model_info(BytesSource(header_bytes(base_fields()), "ok.gguf"))
    assert (info.context_length, info.vocab_size, info.bos_id, info.eos_id) == (2048, 16, 0, 2)


def test_arrays_nested_within_the_limit_are_read() -> None:
    data = header_bytes([("x", T.ARRAY, nested_array(MAX_ARRAY_DEPTH))])
    value = read_header(BytesSource(data)).fields["x"]
    for _ in range(MAX_ARRAY_DEPTH - 1):
        assert isinstance(value, list) and len(value) == 1
        value = value[0]
    assert value == []


@pytest.mark.parametrize("depth", [MAX_ARRAY_DEPTH + 1, 5_000, 100_000])
def test_arrays_nested_too_deep_are_refused(depth: int, tmp_path: Path) -> None:
    path = tmp_path / "nested.gguf"
    path.write_bytes(header_bytes([("x", T.ARRAY, None)], raw_values={"x": nested_array_bytes(depth)}))
    if depth == 5_000:
        assert path.stat().st_size < 64_000  # the 60 KB file
    with pytest.raises(GGUFError, match=f"nested more than {MAX_ARRAY_DEPTH} deep in x"):
        read_model_info(path)


def test_names_and_error_messages_are_display_safe() -> None:
    fields = with_field(base_fields(), "general.name", T.STRING, "evil\x1b]0;title\x07\x1b[2J")
    info = read_model_info(BytesSource(header_bytes(fields), "n.gguf"))
    assert info.name == "evil\\x1b]0;title\\x07\\x1b[2J"
    # A key name from the file, in an error message: escaped too.
    data = header_bytes([("bad\x1b[2Jkey", T.ARRAY, None)],
                        raw_values={"bad\x1b[2Jkey": b"\x4d\x00\x00\x00" + b"\0" * 8})
    with pytest.raises(GGUFError) as err:
        read_model_info(BytesSource(data, "k.gguf"))
    assert "\x1b" not in str(err.value) and "bad\\x1b[2Jkey" in str(err.value)
