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

One table-driven builder (:func:`build_tiny`) writes every family: :data:`PARTS`
lists each kind of block part's tensors as llama.cpp loads them, :data:`FAMILIES`
gives each family its sizes, header keys and blocks. It takes ``noise``: the
draft of a family is the same file with relative noise on every weight
(``<family>-draft`` in :func:`build_families`),
so it agrees with the target often but not always, which is what exactness
tests need. The weights are drawn in one fixed order from ``seed`` and the noise
from a second generator, so a noisy copy perturbs exactly the target's weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

import gguf
import numpy as np

from specula_tools.cli import folder_argument
from specula_tools.tiny_models import TinySpec, add_tokenizer, write_out

N_EMBD = 64
N_CTX = 2048
LOGIT_SCALE = 0.6  # as tiny_models: peaked enough that greedy is not a coin toss
DRAFT_NOISE = 0.05  # teacher-forced, the draft picks the target's token 57-93% of the time
DRAFT_NOISE_SEED = 99

# A block's projections back into the residual stream: their scale sets how far each
# block moves a token's representation away from its embedding.
_OUTPUT_PROJECTIONS = ("attn_output.weight", "ssm_out.weight", "ffn_down.weight", "shortconv.out_proj.weight")


class Init(NamedTuple):
    """How one tensor is filled: random (scaled by ``1/sqrt(fan-in)`` unless ``scale``
    says otherwise, around ``offset``) or the constant ``const`` (the same in the draft)."""

    scale: float | None = None
    offset: float = 0.0
    const: float | None = None
    align: bool = False  # the NextN input projection: a scaled identity on its embedding half


W, ONE, BIAS = Init(), Init(const=1.0), Init(0.1)
DT_BIAS = Init(0.1, offset=-1.0)
A_LOG = Init(0.2, offset=-1.0)  # A = -exp(A_log) is stored negated: negative keeps the state decaying

Tensor = tuple[str, tuple[str | int, ...], Init]  # name in the block, shape (numpy order: ggml's reversed)

# The tensors of each part of a block, in the order they are drawn, with the names and shapes
# llama.cpp's llama-model.cpp loads them under (llama-arch.cpp lists them per architecture).
PARTS: dict[str, tuple[Tensor, ...]] = {
    "norm": (("attn_norm.weight", ("d",), ONE),),
    "post_norm": (("post_attention_norm.weight", ("d",), ONE),),
    "attn": (("attn_q.weight", ("q_rows", "d"), W), ("attn_k.weight", ("kv_rows", "d"), W),
             ("attn_v.weight", ("kv_rows", "d"), W), ("attn_output.weight", ("d", "attn_rows"), W)),
    "qk_norm": (("attn_q_norm.weight", ("head_dim",), ONE), ("attn_k_norm.weight", ("head_dim",), ONE)),
    "ffn_norm": (("ffn_norm.weight", ("d",), ONE),),
    "ffn": (("ffn_gate.weight", ("n_ff", "d"), W), ("ffn_up.weight", ("n_ff", "d"), W),
            ("ffn_down.weight", ("d", "n_ff"), W)),
    "moe": (("ffn_gate_inp.weight", ("n_exp", "d"), W),
            ("ffn_gate_exps.weight", ("n_exp", "n_ff_exp", "d"), W),
            ("ffn_up_exps.weight", ("n_exp", "n_ff_exp", "d"), W),
            ("ffn_down_exps.weight", ("n_exp", "d", "n_ff_exp"), W)),
    "mamba": (("ssm_in.weight", ("in_proj", "d"), W), ("ssm_conv1d.weight", ("d_inner", "d_conv"), W),
              ("ssm_conv1d.bias", ("d_inner",), BIAS), ("ssm_x.weight", ("x_rows", "d_inner"), W),
              ("ssm_dt.weight", ("d_inner", "dt_rank"), W), ("ssm_dt.bias", ("d_inner",), DT_BIAS),
              ("ssm_a", ("d_inner", "d_state"), A_LOG), ("ssm_d", ("d_inner",), ONE),
              ("ssm_out.weight", ("d", "d_inner"), W)),
    "mamba2": (("ssm_in.weight", ("in_proj", "d"), W), ("ssm_conv1d.weight", ("conv_dim", "d_conv"), W),
               ("ssm_conv1d.bias", ("conv_dim",), BIAS), ("ssm_dt.bias", ("heads",), DT_BIAS),
               ("ssm_a", ("heads", 1), A_LOG), ("ssm_d", ("heads", 1), ONE),
               ("ssm_norm.weight", ("n_group", "group_size"), ONE), ("ssm_out.weight", ("d", "d_inner"), W)),
    "gated_delta_net": (("attn_qkv.weight", ("conv_dim", "d"), W), ("attn_gate.weight", ("d_inner", "d"), W),
                        ("ssm_conv1d.weight", ("conv_dim", "d_conv"), W), ("ssm_dt.bias", ("heads",), BIAS),
                        ("ssm_a", ("heads",), A_LOG), ("ssm_beta.weight", ("heads", "d"), W),
                        ("ssm_alpha.weight", ("heads", "d"), W), ("ssm_norm.weight", ("d_state",), ONE),
                        ("ssm_out.weight", ("d", "d_inner"), W)),
    "shortconv": (("shortconv.conv.weight", ("d", "l_cache"), W),
                  ("shortconv.in_proj.weight", ("in_proj", "d"), W),
                  ("shortconv.out_proj.weight", ("d", "d"), W)),
    # The NextN block's extra tensors: eh_proj(concat(enorm(embedding of the last token),
    # hnorm(trunk's hidden row))). The identity on the embedding half makes the head predict
    # roughly what the trunk predicts after that token (a random head almost never would).
    "nextn": (("nextn.eh_proj.weight", ("d", "2d"), Init(align=True)), ("nextn.enorm.weight", ("d",), ONE),
              ("nextn.hnorm.weight", ("d",), ONE), ("nextn.shared_head_norm.weight", ("d",), ONE)),
}


def _attn(n_head: int, n_head_kv: int, head_dim: int, q_gate: bool = False) -> dict[str, int]:
    """Attention sizes; ``q_gate`` folds Qwen3.5's output gate into Q."""
    return {"n_head": n_head, "n_head_kv": n_head_kv, "head_dim": head_dim, "kv_rows": n_head_kv * head_dim,
            "q_rows": n_head * head_dim * (2 if q_gate else 1), "attn_rows": n_head * head_dim}


def _mamba2(d_inner: int, d_state: int, n_group: int, heads: int, d_conv: int) -> dict[str, int]:
    """A Mamba-2 mixer's sizes, as llama.cpp's mamba2 and granitehybrid load it."""
    conv_dim = d_inner + 2 * n_group * d_state
    return {"d_inner": d_inner, "d_state": d_state, "n_group": n_group, "heads": heads, "d_conv": d_conv,
            "conv_dim": conv_dim, "in_proj": d_inner + conv_dim + heads, "group_size": d_inner // n_group}


_SSM_KEYS = {"ssm.conv_kernel": "d_conv", "ssm.inner_size": "d_inner", "ssm.state_size": "d_state",
             "ssm.time_step_rank": "heads", "ssm.group_count": "n_group"}
_ATTN_KEYS = {"attention.head_count": "n_head", "attention.head_count_kv": "n_head_kv",
              "rope.dimension_count": "head_dim"}


@dataclass(frozen=True)
class Family:
    """One tiny family: what llama.cpp should see, its sizes, header keys and blocks."""

    arch: str
    memory: str  # "recurrent", "hybrid" or "attention", as llama.cpp classifies the architecture
    seed: int
    layers: tuple[tuple[str, ...], ...]  # the PARTS of each block, in order
    dims: dict[str, int]
    keys: dict[str, str]  # ``<arch>.<key>`` -> the dim it holds
    header: dict[str, float | int | list[int]] = field(default_factory=dict)  # further literal values
    output_norm: str = "output_norm"
    mtp_align: float = 0.0
    out_gain: float = 1.0  # scales every block's output projection (see build_qwen35_mtp)

    @property
    def nextn(self) -> int:
        """How many NextN (MTP) blocks follow the trunk."""
        return sum("nextn" in parts for parts in self.layers)


def _kv_per_layer(layers: tuple[tuple[str, ...], ...], n_head_kv: int) -> dict[str, float | int | list[int]]:
    """The hybrids' per-block ``head_count_kv``: 0 marks a block without attention."""
    return {"attention.head_count_kv": [n_head_kv if "attn" in parts else 0 for parts in layers]}


_GDN = ("norm", "post_norm", "gated_delta_net", "ffn")
_GATED_ATTN = ("norm", "post_norm", "attn", "qk_norm", "ffn")
_QWEN35_DIMS = {"n_ff": 128, "d_state": 16, "heads": 4, "n_group": 2, "d_conv": 4, "d_inner": 64,
                "conv_dim": 2 * 16 * 2 + 64, **_attn(4, 2, 16, q_gate=True)}  # head_v_dim == state size
_QWEN35_KEYS = {"attention.head_count": "n_head", "attention.head_count_kv": "n_head_kv",
                "attention.key_length": "head_dim", "attention.value_length": "head_dim",
                "rope.dimension_count": "head_dim"}
_QWEN35 = Family("qwen35", "hybrid", 2003, (_GDN,) * 3 + (_GATED_ATTN,), _QWEN35_DIMS, _QWEN35_KEYS,
                 header={"rope.dimension_sections": [3, 3, 2, 0], "full_attention_interval": 4,
                         **{key: _QWEN35_DIMS[dim] for key, dim in _SSM_KEYS.items()}})
_MAMBA2_BLOCK, _ATTN_BLOCK = ("norm", "mamba2", "ffn_norm", "ffn"), ("norm", "attn", "ffn_norm", "ffn")
_GRANITE = (_MAMBA2_BLOCK,) * 2 + (_ATTN_BLOCK, _MAMBA2_BLOCK)
_CONV_BLOCK = ("norm", "shortconv", "ffn_norm", "ffn")
_QK_BLOCK = ("norm", "attn", "qk_norm", "ffn_norm", "ffn")
_LFM2 = (_CONV_BLOCK,) * 2 + (_QK_BLOCK, _CONV_BLOCK)

FAMILIES: dict[str, Family] = {
    "mamba": Family("mamba", "recurrent", 2001, (("norm", "mamba"),) * 2,
                    {"d_inner": 128, "d_state": 16, "d_conv": 4, "dt_rank": 4, "in_proj": 256,
                     "x_rows": 4 + 2 * 16},
                    {"ssm.conv_kernel": "d_conv", "ssm.inner_size": "d_inner", "ssm.state_size": "d_state",
                     "ssm.time_step_rank": "dt_rank"}),
    "mamba2": Family("mamba2", "recurrent", 2002, (("norm", "mamba2"),) * 2,
                     _mamba2(2 * N_EMBD, 16, 1, 8, 4), _SSM_KEYS),
    "qwen35": _QWEN35,
    "granitehybrid": Family("granitehybrid", "hybrid", 2004, _GRANITE,
                            {**_mamba2(2 * N_EMBD, 16, 1, 8, 4), **_attn(4, 2, 16), "n_ff": 128},
                            {**_ATTN_KEYS, **_SSM_KEYS}, header=_kv_per_layer(_GRANITE, 2)),
    # LFM2's final norm is stored under the name "token_embd_norm" (llama.cpp reads it so).
    "lfm2": Family("lfm2", "hybrid", 2005, _LFM2,
                   {**_attn(4, 2, 16), "n_ff": 128, "l_cache": 3, "in_proj": 3 * N_EMBD},
                   {**_ATTN_KEYS, "shortconv.l_cache": "l_cache"}, header=_kv_per_layer(_LFM2, 2),
                   output_norm="token_embd_norm"),
    "qwen3moe": Family("qwen3moe", "attention", 2006, ((*_QK_BLOCK[:-1], "moe"),) * 2,
                       {**_attn(4, 2, 16), "n_exp": 4, "n_used": 2, "n_ff_exp": 32, "n_ff": 64},
                       {**_ATTN_KEYS, "expert_count": "n_exp", "expert_used_count": "n_used",
                        "expert_feed_forward_length": "n_ff_exp"}),
    # qwen35's trunk (same seed, same draw order) plus one NextN block: a built-in draft.
    "qwen35-mtp": replace(_QWEN35, layers=(*_QWEN35.layers, (*_GATED_ATTN, "nextn")),
                          mtp_align=8.0, out_gain=0.3),
}


class _Writer:
    """One GGUF file in the making: header, tokenizer and seeded weights."""

    def __init__(self, path: Path, name: str, fam: Family, noise: float) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.fam, self.noise = path, fam, noise
        self.rng = np.random.default_rng(fam.seed)
        self.noise_rng = np.random.default_rng(DRAFT_NOISE_SEED)
        self.dims = {"d": N_EMBD, "2d": 2 * N_EMBD, **fam.dims}
        self.w = gguf.GGUFWriter(str(path), fam.arch)
        self.w.add_name(name)
        self.w.add_file_type(gguf.LlamaFileType.ALL_F32)
        self.n_vocab = add_tokenizer(self.w, TinySpec())

    def header(self) -> None:
        """``<arch>.<key>`` values: sizes as uint32, per-layer values as int32 arrays."""
        fam = self.fam
        values: dict[str, float | int | list[int]] = {
            "context_length": N_CTX, "embedding_length": N_EMBD, "block_count": len(fam.layers),
            "feed_forward_length": self.dims.get("n_ff", 0), "attention.layer_norm_rms_epsilon": 1e-5,
            **{key: self.dims[dim] for key, dim in fam.keys.items()}, **fam.header}
        if fam.nextn:
            values["nextn_predict_layers"] = fam.nextn
        for key, value in values.items():
            add = (self.w.add_array if isinstance(value, list) else
                   self.w.add_float32 if isinstance(value, float) else self.w.add_uint32)
            add(f"{fam.arch}.{key}", value)

    def tensor(self, name: str, shape: tuple[int, ...], init: Init) -> None:
        """A constant or a seeded random tensor, plus the draft's noise on the random ones."""
        if init.const is not None:
            self.w.add_tensor(name, np.full(shape, init.const, dtype=np.float32))
            return
        scale = shape[-1] ** -0.5 if init.scale is None else init.scale
        if name.endswith(_OUTPUT_PROJECTIONS):
            scale *= self.fam.out_gain
        base = self.rng.standard_normal(shape).astype(np.float32) * scale
        if init.align:
            base[:, : shape[0]] += np.eye(shape[0], dtype=np.float32) * self.fam.mtp_align
        if self.noise:
            base += self.noise_rng.standard_normal(shape).astype(np.float32) * scale * self.noise
        self.w.add_tensor(name, base + np.float32(init.offset))

    def write(self) -> Path:
        self.header()
        # Token embeddings and the output head are drawn first in every family.
        self.tensor("token_embd.weight", (self.n_vocab, N_EMBD), Init(1.0))
        self.tensor("output.weight", (self.n_vocab, N_EMBD), Init(LOGIT_SCALE))
        for i, parts in enumerate(self.fam.layers):
            for part in parts:
                for name, shape, init in PARTS[part]:
                    dims = tuple(self.dims[s] if isinstance(s, str) else s for s in shape)
                    self.tensor(f"blk.{i}.{name}", dims, init)
        self.tensor(self.fam.output_norm + ".weight", (N_EMBD,), ONE)
        return write_out(self.w, self.path)


def build_tiny(key: str, path: str | Path, noise: float = 0.0, **overrides: float) -> Path:
    """Write the tiny model of family ``key`` (a :data:`FAMILIES` key) at ``path``.

    ``noise`` is the draft's relative noise on every weight; ``overrides`` replace
    :class:`Family` fields (``seed``, ``mtp_align``, ``out_gain``).
    """
    fam = replace(FAMILIES[key], **overrides)  # type: ignore[arg-type]
    return _Writer(Path(path), f"tiny-{key}", fam, noise).write()


def build_qwen35_mtp(path: str | Path, noise: float = 0.0, **overrides: float) -> Path:
    """qwen35's weights (same seed, same draw order) plus one NextN layer (MTP).

    A random NextN head would almost never guess what the trunk says next. Here the head
    passes the last token's embedding through (``mtp_align``) and every block's output
    projection is scaled by ``out_gain``, so that the next token depends mostly on the
    token before it, which the head can see: MTP drafts are accepted a fair share of the
    time and rejected the rest. ``out_gain=1`` gives exactly qwen35's trunk.
    """
    return build_tiny("qwen35-mtp", path, noise, **overrides)


def build_families(folder: str | Path, draft_noise: float = DRAFT_NOISE) -> dict[str, Path]:
    """Build every family and its noisy copy into ``folder``.

    Returns ``<family>`` -> target path and ``<family>-draft`` -> the same
    architecture with ``draft_noise`` relative noise on every weight.
    """
    folder = Path(folder)
    out: dict[str, Path] = {}
    for key in FAMILIES:
        out[key] = build_tiny(key, folder / f"tiny-{key}.gguf")
        out[f"{key}-draft"] = build_tiny(key, folder / f"tiny-{key}-draft.gguf", noise=draft_noise)
    return out


if __name__ == "__main__":  # python -m specula_tools.tiny_families OUT_DIR
    for k, p in build_families(folder_argument(__doc__, "tiny-families", "where the GGUFs go") or "").items():
        print(f"{k:22} {p} ({p.stat().st_size // 1024} KB)")
