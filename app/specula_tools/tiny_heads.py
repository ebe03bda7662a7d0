"""Tiny random draft heads (EAGLE-3, DFlash, DSpark) for the tiny targets.

Each is written with ``gguf`` in exactly the shapes llama.cpp's loader requires
(src/models/eagle3.cpp, src/models/dflash.cpp at llama.cpp 0c1e57098) and with the
metadata types it reads (UINT32 counts, INT32 layer-id arrays, BOOL flags: gguf has no
helpers for these keys, so they go through ``add_key_value``). A head carries the tiny
tokenizer (llama.cpp loads a head's vocabulary from its own file) but no token
embeddings: it borrows the target's through ``ctx_other``; a DFlash head borrows the
target's output matrix too.

Random weights propose poorly; exactness is what the tests check, and it holds whatever
a head proposes. The heads are a few hundred KB.

    python -m specula_tools.tiny_heads OUT_DIR   # the heads for every tiny target
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np

from specula_tools.cli import folder_argument
from specula_tools.tiny_models import TinySpec, add_tokenizer, write_out

_T = gguf.GGUFValueType

MASK_TOKEN = 3  # the tiny tokenizer's pad token: a special token inside the vocabulary


@dataclass(frozen=True)
class HeadSpec:
    """One head file: its kind, the target layers it reads and its sizes."""

    kind: str  # "eagle3", "dflash" or "dspark"
    layer_ids: tuple[int, ...]
    n_embd: int = 64  # the head's hidden size (a DFlash head's must be the target's)
    target_hidden: int = 64  # EAGLE-3: the target hidden size it reads
    n_head: int = 4
    n_head_kv: int = 2
    n_ff: int = 128
    block_size: int = 4  # DFlash / DSpark
    mask_token: int = MASK_TOKEN
    draft_vocab: int = 0  # EAGLE-3: a d2t map onto this many target ids (0: none)
    markov_rank: int = 8  # DSpark
    seed: int = 4343
    scale: float = 1.0
    f16: bool = False  # matrices in F16 (a real-size head), else F32


Tokenizer = Callable[[gguf.GGUFWriter], int]  # writes a vocabulary, returns its size


class _Head:
    def __init__(self, path: Path, spec: HeadSpec, tokenizer: Tokenizer | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        arch = "eagle3" if spec.kind == "eagle3" else "dflash"
        self.path, self.spec, self.arch = path, spec, arch
        self.rng = np.random.default_rng(spec.seed)
        self.w = gguf.GGUFWriter(str(path), arch)
        self.w.add_name(f"tiny-{spec.kind}-head")
        self.w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if spec.f16 else gguf.LlamaFileType.ALL_F32)
        self.n_vocab = tokenizer(self.w) if tokenizer else add_tokenizer(self.w, TinySpec())

    def key(self, name: str, value: int | bool | list[int]) -> None:
        """``<arch>.<name>`` in the exact type llama.cpp reads it as."""
        full = f"{self.arch}.{name}"
        if isinstance(value, bool):
            self.w.add_bool(full, value)
        elif isinstance(value, list):
            self.w.add_key_value(full, value, _T.ARRAY, sub_type=_T.INT32)
        else:
            self.w.add_uint32(full, value)

    def mat(self, name: str, rows: int, cols: int, scale: float | None = None) -> None:
        """A (rows, cols) numpy matrix: ggml's {cols, rows}, llama.cpp's {n_in, n_out}."""
        s = (cols ** -0.5 if scale is None else scale) * self.spec.scale
        m = self.rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(s)
        self.w.add_tensor(name, m.astype(np.float16) if self.spec.f16 else m)

    def ones(self, name: str, n: int) -> None:
        self.w.add_tensor(name, np.ones(n, dtype=np.float32))

    def header(self) -> None:
        s = self.spec
        self.key("context_length", 2048)
        self.key("embedding_length", s.n_embd)
        self.key("block_count", 1)
        self.key("feed_forward_length", s.n_ff)
        self.key("attention.head_count", s.n_head)
        self.key("attention.head_count_kv", s.n_head_kv)
        self.w.add_float32(f"{self.arch}.attention.layer_norm_rms_epsilon", 1e-5)
        self.key("rope.dimension_count", s.n_embd // s.n_head)
        self.key("target_layers", list(s.layer_ids))
        if s.kind == "eagle3":
            self.key("target_hidden_size", s.target_hidden)
        else:
            self.key("block_size", s.block_size)
            self.w.add_uint32("tokenizer.ggml.mask_token_id", s.mask_token)

    def write(self) -> Path:
        s = self.spec
        self.header()
        d, hd = s.n_embd, s.n_embd // s.n_head
        q, kv = s.n_head * hd, s.n_head_kv * hd
        n_ids = len(s.layer_ids)
        p = "blk.0."
        self.ones(p + "attn_norm.weight", d)
        self.ones(p + "ffn_norm.weight", d)
        self.mat(p + "ffn_gate.weight", s.n_ff, d)
        self.mat(p + "ffn_up.weight", s.n_ff, d)
        self.mat(p + "ffn_down.weight", d, s.n_ff)
        self.ones("output_norm.weight", d)
        if s.kind == "eagle3":
            self.mat("fc.weight", d, n_ids * s.target_hidden)
            self.ones(p + "attn_norm_2.weight", d)  # the hidden norm over the fused rows
            self.mat(p + "attn_q.weight", q, 2 * d)  # input: [token embedding; row] normed
            self.mat(p + "attn_k.weight", kv, 2 * d)
            self.mat(p + "attn_v.weight", kv, 2 * d)
            self.mat(p + "attn_output.weight", d, q)
            if s.draft_vocab:  # its own small vocabulary: its own output rows and the d2t map
                self.mat("output.weight", s.draft_vocab, d, 0.6)
                ids = np.sort(self.rng.choice(self.n_vocab, s.draft_vocab, replace=False))
                self.w.add_tensor("d2t", ids.astype(np.int64))
        else:
            self.mat("fc.weight", d, n_ids * d)
            self.ones("enc.output_norm.weight", d)
            self.mat(p + "attn_q.weight", q, d)
            self.mat(p + "attn_k.weight", kv, d)
            self.mat(p + "attn_v.weight", kv, d)
            self.mat(p + "attn_output.weight", d, q)
            self.ones(p + "attn_q_norm.weight", hd)
            self.ones(p + "attn_k_norm.weight", hd)
            if s.kind == "dspark":
                self.mat("markov_w1.weight", self.n_vocab, s.markov_rank, 1.0)
                self.mat("markov_w2.weight", self.n_vocab, s.markov_rank, 0.3)
        return write_out(self.w, self.path)


def build_head(path: str | Path, spec: HeadSpec, tokenizer: Tokenizer | None = None) -> Path:
    """Write the head ``spec`` describes at ``path`` (with the tiny tokenizer unless
    ``tokenizer`` writes another: a head carries its target's vocabulary)."""
    return _Head(Path(path), spec, tokenizer).write()


def layers_for(kind: str, n_layer: int) -> tuple[int, ...]:
    """Target layers a head of ``kind`` reads on a target of ``n_layer`` layers: low,
    middle and high for EAGLE-3 (three ids, as llama.cpp requires), low and high for DFlash."""
    if kind == "eagle3":
        return (0, n_layer // 2, n_layer - 1)
    return (0, n_layer - 1)


def spec_for(kind: str, n_layer: int, **changes: object) -> HeadSpec:
    """The head of ``kind`` for a target of ``n_layer`` layers, with ``changes`` (a misfit)."""
    changes.setdefault("layer_ids", layers_for(kind, n_layer))
    return HeadSpec(kind, **changes)  # type: ignore[arg-type]


# The tiny targets' layer counts (tiny_models.TARGET, tiny_families.FAMILIES).
TARGET_LAYERS = {"llama": 2, "qwen3moe": 2, "qwen35": 4, "lfm2": 4, "mamba": 2}


def build_heads(folder: str | Path) -> dict[str, Path]:
    """``<target>-<kind>`` -> a head for each tiny target and kind."""
    folder = Path(folder)
    out: dict[str, Path] = {}
    for target, n_layer in TARGET_LAYERS.items():
        for kind in ("eagle3", "dflash", "dspark"):
            out[f"{target}-{kind}"] = build_head(folder / f"tiny-{target}-{kind}.gguf", spec_for(kind, n_layer))
    return out


if __name__ == "__main__":  # python -m specula_tools.tiny_heads OUT_DIR
    for k, p in build_heads(folder_argument(__doc__, "tiny-heads", "where the heads go") or "").items():
        print(f"{k:22} {p} ({p.stat().st_size // 1024} KB)")
