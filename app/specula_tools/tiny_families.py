"""Tiny random-weight GGUFs of the model families people run beside llama.

Specula's exactness promise has to hold on recurrent and hybrid memory (the
state of a Mamba layer cannot be cut back token by token the way an attention
KV cache can), on mixture-of-experts routing and with MTP (NextN) layers. The
tests need a model of each family that llama.cpp loads in milliseconds; these
builders write one with the ``gguf`` package, a few hundred KB each, with the
same tokenizer as :mod:`specula_tools.tiny_models` (so the tiny llama draft and
every family here share a vocabulary).

Families (key -> llama.cpp architecture, memory):

* ``mamba`` -> ``mamba`` (recurrent: Mamba-1 layers only)
* ``mamba2`` -> ``mamba2`` (recurrent: Mamba-2 layers only)
* ``qwen35`` -> ``qwen35`` (hybrid: three gated delta net layers, one attention layer)
* ``granitehybrid`` -> ``granitehybrid`` (hybrid: Mamba-2 layers around one attention layer)
* ``lfm2`` -> ``lfm2`` (hybrid: short-convolution layers and attention layers)
* ``qwen3moe`` -> ``qwen3moe`` (attention; 4 experts, 2 used per token)
* ``qwen35-mtp`` -> ``qwen35`` with ``nextn_predict_layers = 1`` (the trunk of
  ``qwen35`` exactly, plus one NextN block: a built-in draft)

Every builder takes ``noise``: the draft of a family is the same file with
relative noise on every weight (``<family>-draft`` in :func:`build_families`),
so it agrees with the target often but not always, which is what exactness
tests need. The weights are drawn in one fixed order from ``seed`` and the noise
from a second generator, so a noisy copy perturbs exactly the target's weights.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gguf
import numpy as np

from specula_tools.tiny_models import CHATML_TEMPLATE, MERGE_WORDS, SPECIALS, _bpe_vocab

N_EMBD = 64
N_CTX = 2048
LOGIT_SCALE = 0.6  # as tiny_models: peaked enough that greedy is not a coin toss
DRAFT_NOISE = 0.05  # teacher-forced, the draft picks the target's token 57-93% of the time
DRAFT_NOISE_SEED = 99


# A block's projections back into the residual stream: their scale sets how far each
# block moves a token's representation away from its embedding.
_OUTPUT_PROJECTIONS = ("attn_output.weight", "ssm_out.weight", "ffn_down.weight",
                       "shortconv.out_proj.weight")


class _Writer:
    """One GGUF file in the making: header, tokenizer and seeded weights."""

    def __init__(self, path: Path, arch: str, name: str, seed: int, noise: float) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.arch = arch
        self.rng = np.random.default_rng(seed)
        self.noise_rng = np.random.default_rng(DRAFT_NOISE_SEED)
        self.noise = noise
        self.out_gain = 1.0  # scales every block's output projection (see build_qwen35_mtp)
        self.w = gguf.GGUFWriter(str(path), arch)
        self.w.add_name(name)
        self.w.add_file_type(gguf.LlamaFileType.ALL_F32)
        body, merges = _bpe_vocab(list(MERGE_WORDS))
        tokens = SPECIALS + body
        self.n_vocab = len(tokens)
        self.w.add_tokenizer_model("gpt2")
        self.w.add_tokenizer_pre("default")
        self.w.add_token_list(tokens)
        self.w.add_token_types([3] * len(SPECIALS) + [1] * len(body))
        self.w.add_token_merges(merges)
        self.w.add_bos_token_id(0)
        self.w.add_eos_token_id(2)
        self.w.add_pad_token_id(3)
        self.w.add_add_bos_token(True)
        self.w.add_add_eos_token(False)
        self.w.add_chat_template(CHATML_TEMPLATE)

    # -- header -----------------------------------------------------------------
    def u32(self, key: str, value: int) -> None:
        """``<arch>.<key>`` as uint32."""
        self.w.add_uint32(f"{self.arch}.{key}", value)

    def f32(self, key: str, value: float) -> None:
        self.w.add_float32(f"{self.arch}.{key}", value)

    def arr(self, key: str, values: list[int]) -> None:
        """``<arch>.<key>`` as an array of int32 (per-layer values, rope sections)."""
        self.w.add_array(f"{self.arch}.{key}", values)

    def common(self, n_layers: int, n_ff: int) -> None:
        self.u32("context_length", N_CTX)
        self.u32("embedding_length", N_EMBD)
        self.u32("block_count", n_layers)
        self.u32("feed_forward_length", n_ff)
        self.f32("attention.layer_norm_rms_epsilon", 1e-5)

    # -- tensors ----------------------------------------------------------------
    def rand(self, name: str, shape: tuple[int, ...], scale: float, offset: float = 0.0) -> None:
        """A random tensor (numpy shape: ggml's dimensions reversed) plus the draft's noise."""
        if name.endswith(_OUTPUT_PROJECTIONS):
            scale *= self.out_gain
        base = self.rng.standard_normal(shape).astype(np.float32) * scale
        if self.noise:
            base += self.noise_rng.standard_normal(shape).astype(np.float32) * scale * self.noise
        self.w.add_tensor(name, base + np.float32(offset))

    def const(self, name: str, shape: tuple[int, ...], value: float) -> None:
        """A constant tensor (norm weights): the same in target and draft."""
        self.w.add_tensor(name, np.full(shape, value, dtype=np.float32))

    def head(self) -> None:
        """Token embeddings and the output head, drawn first in every family."""
        self.rand("token_embd.weight", (self.n_vocab, N_EMBD), 1.0)
        self.rand("output.weight", (self.n_vocab, N_EMBD), LOGIT_SCALE)

    def ffn(self, p: str, n_ff: int, norm: str = "ffn_norm") -> None:
        d = N_EMBD
        if norm:
            self.const(p + norm + ".weight", (d,), 1.0)
        self.rand(p + "ffn_gate.weight", (n_ff, d), d**-0.5)
        self.rand(p + "ffn_up.weight", (n_ff, d), d**-0.5)
        self.rand(p + "ffn_down.weight", (d, n_ff), n_ff**-0.5)

    def attn(self, p: str, n_head: int, n_head_kv: int, head_dim: int, *, q_gate: bool = False) -> None:
        """Q (with Qwen3.5's output gate folded in when ``q_gate``), K, V, output."""
        d = N_EMBD
        q_rows = n_head * head_dim * (2 if q_gate else 1)
        self.rand(p + "attn_q.weight", (q_rows, d), d**-0.5)
        self.rand(p + "attn_k.weight", (n_head_kv * head_dim, d), d**-0.5)
        self.rand(p + "attn_v.weight", (n_head_kv * head_dim, d), d**-0.5)
        self.rand(p + "attn_output.weight", (d, n_head * head_dim), (n_head * head_dim) ** -0.5)

    def mamba2_mixer(self, p: str, d_inner: int, d_state: int, n_group: int, n_head: int, d_conv: int) -> None:
        """A Mamba-2 mixer as llama.cpp's mamba2 and granitehybrid load it."""
        d = N_EMBD
        conv_dim = d_inner + 2 * n_group * d_state
        d_in_proj = d_inner + conv_dim + n_head
        self.rand(p + "ssm_in.weight", (d_in_proj, d), d**-0.5)
        self.rand(p + "ssm_conv1d.weight", (conv_dim, d_conv), d_conv**-0.5)
        self.rand(p + "ssm_conv1d.bias", (conv_dim,), 0.1)
        self.rand(p + "ssm_dt.bias", (n_head,), 0.1, offset=-1.0)
        # A = -exp(A_log) is stored negated already: negative keeps the state decaying.
        self.rand(p + "ssm_a", (n_head, 1), 0.2, offset=-1.0)
        self.const(p + "ssm_d", (n_head, 1), 1.0)
        self.const(p + "ssm_norm.weight", (n_group, d_inner // n_group), 1.0)
        self.rand(p + "ssm_out.weight", (d, d_inner), d_inner**-0.5)

    def finish(self, output_norm: str = "output_norm") -> Path:
        self.const(output_norm + ".weight", (N_EMBD,), 1.0)
        self.w.write_header_to_file()
        self.w.write_kv_data_to_file()
        self.w.write_tensors_to_file()
        self.w.close()
        return self.path


def build_mamba(path: str | Path, seed: int = 2001, noise: float = 0.0, n_layers: int = 2) -> Path:
    """Mamba-1: recurrent memory only (conv state + SSM state per layer)."""
    d, d_inner, d_state, d_conv, dt_rank = N_EMBD, 2 * N_EMBD, 16, 4, 4
    t = _Writer(Path(path), "mamba", "tiny-mamba", seed, noise)
    t.common(n_layers, 0)
    t.u32("ssm.conv_kernel", d_conv)
    t.u32("ssm.inner_size", d_inner)
    t.u32("ssm.state_size", d_state)
    t.u32("ssm.time_step_rank", dt_rank)
    t.head()
    for i in range(n_layers):
        p = f"blk.{i}."
        t.const(p + "attn_norm.weight", (d,), 1.0)
        t.rand(p + "ssm_in.weight", (2 * d_inner, d), d**-0.5)
        t.rand(p + "ssm_conv1d.weight", (d_inner, d_conv), d_conv**-0.5)
        t.rand(p + "ssm_conv1d.bias", (d_inner,), 0.1)
        t.rand(p + "ssm_x.weight", (dt_rank + 2 * d_state, d_inner), d_inner**-0.5)
        t.rand(p + "ssm_dt.weight", (d_inner, dt_rank), dt_rank**-0.5)
        t.rand(p + "ssm_dt.bias", (d_inner,), 0.1, offset=-1.0)
        t.rand(p + "ssm_a", (d_inner, d_state), 0.2, offset=-1.0)
        t.const(p + "ssm_d", (d_inner,), 1.0)
        t.rand(p + "ssm_out.weight", (d, d_inner), d_inner**-0.5)
    return t.finish()


def build_mamba2(path: str | Path, seed: int = 2002, noise: float = 0.0, n_layers: int = 2) -> Path:
    """Mamba-2: recurrent memory only, multi-head SSM with groups."""
    d_inner, d_state, n_group, n_head, d_conv = 2 * N_EMBD, 16, 1, 8, 4
    t = _Writer(Path(path), "mamba2", "tiny-mamba2", seed, noise)
    t.common(n_layers, 0)
    t.u32("ssm.conv_kernel", d_conv)
    t.u32("ssm.inner_size", d_inner)
    t.u32("ssm.state_size", d_state)
    t.u32("ssm.time_step_rank", n_head)
    t.u32("ssm.group_count", n_group)
    t.head()
    for i in range(n_layers):
        p = f"blk.{i}."
        t.const(p + "attn_norm.weight", (N_EMBD,), 1.0)
        t.mamba2_mixer(p, d_inner, d_state, n_group, n_head, d_conv)
    return t.finish()


QWEN35_LAYERS = 4  # full_attention_interval 4: layers 0-2 gated delta net, layer 3 attention


def _qwen35(path: str | Path, name: str, seed: int, noise: float, nextn: int, mtp_align: float,
            out_gain: float = 1.0) -> Path:
    d, n_head, n_head_kv, head_dim, n_ff = N_EMBD, 4, 2, 16, 128
    d_state, n_k_heads, n_v_heads, d_conv = 16, 2, 4, 4
    d_inner = d_state * n_v_heads  # head_v_dim == state size, as llama.cpp's n_embd_s assumes
    conv_dim = 2 * d_state * n_k_heads + d_inner
    t = _Writer(Path(path), "qwen35", name, seed, noise)
    t.out_gain = out_gain
    t.common(QWEN35_LAYERS + nextn, n_ff)
    t.u32("attention.head_count", n_head)
    t.u32("attention.head_count_kv", n_head_kv)
    t.u32("attention.key_length", head_dim)
    t.u32("attention.value_length", head_dim)
    t.u32("rope.dimension_count", head_dim)
    t.arr("rope.dimension_sections", [3, 3, 2, 0])
    t.u32("full_attention_interval", 4)
    t.u32("ssm.conv_kernel", d_conv)
    t.u32("ssm.inner_size", d_inner)
    t.u32("ssm.state_size", d_state)
    t.u32("ssm.time_step_rank", n_v_heads)
    t.u32("ssm.group_count", n_k_heads)
    if nextn:
        t.u32("nextn_predict_layers", nextn)
    t.head()
    for i in range(QWEN35_LAYERS):
        p = f"blk.{i}."
        t.const(p + "attn_norm.weight", (d,), 1.0)
        t.const(p + "post_attention_norm.weight", (d,), 1.0)
        if (i + 1) % 4 == 0:
            t.attn(p, n_head, n_head_kv, head_dim, q_gate=True)
            t.const(p + "attn_q_norm.weight", (head_dim,), 1.0)
            t.const(p + "attn_k_norm.weight", (head_dim,), 1.0)
        else:
            t.rand(p + "attn_qkv.weight", (conv_dim, d), d**-0.5)
            t.rand(p + "attn_gate.weight", (d_inner, d), d**-0.5)
            t.rand(p + "ssm_conv1d.weight", (conv_dim, d_conv), d_conv**-0.5)
            t.rand(p + "ssm_dt.bias", (n_v_heads,), 0.1)
            t.rand(p + "ssm_a", (n_v_heads,), 0.2, offset=-1.0)
            t.rand(p + "ssm_beta.weight", (n_v_heads, d), d**-0.5)
            t.rand(p + "ssm_alpha.weight", (n_v_heads, d), d**-0.5)
            t.const(p + "ssm_norm.weight", (d_state,), 1.0)
            t.rand(p + "ssm_out.weight", (d, d_inner), d_inner**-0.5)
        t.ffn(p, n_ff, norm="")
    for i in range(QWEN35_LAYERS, QWEN35_LAYERS + nextn):
        # The NextN block: a full-attention Qwen3.5 block fed by eh_proj(concat(enorm(embedding
        # of the last token), hnorm(trunk's hidden row))). ``mtp_align`` puts a scaled identity
        # on the embedding half so the head predicts roughly what the trunk predicts after that
        # token (a random head would be accepted almost never).
        p = f"blk.{i}."
        t.const(p + "attn_norm.weight", (d,), 1.0)
        t.const(p + "post_attention_norm.weight", (d,), 1.0)
        t.attn(p, n_head, n_head_kv, head_dim, q_gate=True)
        t.const(p + "attn_q_norm.weight", (head_dim,), 1.0)
        t.const(p + "attn_k_norm.weight", (head_dim,), 1.0)
        t.ffn(p, n_ff, norm="")
        eh = t.rng.standard_normal((d, 2 * d)).astype(np.float32) * (2 * d) ** -0.5
        eh[:, :d] += np.eye(d, dtype=np.float32) * mtp_align
        if noise:
            eh += t.noise_rng.standard_normal(eh.shape).astype(np.float32) * (2 * d) ** -0.5 * noise
        t.w.add_tensor(p + "nextn.eh_proj.weight", eh)
        t.const(p + "nextn.enorm.weight", (d,), 1.0)
        t.const(p + "nextn.hnorm.weight", (d,), 1.0)
        t.const(p + "nextn.shared_head_norm.weight", (d,), 1.0)
    return t.finish()


def build_qwen35(path: str | Path, seed: int = 2003, noise: float = 0.0) -> Path:
    """Qwen3.5-style hybrid: gated delta net layers plus one gated attention layer."""
    return _qwen35(path, "tiny-qwen35", seed, noise, nextn=0, mtp_align=0.0)


def build_qwen35_mtp(path: str | Path, seed: int = 2003, noise: float = 0.0, mtp_align: float = 8.0,
                     out_gain: float = 0.3) -> Path:
    """:func:`build_qwen35`'s weights (same seed, same draw order) plus one NextN layer (MTP).

    A random NextN head would almost never guess what the trunk says next. Here the head
    passes the last token's embedding through (``mtp_align``) and every block's output
    projection is scaled by ``out_gain``, so that the next token depends mostly on the
    token before it, which the head can see: MTP drafts are accepted a fair share of the
    time and rejected the rest. ``out_gain=1`` gives exactly qwen35's trunk.
    """
    return _qwen35(path, "tiny-qwen35-mtp", seed, noise, nextn=1, mtp_align=mtp_align,
                   out_gain=out_gain)


GRANITE_KV_HEADS = [0, 0, 2, 0]  # n_head_kv 0 marks a Mamba-2 layer; layer 2 is attention


def build_granitehybrid(path: str | Path, seed: int = 2004, noise: float = 0.0) -> Path:
    """IBM Granite 4 style hybrid: Mamba-2 layers and an attention layer."""
    n_head, head_dim, n_ff = 4, 16, 128
    d_inner, d_state, n_group, n_ssm_head, d_conv = 2 * N_EMBD, 16, 1, 8, 4
    t = _Writer(Path(path), "granitehybrid", "tiny-granitehybrid", seed, noise)
    t.common(len(GRANITE_KV_HEADS), n_ff)
    t.u32("attention.head_count", n_head)
    t.arr("attention.head_count_kv", GRANITE_KV_HEADS)
    t.u32("rope.dimension_count", head_dim)
    t.u32("ssm.conv_kernel", d_conv)
    t.u32("ssm.inner_size", d_inner)
    t.u32("ssm.state_size", d_state)
    t.u32("ssm.time_step_rank", n_ssm_head)
    t.u32("ssm.group_count", n_group)
    t.head()
    for i, kv in enumerate(GRANITE_KV_HEADS):
        p = f"blk.{i}."
        t.const(p + "attn_norm.weight", (N_EMBD,), 1.0)
        if kv == 0:
            t.mamba2_mixer(p, d_inner, d_state, n_group, n_ssm_head, d_conv)
        else:
            t.attn(p, n_head, kv, head_dim)
        t.ffn(p, n_ff)
    return t.finish()


LFM2_KV_HEADS = [0, 0, 2, 0]  # n_head_kv 0 marks a short-convolution layer


def build_lfm2(path: str | Path, seed: int = 2005, noise: float = 0.0) -> Path:
    """LiquidAI LFM2 style hybrid: short-convolution layers and an attention layer."""
    d, n_head, head_dim, n_ff, l_cache = N_EMBD, 4, 16, 128, 3
    t = _Writer(Path(path), "lfm2", "tiny-lfm2", seed, noise)
    t.common(len(LFM2_KV_HEADS), n_ff)
    t.u32("attention.head_count", n_head)
    t.arr("attention.head_count_kv", LFM2_KV_HEADS)
    t.u32("rope.dimension_count", head_dim)
    t.u32("shortconv.l_cache", l_cache)
    t.head()
    for i, kv in enumerate(LFM2_KV_HEADS):
        p = f"blk.{i}."
        t.const(p + "attn_norm.weight", (d,), 1.0)
        if kv == 0:
            t.rand(p + "shortconv.conv.weight", (d, l_cache), l_cache**-0.5)
            t.rand(p + "shortconv.in_proj.weight", (3 * d, d), d**-0.5)
            t.rand(p + "shortconv.out_proj.weight", (d, d), d**-0.5)
        else:
            t.attn(p, n_head, kv, head_dim)
            t.const(p + "attn_q_norm.weight", (head_dim,), 1.0)
            t.const(p + "attn_k_norm.weight", (head_dim,), 1.0)
        t.ffn(p, n_ff)
    # LFM2's final norm is stored under the name "token_embd_norm" (llama.cpp reads it so).
    return t.finish(output_norm="token_embd_norm")


QWEN3MOE_EXPERTS = 4
QWEN3MOE_EXPERTS_USED = 2


def build_qwen3moe(path: str | Path, seed: int = 2006, noise: float = 0.0, n_layers: int = 2) -> Path:
    """Qwen3 mixture of experts: attention memory, 4 experts, 2 routed per token."""
    d, n_head, n_head_kv, head_dim, n_ff_exp = N_EMBD, 4, 2, 16, 32
    n_exp = QWEN3MOE_EXPERTS
    t = _Writer(Path(path), "qwen3moe", "tiny-qwen3moe", seed, noise)
    t.common(n_layers, n_ff_exp * QWEN3MOE_EXPERTS_USED)
    t.u32("attention.head_count", n_head)
    t.u32("attention.head_count_kv", n_head_kv)
    t.u32("rope.dimension_count", head_dim)
    t.u32("expert_count", n_exp)
    t.u32("expert_used_count", QWEN3MOE_EXPERTS_USED)
    t.u32("expert_feed_forward_length", n_ff_exp)
    t.head()
    for i in range(n_layers):
        p = f"blk.{i}."
        t.const(p + "attn_norm.weight", (d,), 1.0)
        t.attn(p, n_head, n_head_kv, head_dim)
        t.const(p + "attn_q_norm.weight", (head_dim,), 1.0)
        t.const(p + "attn_k_norm.weight", (head_dim,), 1.0)
        t.const(p + "ffn_norm.weight", (d,), 1.0)
        t.rand(p + "ffn_gate_inp.weight", (n_exp, d), d**-0.5)
        t.rand(p + "ffn_gate_exps.weight", (n_exp, n_ff_exp, d), d**-0.5)
        t.rand(p + "ffn_up_exps.weight", (n_exp, n_ff_exp, d), d**-0.5)
        t.rand(p + "ffn_down_exps.weight", (n_exp, d, n_ff_exp), n_ff_exp**-0.5)
    return t.finish()


Builder = Callable[..., Path]

# family key -> (builder, llama.cpp architecture, memory kind, MTP layers)
FAMILIES: dict[str, tuple[Builder, str, str, int]] = {
    "mamba": (build_mamba, "mamba", "recurrent", 0),
    "mamba2": (build_mamba2, "mamba2", "recurrent", 0),
    "qwen35": (build_qwen35, "qwen35", "hybrid", 0),
    "granitehybrid": (build_granitehybrid, "granitehybrid", "hybrid", 0),
    "lfm2": (build_lfm2, "lfm2", "hybrid", 0),
    "qwen3moe": (build_qwen3moe, "qwen3moe", "attention", 0),
    "qwen35-mtp": (build_qwen35_mtp, "qwen35", "hybrid", 1),
}


def build_families(folder: str | Path, draft_noise: float = DRAFT_NOISE) -> dict[str, Path]:
    """Build every family and its noisy copy into ``folder``.

    Returns ``<family>`` -> target path and ``<family>-draft`` -> the same
    architecture with ``draft_noise`` relative noise on every weight.
    """
    folder = Path(folder)
    out: dict[str, Path] = {}
    for key, (builder, _arch, _memory, _nextn) in FAMILIES.items():
        out[key] = builder(folder / f"tiny-{key}.gguf")
        out[f"{key}-draft"] = builder(folder / f"tiny-{key}-draft.gguf", noise=draft_noise)
    return out


if __name__ == "__main__":  # python -m specula_tools.tiny_families OUT_DIR
    import sys

    for k, p in build_families(sys.argv[1] if len(sys.argv) > 1 else "tiny-families").items():
        print(f"{k:22} {p} ({p.stat().st_size // 1024} KB)")
