"""Compare the target's KV cache after token-tree steps with replays of the same tokens.

Why: greedy replies under token trees differed from plain decoding on attention and
MoE targets well beyond a near-tie (issue 44). Either the cache the tree steps leave
is wrong (cells of rejected branches left in sequence 0, wrong positions, a cell in
the wrong sequences, values computed with the wrong mask), or it is right and only
its arithmetic differs (the order of the cells, the batch shapes). This tool answers
that cell by cell.

It runs one greedy reply in mode ``tree`` and, after every step, reads the target's
cache through llama.cpp's own state serialisation (``llama_state_seq_get_data``: per
cell its position and sequences, per layer its K and V rows, in cell order), then
decodes the same tokens on fresh contexts over the same model:

* ``chain``: each step's committed tokens as one batch (what a chain verify that
  accepted the same tokens leaves);
* ``plain``: one token per decode (plain decoding's cache).

For each step it reports the metadata checks (sequence 0 holds positions 0..n-1 once
each; no cell holds any other sequence; whether cell order follows position order)
and the largest K/V difference per position against each replay.

    python -m specula_tools.tree_cache_probe --target T.gguf --draft D.gguf \\
        --prompt "hello world" --max-tokens 600 --ctx 1024
"""

from __future__ import annotations

import argparse
import ctypes
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

import llama_cpp as L
import numpy as np

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done, StepEvent
from specula.core.engine.native.context import Context
from specula.core.engine.native.kv import KVCache
from specula.core.engine.sampling.rules import SamplingParams

_TYPES = {0: np.float32, 1: np.float16}  # GGML_TYPE_F32, GGML_TYPE_F16
# A K/V difference this large is no rounding of an F16 row (its last bits are ~1e-3 here):
# something upstream took another branch, such as an MoE router picking another expert.
JUMP = 0.05


@dataclass
class CacheDump:
    """One context's cache as llama.cpp serialises it: cells in cell order."""

    pos: list[int] = field(default_factory=list)
    seqs: list[tuple[int, ...]] = field(default_factory=list)
    k: list[np.ndarray] = field(default_factory=list)  # per layer: (cells, row)
    v: list[np.ndarray] = field(default_factory=list)

    def by_pos(self) -> dict[int, int]:
        return {p: i for i, p in enumerate(self.pos)}


def dump(ctx: Context, seq: int) -> CacheDump:
    """Sequence ``seq``'s cells (-1: every cell), parsed from llama_state_seq_get_data."""
    size = int(L.llama_state_seq_get_size(ctx.ptr, seq))
    buf = (ctypes.c_uint8 * size)()
    got = int(L.llama_state_seq_get_data(ctx.ptr, buf, size, seq))
    raw = bytes(buf)[:got]
    off = 0

    def take(fmt: str) -> tuple[int, ...]:
        nonlocal off
        vals = struct.unpack_from(fmt, raw, off)
        off += struct.calcsize(fmt)
        return vals

    out = CacheDump()
    take("<Ii")  # magic, seq id
    (n_stream,) = take("<I")
    for _ in range(n_stream):
        (n_cells,) = take("<I")
        if n_cells == 0:
            continue
        for _ in range(n_cells):
            p, n_seq = take("<iI")
            out.pos.append(p)
            out.seqs.append(take(f"<{n_seq}i") if n_seq else ())
        v_trans, n_layer = take("<II")
        if v_trans:
            raise SystemExit("a transposed V cache (flash attention off) is not parsed")
        for rows in (out.k, out.v):
            for _ in range(n_layer):
                t, row = take("<iQ")
                dt = _TYPES[t]
                n = n_cells * row
                arr = np.frombuffer(raw, dtype=dt, count=n // np.dtype(dt).itemsize, offset=off)
                off += n
                rows.append(arr.reshape(n_cells, -1).astype(np.float32))
    return out


@dataclass
class StepCheck:
    step: int
    n: int  # positions in sequence 0
    positions_ok: bool  # 0..n-1, each once
    foreign_cells: int  # cells holding a sequence other than 0
    out_of_order: int  # cells whose position is not the cell-order rank
    diff_chain: float  # largest |K or V| difference against the chain replay
    diff_plain: float
    chain_vs_plain: float
    first_pos: int  # first position that differs from the chain replay (-1: none)
    first_layer: int  # lowest layer where K or V at first_pos differs
    worst_at: tuple[int, int]  # (position, layer) of the largest difference from the chain replay


def compare(a: CacheDump, b: CacheDump) -> tuple[float, int, int, tuple[int, int]]:
    """(largest difference over positions and layers, first differing position, its
    lowest differing layer, (position, layer) of the largest difference); positions
    matched by value, not by cell order."""
    ia, ib = a.by_pos(), b.by_pos()
    common = sorted(set(ia) & set(ib))
    worst, where = 0.0, (-1, -1)
    first, first_layer = -1, -1
    for p in common:
        for layer, (ka, kb, va, vb) in enumerate(zip(a.k, b.k, a.v, b.v, strict=True)):
            d = max(float(np.abs(ka[ia[p]] - kb[ib[p]]).max()), float(np.abs(va[ia[p]] - vb[ib[p]]).max()))
            if d > 0 and first < 0:
                first, first_layer = p, layer
            if d > worst:
                worst, where = d, (p, layer)
    return worst, first, first_layer, where


class Replay:
    """A fresh context over the engine's target model, fed the same tokens."""

    def __init__(self, like: Context, per_token: bool) -> None:
        self.ctx = Context(like.model, n_ctx=like.n_ctx, n_threads=1, n_batch=like.n_batch,
                           n_seq_max=like.n_seq_max, kv_unified=True, n_outputs_max=64)
        self.kv = KVCache(self.ctx)
        self.per_token = per_token

    def feed(self, tokens: list[int]) -> None:
        if self.per_token:
            for t in tokens:
                self.kv.feed([t])
        else:
            self.kv.feed(tokens)


def probe(target: Path, draft: Path, prompt: str, max_tokens: int, n_ctx: int,
          draft_max: int, mode: Mode) -> list[StepCheck]:
    eng = Engine(EngineOptions(n_ctx=n_ctx, n_threads=1))
    eng.load_target(target)
    eng.load_draft(draft)
    gen = eng.generator
    assert gen is not None
    chain, plain = Replay(gen.ctx, False), Replay(gen.ctx, True)
    ids = eng.tokenize_chat([{"role": "user", "content": prompt}])
    checks: list[StepCheck] = []
    seen = 0
    params = SamplingParams(max_tokens=max_tokens)
    for ev in eng.generate_tokens(ids, params, SpecConfig(mode=mode, draft_max=draft_max)):
        if not isinstance(ev, StepEvent | Done):
            continue
        new = gen.kv.tokens[seen:]
        if len(gen.kv.tokens) < seen or gen.kv.tokens[:seen] != chain.kv.tokens:
            raise SystemExit("the cache dropped committed tokens; this probe follows one reply")
        seen = len(gen.kv.tokens)
        if not chain.kv.tokens and len(new) > 1:  # the prefill: chunks of n_batch, as the engine
            head, new = new[: len(ids) - 1], new[len(ids) - 1 :]
            chain.feed(head)
            plain.kv.feed(head)
        chain.feed(new)
        plain.feed(new)
        tree = dump(gen.ctx, 0)
        every = dump(gen.ctx, -1)
        ref_c, ref_p = dump(chain.ctx, 0), dump(plain.ctx, 0)
        n = len(gen.kv.tokens)
        d_c, first, layer, worst_at = compare(tree, ref_c)
        checks.append(StepCheck(
            step=len(checks), n=n,
            positions_ok=sorted(tree.pos) == list(range(n)),
            foreign_cells=sum(1 for s in every.seqs if tuple(s) != (0,)),
            out_of_order=sum(1 for i, p in enumerate(tree.pos) if p != i),
            diff_chain=d_c, diff_plain=compare(tree, ref_p)[0],
            chain_vs_plain=compare(ref_c, ref_p)[0], first_pos=first, first_layer=layer,
            worst_at=worst_at,
        ))
        if isinstance(ev, Done):
            break
    eng.close()
    return checks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", type=Path, required=True)
    ap.add_argument("--draft", type=Path, required=True)
    ap.add_argument("--prompt", default="hello world")
    ap.add_argument("--max-tokens", type=int, default=600)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--draft-max", type=int, default=4)
    ap.add_argument("--mode", default="tree", choices=["tree", "chain"])
    ap.add_argument("--every", type=int, default=0, help="print every N-th step (0: summary only)")
    a = ap.parse_args(argv)
    checks = probe(a.target, a.draft, a.prompt, a.max_tokens, a.ctx, a.draft_max, Mode(a.mode))
    for c in checks:
        if a.every and c.step % a.every == 0:
            print(c)
    bad_meta = [c for c in checks if not c.positions_ok or c.foreign_cells]
    print(f"steps {len(checks)}, cache {checks[-1].n} positions")
    print(f"metadata: positions 0..n-1 once each and no foreign cells after every step: {not bad_meta}")
    print(f"cells out of position order after the last step: {checks[-1].out_of_order}")
    first = next((c for c in checks if c.diff_chain > 0), None)
    print("first step differing from the chain replay:",
          "none" if first is None else f"step {first.step}, position {first.first_pos}, layer {first.first_layer}")
    jump = next((c for c in checks if c.diff_chain > JUMP), None)
    print(f"first step with a difference above {JUMP} from the chain replay:",
          "none" if jump is None else
          f"step {jump.step} (cache {jump.n}), at position {jump.worst_at[0]}, layer {jump.worst_at[1]}")
    for name, key in (("tree vs chain replay", "diff_chain"), ("tree vs plain replay", "diff_plain"),
                      ("chain vs plain replay", "chain_vs_plain")):
        vals = np.array([getattr(c, key) for c in checks])
        print(f"{name}: max |dK|,|dV| final {vals[-1]:.3g}, median over steps {np.median(vals):.3g}, "
              f"steps with any difference {int((vals > 0).sum())}/{len(vals)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
