"""What a model is, read from its header: memory kind, recurrent state, experts, MTP layers.

Expected values are written out from the builders' shapes and llama.cpp's formulas
(``llama_hparams::n_embd_r`` / ``n_embd_s``, f32 states), never taken from the code
under test; test_families_load.py checks the same numbers against llama.cpp itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specula.core.gguf.memory_kind import MemoryKind, memory_kind, memory_shape
from specula.core.gguf.model_info import GGUFError, read_model_info
from specula.core.gguf.reader import BytesSource

F32 = 4
# Recurrent state of one sequence, all layers, from the builders' shapes:
#   mamba:  2 layers x ((d_conv-1) * d_inner + d_state * d_inner) = 2 x (3*128 + 16*128)
#   mamba2: 2 layers x ((d_conv-1) * (d_inner + 2*groups*d_state) + d_state*d_inner)
#           = 2 x (3*(128 + 2*1*16) + 16*128)
#   qwen35: 3 gated delta net layers x (3*(64 + 2*2*16) + 16*64)
#   granitehybrid: 3 Mamba-2 layers x (3*(128 + 2*1*16) + 16*128)
#   lfm2: 3 short-convolution layers x n_embd * (l_cache - 1) = 3 x 64*2
STATE = {
    "mamba": 2 * (3 * 128 + 16 * 128) * F32,
    "mamba2": 2 * (3 * (128 + 2 * 16) + 16 * 128) * F32,
    "qwen35": 3 * (3 * (64 + 2 * 2 * 16) + 16 * 64) * F32,
    "granitehybrid": 3 * (3 * (128 + 2 * 16) + 16 * 128) * F32,
    "lfm2": 3 * (64 * 2) * F32,
    "qwen3moe": 0,
    "qwen35-mtp": 3 * (3 * (64 + 2 * 2 * 16) + 16 * 64) * F32,
}
# family -> (architecture, memory, block count, attention layers, recurrent layers,
#            experts, experts used, MTP layers)
EXPECTED = {
    "mamba": ("mamba", MemoryKind.RECURRENT, 2, 0, 2, 0, 0, 0),
    "mamba2": ("mamba2", MemoryKind.RECURRENT, 2, 0, 2, 0, 0, 0),
    "qwen35": ("qwen35", MemoryKind.HYBRID, 4, 1, 3, 0, 0, 0),
    "granitehybrid": ("granitehybrid", MemoryKind.HYBRID, 4, 1, 3, 0, 0, 0),
    "lfm2": ("lfm2", MemoryKind.HYBRID, 4, 1, 3, 0, 0, 0),
    "qwen3moe": ("qwen3moe", MemoryKind.ATTENTION, 2, 2, 0, 4, 2, 0),
    "qwen35-mtp": ("qwen35", MemoryKind.HYBRID, 5, 1, 3, 0, 0, 1),
}


@pytest.mark.parametrize("family", sorted(EXPECTED))
def test_header_says_what_each_family_is(families: dict[str, Path], family: str) -> None:
    arch, memory, blocks, attn, recr, experts, used, nextn = EXPECTED[family]
    for key in (family, f"{family}-draft"):
        info = read_model_info(families[key])
        assert info.architecture == arch and info.memory is memory
        assert info.n_layers == blocks and info.trunk_layers == blocks - nextn
        assert (info.attention_layers, info.recurrent_layers) == (attn, recr)
        assert (info.expert_count, info.expert_used_count, info.nextn_layers) == (experts, used, nextn)
        assert info.recurrent_state_bytes == STATE[family]
        assert info.to_dict()["memory"] == memory.value


def test_the_tiny_llama_is_attention(tiny: dict[str, Path]) -> None:
    info = read_model_info(tiny["target"])
    assert info.memory is MemoryKind.ATTENTION
    assert (info.attention_layers, info.recurrent_layers, info.recurrent_state_bytes) == (2, 0, 0)
    assert (info.nextn_layers, info.expert_count, info.expert_used_count) == (0, 0, 0)


@pytest.mark.parametrize(("arch", "kind"), [
    ("llama", MemoryKind.ATTENTION), ("qwen3moe", MemoryKind.ATTENTION),
    ("mamba", MemoryKind.RECURRENT), ("rwkv7", MemoryKind.RECURRENT),
    ("qwen35", MemoryKind.HYBRID), ("qwen3next", MemoryKind.HYBRID),
    ("nemotron_h", MemoryKind.HYBRID), ("falcon-h1", MemoryKind.HYBRID),
    ("jamba", MemoryKind.HYBRID), ("lfm2", MemoryKind.HYBRID),
])
def test_memory_kind_by_architecture(arch: str, kind: MemoryKind) -> None:
    # llm_arch_is_recurrent / llm_arch_is_hybrid in llama.cpp's src/llama-arch.cpp
    assert memory_kind(arch) is kind
    assert memory_kind(None) is None


def _getter(values: dict[str, object]):  # type: ignore[no-untyped-def]
    return values.get


def test_nemotron_h_has_three_kinds_of_layer() -> None:
    # Mamba layers: no KV heads and no FFN; attention layers: KV heads, no FFN; MLP layers: FFN.
    get = _getter({
        "nemotron_h.embedding_length": 64,
        "nemotron_h.attention.head_count_kv": [0, 2, 0, 0, 0, 0],
        "nemotron_h.feed_forward_length": [0, 0, 128, 0, 128, 0],
        "nemotron_h.ssm.conv_kernel": 4, "nemotron_h.ssm.inner_size": 128,
        "nemotron_h.ssm.state_size": 8, "nemotron_h.ssm.group_count": 2,
    })
    shape = memory_shape("nemotron_h", get, 6)
    assert (shape.attention_layers, shape.recurrent_layers) == (1, 3)
    assert shape.state_bytes_per_layer == (3 * (128 + 2 * 2 * 8) + 8 * 128) * F32


def test_qwen35_layer_list_and_interval() -> None:
    listed = _getter({"qwen35.attention.recurrent_layers": [1, 0, 1, 1, 0, 0],
                      "qwen35.ssm.conv_kernel": 4, "qwen35.ssm.inner_size": 32,
                      "qwen35.ssm.state_size": 16, "qwen35.ssm.group_count": 1})
    assert (memory_shape("qwen35", listed, 6).recurrent_layers, memory_shape("qwen35", listed, 6).attention_layers) == (3, 3)
    every_third = _getter({"qwen3next.full_attention_interval": 3, "qwen3next.ssm.conv_kernel": 4,
                           "qwen3next.ssm.inner_size": 32, "qwen3next.ssm.state_size": 16})
    shape = memory_shape("qwen3next", every_third, 9)  # layers 2, 5, 8 are attention
    assert (shape.attention_layers, shape.recurrent_layers) == (3, 6)
    default = memory_shape("qwen35moe", _getter({"qwen35moe.ssm.conv_kernel": 4,
                                                  "qwen35moe.ssm.inner_size": 8}), 8)
    assert (default.attention_layers, default.recurrent_layers) == (2, 6)  # interval 4


def test_falcon_h1_layers_hold_both() -> None:
    get = _getter({"falcon-h1.ssm.conv_kernel": 4, "falcon-h1.ssm.inner_size": 16,
                   "falcon-h1.ssm.state_size": 4, "falcon-h1.ssm.group_count": 1})
    shape = memory_shape("falcon-h1", get, 5)
    assert (shape.attention_layers, shape.recurrent_layers) == (5, 5)
    assert shape.state_bytes_per_layer == (3 * (16 + 2 * 4) + 4 * 16) * F32


def test_rwkv_state() -> None:
    # token shift (default 2) x n_embd for r, n_embd x head size for s
    get = _getter({"rwkv7.embedding_length": 64, "rwkv7.wkv.head_size": 16})
    assert memory_shape("rwkv7", get, 3).state_bytes_per_layer == (2 * 64 + 64 * 16) * F32
    get = _getter({"rwkv6.embedding_length": 64, "rwkv6.wkv.head_size": 16,
                   "rwkv6.token_shift_count": 1})
    assert memory_shape("rwkv6", get, 3).state_bytes_per_layer == (64 + 64 * 16) * F32


def test_unknown_shapes_stay_unknown() -> None:
    # A hybrid whose header lacks the per-layer KV heads: which layers recur is unknown.
    shape = memory_shape("granitehybrid", _getter({"granitehybrid.attention.head_count_kv": 4}), 4)
    assert (shape.attention_layers, shape.recurrent_layers) == (4, 0)
    shape = memory_shape("jamba", _getter({}), 4)
    assert (shape.attention_layers, shape.recurrent_layers, shape.state_bytes_per_layer) == (None, None, None)
    mamba = memory_shape("mamba", _getter({}), 2)  # no SSM sizes: the state size is unknown
    assert (mamba.recurrent_layers, mamba.state_bytes_per_layer) == (2, None)


def test_bad_nextn_count_is_a_clear_error(families: dict[str, Path]) -> None:
    data = bytearray(families["qwen35-mtp"].read_bytes())
    key = b"qwen35.nextn_predict_layers"
    at = data.index(key) + len(key) + 4  # value type (uint32), then the value
    data[at:at + 4] = (9).to_bytes(4, "little")  # more MTP layers than blocks
    with pytest.raises(GGUFError, match="nextn_predict_layers"):
        read_model_info(BytesSource(bytes(data), "bad.gguf"))
