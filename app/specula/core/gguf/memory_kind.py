"""What a model's memory is, read from its GGUF header: attention, recurrent or hybrid.

Why it matters to Specula: speculation cuts the rejected suffix of a draft out
of the target's memory. An attention KV cache cuts exactly at any position; a
recurrent state (Mamba, RWKV, gated delta net, short convolution) is one
running summary that cannot be cut back, so a rejected step costs a state
checkpoint restore and a replay of the accepted tokens. The fit estimate needs
the same facts: a recurrent state is a fixed size per sequence, whatever the
context length, and only attention layers grow with the context.

The rules follow llama.cpp as vendored by llama-cpp-python 0.3.36
(``llm_arch_is_recurrent`` / ``llm_arch_is_hybrid`` in src/llama-arch.cpp, each
architecture's ``load_arch_hparams`` for which layers are recurrent, and
``llama_hparams::n_embd_r`` / ``n_embd_s`` for the state sizes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum


class MemoryKind(str, Enum):
    ATTENTION = "attention"
    RECURRENT = "recurrent"
    HYBRID = "hybrid"


RECURRENT_ARCHS = frozenset({"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"})
HYBRID_ARCHS = frozenset({
    "jamba", "falcon-h1", "plamo2", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h",
    "nemotron_h_moe", "qwen3next", "kimi-linear", "bailingmoe3", "kimi-k3", "glm5-next",
    "qwen35", "qwen35moe", "qwen4exp", "deepseek4", "minimax-01",
})
# Architectures whose NextN layers llama.cpp can run as an MTP draft (an MTP graph in
# src/models/<arch>.cpp); other files may carry nextn layers llama.cpp only skips.
MTP_ARCHS = frozenset({
    "qwen35", "qwen35moe", "qwen3next", "glm4moe", "glm-dsa", "glm5-next", "deepseek2",
    "deepseek32", "deepseek4", "mimo2", "step35", "bailingmoe3", "cohere2moe", "hy-v3",
    "nemotron_h_moe",
})
# The qwen3.5 family marks every n-th layer as full attention when the file has no list.
_INTERVAL_ARCHS = frozenset({"qwen35", "qwen35moe", "qwen3next", "qwen4exp"})
STATE_BYTES = 4  # llama.cpp keeps recurrent states in f32 (GGML_TYPE_F32 for r and s)
MAX_LAYERS = 512
"""llama.cpp's ``LLAMA_MAX_LAYERS`` (src/llama-hparams.h): its per-layer arrays hold this
many and it refuses a larger block count. The per-layer lists here are sized by the
header's count, so a count beyond it is refused before they are built."""


def memory_kind(architecture: str | None) -> MemoryKind | None:
    """The memory llama.cpp builds for ``architecture`` (None when unknown)."""
    if not architecture:
        return None
    if architecture in RECURRENT_ARCHS:
        return MemoryKind.RECURRENT
    if architecture in HYBRID_ARCHS:
        return MemoryKind.HYBRID
    return MemoryKind.ATTENTION


@dataclass(frozen=True)
class MemoryShape:
    """Per-layer facts the header gives: which layers hold KV, which hold a state, its size."""

    attention_layers: int | None  # trunk layers with a KV cache
    recurrent_layers: int | None  # trunk layers with a recurrent state
    state_bytes_per_layer: int | None  # conv (r) + ssm (s) state of one sequence, one layer


Getter = Callable[[str], object]


def _int(v: object) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def _per_layer(value: object, n: int) -> list[int] | None:
    """A per-layer value as llama.cpp's ``get_key_or_arr`` reads it: one number for every
    layer, or a list of at least ``n``; None when absent or of the wrong kind."""
    if value is None:
        return None
    if isinstance(value, list):
        out = [_int(v) for v in value[:n]]
        return [v for v in out if v is not None] if len(out) == n and None not in out else None
    one = _int(value)
    return [one] * n if one is not None else None


def _recurrent_flags(arch: str, get: Getter, n_layer: int) -> list[bool] | None:
    """Which of the first ``n_layer`` (trunk) layers are recurrent."""
    if arch in RECURRENT_ARCHS:
        return [True] * n_layer
    if arch not in HYBRID_ARCHS:
        return [False] * n_layer
    if arch == "falcon-h1":
        return [True] * n_layer  # every layer has both an attention and an SSM part
    if arch in _INTERVAL_ARCHS:
        listed = get(f"{arch}.attention.recurrent_layers")
        if isinstance(listed, list) and len(listed) >= n_layer:
            return [bool(v) for v in listed[:n_layer]]
        interval = _int(get(f"{arch}.full_attention_interval")) or 4
        return [(i + 1) % interval != 0 for i in range(n_layer)]
    kv = _per_layer(get(f"{arch}.attention.head_count_kv"), n_layer)
    if kv is None:
        return None
    if arch.startswith("nemotron_h"):
        ff = _per_layer(get(f"{arch}.feed_forward_length"), n_layer) or [0] * n_layer
        return [k == 0 and f == 0 for k, f in zip(kv, ff, strict=True)]
    return [k == 0 for k in kv]


def _attention_flags(arch: str, get: Getter, n_layer: int, recr: list[bool]) -> list[bool]:
    if arch == "falcon-h1":
        return [True] * n_layer
    if arch.startswith("nemotron_h"):
        kv = _per_layer(get(f"{arch}.attention.head_count_kv"), n_layer) or [0] * n_layer
        ff = _per_layer(get(f"{arch}.feed_forward_length"), n_layer) or [0] * n_layer
        return [k > 0 and f == 0 for k, f in zip(kv, ff, strict=True)]
    return [not r for r in recr]


def state_bytes_per_layer(arch: str, get: Getter) -> int | None:
    """One sequence's recurrent state in one layer, as ``llama_hparams::n_embd_r() + n_embd_s()``
    floats; None when the header lacks what the size depends on."""
    n_embd = _int(get(f"{arch}.embedding_length"))

    def key(name: str) -> int:
        return _int(get(f"{arch}.{name}")) or 0

    if arch in ("rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"):
        head = key("wkv.head_size")
        if not n_embd or not head:
            return None
        shift = _int(get(f"{arch}.token_shift_count")) or 2
        return (shift * n_embd + n_embd * head) * STATE_BYTES
    l_cache = key("shortconv.l_cache")
    if l_cache:
        if not n_embd:
            return None
        r = n_embd * (l_cache - 1)
    else:
        d_conv, d_inner = key("ssm.conv_kernel"), key("ssm.inner_size")
        if not d_conv or not d_inner:
            return None
        r = (d_conv - 1) * (d_inner + 2 * key("ssm.group_count") * key("ssm.state_size"))
    s = key("ssm.state_size") * key("ssm.inner_size")
    return (r + s) * STATE_BYTES


def memory_shape(arch: str | None, get: Getter, n_layer: int | None) -> MemoryShape:
    """The :class:`MemoryShape` of a header (``get`` reads a key; ``n_layer``: trunk layers,
    at most :data:`MAX_LAYERS`: the caller checks the header's count before)."""
    if n_layer is not None and n_layer > MAX_LAYERS:
        raise ValueError(f"{n_layer} layers: more than llama.cpp's {MAX_LAYERS}")
    if not arch or not n_layer:
        return MemoryShape(None, None, None)
    recr = _recurrent_flags(arch, get, n_layer)
    if recr is None:
        return MemoryShape(None, None, None)
    attn = _attention_flags(arch, get, n_layer, recr)
    n_recr = sum(recr)
    per_layer = state_bytes_per_layer(arch, get) if n_recr else 0
    return MemoryShape(sum(attn), n_recr, per_layer)
