"""A generated Qwen3.5-shaped hybrid with a real-size recurrent state, and its draft.

No real hybrid weights are reachable here, yet what keeping a hybrid exact costs
(kv.py: a checkpoint of the recurrent state before each verify, a restore and a
replay after a partial rejection) depends on the size of that state against the
time of a step. This writes a ``qwen35`` GGUF with the dimensions of a small
Qwen3.5 (n_embd 1024, gated delta net layers with 16 key and 16 value heads of
128, a 4-wide convolution, gated attention every 4th layer with 8 heads of 256
and 2 KV heads, FFN 3584) in F16, a few layers deep, random weights: each delta
net layer holds a 16 x 128 x 128 float state (1 MiB) per sequence, as the real
one does.

The draft is the target's first layers (at least 4: llama.cpp needs an attention layer) with the same embedding and output
matrices (the weights are drawn in one order, so its layers are the target's),
and every block's output projection is scaled down (``OUT_GAIN``): the next
token then depends mostly on the last one, which both see, so the draft agrees
with the target often, not always, as a real small draft does.

The tokenizer is the tiny models' (~300 tokens), so the output matrix is far
smaller than a real model's: a step is faster than the real one's and the
checkpoint's share of it larger (the figures are conservative).

    python -m specula_tools.hybrid_proxy OUT_DIR [N_LAYERS] [DRAFT_LAYERS]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gguf
import numpy as np

from specula_tools.tiny_models import TinySpec, add_tokenizer, write_out

N_EMBD = 1024
N_HEAD, N_HEAD_KV, HEAD_DIM = 8, 2, 256
N_FF = 3584
D_STATE, N_K_HEADS, N_V_HEADS, D_CONV = 128, 16, 16, 4
ATTENTION_EVERY = 4
OUT_GAIN = 0.1
LOGIT_SCALE = 0.6


def build(path: str | Path, n_layers: int = 8, *, seed: int = 3500) -> Path:
    """Write the proxy with ``n_layers`` blocks (every 4th is attention) at ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arch = "qwen35"
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"hybrid-proxy-{n_layers}L")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    n_vocab = add_tokenizer(w, TinySpec())

    def u32(key: str, v: int) -> None:
        w.add_uint32(f"{arch}.{key}", v)

    d = N_EMBD
    d_inner = D_STATE * N_V_HEADS
    conv_dim = 2 * D_STATE * N_K_HEADS + d_inner
    u32("context_length", 4096)
    u32("embedding_length", d)
    u32("block_count", n_layers)
    u32("feed_forward_length", N_FF)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    u32("attention.head_count", N_HEAD)
    u32("attention.head_count_kv", N_HEAD_KV)
    u32("attention.key_length", HEAD_DIM)
    u32("attention.value_length", HEAD_DIM)
    u32("rope.dimension_count", 64)
    w.add_array(f"{arch}.rope.dimension_sections", [11, 11, 10, 0])
    u32("full_attention_interval", ATTENTION_EVERY)
    u32("ssm.conv_kernel", D_CONV)
    u32("ssm.inner_size", d_inner)
    u32("ssm.state_size", D_STATE)
    u32("ssm.time_step_rank", N_V_HEADS)
    u32("ssm.group_count", N_K_HEADS)

    rng = np.random.default_rng(seed)

    def rand(name: str, shape: tuple[int, ...], scale: float, offset: float = 0.0,
             f16: bool = True) -> None:
        x = rng.standard_normal(shape).astype(np.float32) * scale + np.float32(offset)
        w.add_tensor(name, x.astype(np.float16) if f16 and len(shape) == 2 else x)

    def const(name: str, shape: tuple[int, ...], v: float) -> None:
        w.add_tensor(name, np.full(shape, v, dtype=np.float32))

    rand("token_embd.weight", (n_vocab, d), 1.0)
    rand("output.weight", (n_vocab, d), LOGIT_SCALE)
    const("output_norm.weight", (d,), 1.0)
    for i in range(n_layers):
        p = f"blk.{i}."
        const(p + "attn_norm.weight", (d,), 1.0)
        const(p + "post_attention_norm.weight", (d,), 1.0)
        if (i + 1) % ATTENTION_EVERY == 0:
            rand(p + "attn_q.weight", (2 * N_HEAD * HEAD_DIM, d), d**-0.5)  # query + output gate
            rand(p + "attn_k.weight", (N_HEAD_KV * HEAD_DIM, d), d**-0.5)
            rand(p + "attn_v.weight", (N_HEAD_KV * HEAD_DIM, d), d**-0.5)
            rand(p + "attn_output.weight", (d, N_HEAD * HEAD_DIM), OUT_GAIN * (N_HEAD * HEAD_DIM) ** -0.5)
            const(p + "attn_q_norm.weight", (HEAD_DIM,), 1.0)
            const(p + "attn_k_norm.weight", (HEAD_DIM,), 1.0)
        else:
            rand(p + "attn_qkv.weight", (conv_dim, d), d**-0.5)
            rand(p + "attn_gate.weight", (d_inner, d), d**-0.5)
            rand(p + "ssm_conv1d.weight", (conv_dim, D_CONV), D_CONV**-0.5, f16=False)
            rand(p + "ssm_dt.bias", (N_V_HEADS,), 0.1)
            rand(p + "ssm_a", (N_V_HEADS,), 0.2, offset=-1.0)
            rand(p + "ssm_beta.weight", (N_V_HEADS, d), d**-0.5)
            rand(p + "ssm_alpha.weight", (N_V_HEADS, d), d**-0.5)
            const(p + "ssm_norm.weight", (D_STATE,), 1.0)
            rand(p + "ssm_out.weight", (d, d_inner), OUT_GAIN * d_inner**-0.5)
        rand(p + "ffn_gate.weight", (N_FF, d), d**-0.5)
        rand(p + "ffn_up.weight", (N_FF, d), d**-0.5)
        rand(p + "ffn_down.weight", (d, N_FF), OUT_GAIN * N_FF**-0.5)
    return write_out(w, path)


def build_pair(folder: str | Path, n_layers: int = 12, draft_layers: int = 4) -> tuple[Path, Path]:
    """(target, draft): the draft is the target's first ``draft_layers`` blocks."""
    folder = Path(folder)
    return (build(folder / f"hybrid-proxy-{n_layers}L.gguf", n_layers),
            build(folder / f"hybrid-proxy-{draft_layers}L.gguf", draft_layers))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("folder", nargs="?", default="hybrid-proxy", help="where the GGUFs go")
    ap.add_argument("layers", nargs="?", type=int, default=12, help="the target's layers")
    ap.add_argument("draft_layers", nargs="?", type=int, default=4, help="the draft's layers")
    a = ap.parse_args()
    for p in build_pair(a.folder, a.layers, a.draft_layers):
        print(f"{p} ({p.stat().st_size / 2**20:.0f} MiB)")
