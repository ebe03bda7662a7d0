"""The header reader on good files and on every kind of bad one."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from specula.core.gguf.model_info import GGUFError, quantization_from_name, read_model_info
from specula.core.gguf.reader import BytesSource, read_header


def test_reads_tiny_target(tiny: dict[str, Path]) -> None:
    info = read_model_info(tiny["target"])
    assert info.architecture == "llama"
    assert info.name == "tiny-target"
    assert info.quantization == "F32"
    assert info.context_length == 2048
    assert info.n_layers == 2 and info.n_embd == 64
    assert info.n_head == 4 and info.n_head_kv == 2 and info.head_dim == 16
    assert info.tokenizer_model == "gpt2" and info.tokenizer_pre == "default"
    assert info.vocab_size == 398
    assert (info.bos_id, info.eos_id, info.add_bos, info.add_eos) == (0, 2, True, False)
    assert info.has_chat_template and "im_start" in (info.chat_template or "")
    assert info.parameter_count and 100_000 < info.parameter_count < 200_000
    assert info.file_size == tiny["target"].stat().st_size
    assert len(info.tokenizer_fingerprint or "") == 16


def test_fingerprint_same_for_same_tokenizer(tiny: dict[str, Path]) -> None:
    t, d, o = (read_model_info(tiny[k]) for k in ("target", "draft", "other"))
    assert t.tokenizer_fingerprint == d.tokenizer_fingerprint
    assert t.tokenizer_fingerprint != o.tokenizer_fingerprint
    for key in ("token_text", "bos_id", "vocab_size"):
        assert read_model_info(tiny[key]).tokenizer_fingerprint != t.tokenizer_fingerprint


def test_reads_from_byte_prefix(tiny: dict[str, Path]) -> None:
    """The first bytes of a file (as a range request would fetch) are enough."""
    data = tiny["target"].read_bytes()
    header = read_header(BytesSource(data, "remote"))
    prefix = data[: header.header_bytes]
    info = read_model_info(BytesSource(prefix, "remote.gguf", size=len(data)))
    assert info.tokenizer_fingerprint == read_model_info(tiny["target"]).tokenizer_fingerprint
    assert info.file_size == len(data)


def test_quantization_from_file_names() -> None:
    assert quantization_from_name("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf") == "Q4_K_M"
    assert quantization_from_name("Model-IQ3_XXS.gguf") == "IQ3_XXS"
    assert quantization_from_name("model-f16-00001-of-00002.gguf") == "F16"
    assert quantization_from_name("model.gguf") is None


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"PK\x03\x04" + b"\0" * 40, "not a GGUF file"),
        (b"GGUF", "not a GGUF file"),
        (b"GGUF" + struct.pack("<IQQ", 99, 0, 0), "unsupported GGUF version 99"),
        (b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 0), "absurd tensor count"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 40), "absurd key/value count"),
        # one key whose name claims 2**60 bytes
        (b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 1 << 60), "absurd string length"),
        # a string array claiming more items than the file could hold
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"a"
         + struct.pack("<IIQ", 9, 8, 10_000_000), "truncated header"),
        # an array claiming 2**40 items
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"a"
         + struct.pack("<IIQ", 9, 4, 1 << 40), "absurd array length"),
        # an unknown value type
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"a"
         + struct.pack("<I", 77) + b"\0" * 16, "unknown value type 77"),
    ],
)
def test_bad_files_give_clear_errors(tmp_path: Path, data: bytes, problem: str) -> None:
    path = _write(tmp_path, "bad.gguf", data)
    with pytest.raises(GGUFError) as err:
        read_model_info(path)
    assert problem in str(err.value)
    assert str(path) in str(err.value)


def test_truncated_real_file(tiny: dict[str, Path], tmp_path: Path) -> None:
    data = tiny["target"].read_bytes()
    for cut in (30, 200, 3000, 9000):
        path = _write(tmp_path, f"cut{cut}.gguf", data[:cut])
        with pytest.raises(GGUFError, match="truncated header"):
            read_model_info(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GGUFError, match="cannot open"):
        read_model_info(tmp_path / "nope.gguf")
