"""A header's layer count is checked before anything is sized by it (issue 46, defect 9).

Before: ``memory_kind`` built ``[False] * n_layer`` twice from ``llama.block_count``:
100,000,000 in a 500 KB file took 1.63 GB in ``specula info``, 4,294,967,295 a
MemoryError traceback, 2**63 an OverflowError traceback, from ``info``, the library
scan and the hub header reader alike. llama.cpp itself refuses more than
LLAMA_MAX_LAYERS (512) layers.
"""

from __future__ import annotations

import json
import struct
import tracemalloc
from pathlib import Path

import pytest
from gguf import GGUFValueType as T

from specula.cli import main
from specula.core.gguf.memory_kind import MAX_LAYERS
from specula.core.gguf.model_info import GGUFError, read_model_info
from specula.core.gguf.reader import MAX_TOTAL_ARRAY_ITEMS, BytesSource
from specula.core.library.scan import Library
from specula_tools.crafted_gguf import base_fields, header_bytes, with_field
from tests.fixtures.fake_hub import FakeHub

# llama.cpp's LLAMA_MAX_LAYERS, read from src/llama-hparams.h of the vendored llama.cpp
# (llama-cpp-python 0.3.36): the bound is llama.cpp's, not a number of ours.
LLAMA_MAX_LAYERS = 512

CLAIMS = [(T.UINT32, LLAMA_MAX_LAYERS + 1), (T.UINT32, 100_000_000), (T.UINT32, 2**32 - 1),
          (T.UINT64, 2**63), (T.INT32, -1)]


def _crafted(vtype: T, layers: int, arch: str = "llama") -> bytes:
    fields = [(k.replace("llama.", f"{arch}."), t, v) for k, t, v in base_fields()]
    fields = with_field(fields, "general.architecture", T.STRING, arch)
    return header_bytes(with_field(fields, f"{arch}.block_count", vtype, layers))


def test_the_bound_is_llama_cpps() -> None:
    assert MAX_LAYERS == LLAMA_MAX_LAYERS


@pytest.mark.parametrize("arch", ["llama", "mamba", "jamba", "qwen35", "nemotron_h"])
@pytest.mark.parametrize(("vtype", "layers"), CLAIMS, ids=[str(n) for _t, n in CLAIMS])
def test_a_claimed_layer_count_beyond_llama_cpps_is_refused(vtype: T, layers: int,
                                                           arch: str) -> None:
    data = _crafted(vtype, layers, arch)
    assert len(data) < 4096  # a tiny file: nothing in it could justify a large allocation
    tracemalloc.start()
    try:
        with pytest.raises(GGUFError, match=rf"{arch}\.block_count should be a layer count "
                                            rf"from 0 to 512 .*found {layers}"):
            read_model_info(BytesSource(data, "claims.gguf"))
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000  # bytes Python allocated while reading a 1 KB header


def test_the_largest_count_llama_cpp_loads_is_read() -> None:
    info = read_model_info(BytesSource(_crafted(T.UINT32, LLAMA_MAX_LAYERS), "deep.gguf"))
    assert info.n_layers == LLAMA_MAX_LAYERS and info.attention_layers == LLAMA_MAX_LAYERS


@pytest.mark.parametrize("layers", [100_000_000, 2**32 - 1])
def test_info_says_one_line(layers: int, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "claims.gguf"
    bad.write_bytes(_crafted(T.UINT32, layers))
    assert main(["info", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.startswith("specula: error: ") and err.count("\n") == 1
    assert "llama.block_count should be a layer count from 0 to 512" in err


def test_the_library_lists_it_as_unreadable(tmp_path: Path) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / "claims.gguf").write_bytes(_crafted(T.UINT64, 2**63))
    scan = Library(models, index_path=tmp_path / "index.json").scan()
    [model] = scan.models
    assert model.info is None and "block_count" in (model.error or "")


def test_the_hub_header_reader_refuses_it(fake_hub: FakeHub,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    fake_hub.add_repo("evil/Layers-GGUF", {"claims.gguf": _crafted(T.UINT32, 2**32 - 1)})
    assert main(["models", "files", "evil/Layers-GGUF", "--headers", "--json"]) == 0
    out, _err = capsys.readouterr()
    [model] = json.loads(out)["models"]
    assert "block_count should be a layer count" in model["header"]["error"]


def _arrays(*counts: int) -> bytes:
    """The base header plus arrays of ``counts`` zero bytes (built as raw bytes: fast)."""
    fields = [*base_fields(), *((f"x{i}", T.ARRAY, None) for i in range(len(counts)))]
    raw = {f"x{i}": struct.pack("<IQ", int(T.UINT8), n) + bytes(n) for i, n in enumerate(counts)}
    return header_bytes(fields, raw_values=raw)


def test_the_arrays_of_a_header_share_one_item_budget() -> None:
    """Each array item becomes a Python object: four 16M-item arrays of bytes in a 64 MB
    file took 760 MB. Real headers hold under 2M items in all (vocabularies of 262,144
    tokens with their scores, types and merges)."""
    half = MAX_TOTAL_ARRAY_ITEMS // 2
    base_items = 32  # the base header's 16 token texts and 16 token types
    info = read_model_info(BytesSource(_arrays(half, half - base_items), "edge.gguf"))
    assert info.vocab_size == 16
    with pytest.raises(GGUFError, match="arrays hold more than 8,388,608 items in all \\(at x1\\)"):
        read_model_info(BytesSource(_arrays(half, half - base_items + 1), "over.gguf"))
