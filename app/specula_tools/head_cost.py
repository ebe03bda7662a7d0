"""What a drafted token costs with a real-size EAGLE-3 head, beside the target's own step
and a draft model's.

No trained head is reachable here, but a head's cost does not depend on its weights: this
writes a random EAGLE-3 head in F16 with the target's sizes (hidden size, heads, feed-forward
width: one decoder block, as trained EAGLE-3 heads are) and the target's vocabulary, opens
it beside the target (``ctx_other``: it borrows the target's token embeddings and output
matrix), and times single-token decodes of each: the target, the draft model, the head with
the target's full vocabulary and the head with its own 32k-token vocabulary (a ``d2t`` map,
as EAGLE-3 heads for Llama ship). The head's input rows are random (the target's layer inputs
are not read: a Qwen2 target's graph does not record them in this llama.cpp).

    python -m specula_tools.head_cost TARGET.gguf DRAFT.gguf [--threads N] [--steps N]

Figures on a shared machine are contended: compare them with each other, in one run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import gguf
import numpy as np

from specula.core.engine.native import heads as native
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import Model
from specula_tools.tiny_heads import HeadSpec, Tokenizer, build_head

PROMPT = 64  # tokens in the cache before the timed steps


def copy_tokenizer(source: Path) -> Tokenizer:
    """A tokenizer writer that copies ``source``'s vocabulary (a head carries its target's)."""
    reader = gguf.GGUFReader(str(source))

    def write(w: gguf.GGUFWriter) -> int:
        f = reader.fields
        tokens = f["tokenizer.ggml.tokens"].contents()
        w.add_tokenizer_model(f["tokenizer.ggml.model"].contents())
        if "tokenizer.ggml.pre" in f:
            w.add_tokenizer_pre(f["tokenizer.ggml.pre"].contents())
        w.add_token_list(tokens)
        w.add_token_types(f["tokenizer.ggml.token_type"].contents())
        if "tokenizer.ggml.merges" in f:
            w.add_token_merges(f["tokenizer.ggml.merges"].contents())
        for key, add in (("tokenizer.ggml.bos_token_id", w.add_bos_token_id),
                         ("tokenizer.ggml.eos_token_id", w.add_eos_token_id)):
            if key in f:
                add(int(f[key].contents()))
        return len(tokens)

    return write


def _sizes(target: Path) -> dict[str, int]:
    f = gguf.GGUFReader(str(target)).fields
    arch = f["general.architecture"].contents()

    def get(key: str) -> int:
        return int(f[f"{arch}.{key}"].contents())

    return {"n_vocab": len(f["tokenizer.ggml.tokens"].contents()), "n_embd": get("embedding_length"), "n_head": get("attention.head_count"),
            "n_head_kv": get("attention.head_count_kv"), "n_ff": get("feed_forward_length")}


def _median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def time_model(path: Path, threads: int, steps: int) -> float:
    """Median seconds of a one-token decode after a PROMPT-token prefill."""
    model = Model(path)
    ctx = Context(model, n_ctx=PROMPT + steps + 8, n_threads=threads)
    b = Batch(PROMPT)
    try:
        rng = np.random.default_rng(0)
        b.fill([int(t) for t in rng.integers(0, model.n_vocab, PROMPT)], 0)
        ctx.decode(b)
        out = []
        for i in range(steps):
            b.fill([int(rng.integers(0, model.n_vocab))], PROMPT + i)
            out.append(ctx.decode(b))
        return _median_ms(out)
    finally:
        b.close()
        ctx.close()
        model.close()


def time_head(target: Path, head: Path, threads: int, steps: int) -> tuple[float, float]:
    """Median seconds of the head's one-token decode and of its encoder on one row."""
    tmodel = Model(target)
    tctx = Context(tmodel, n_ctx=PROMPT + steps + 8, n_threads=threads)
    hmodel = Model(head)
    h = native.HeadContext(hmodel, tctx, n_batch=PROMPT, n_outputs_max=PROMPT)
    try:
        rng = np.random.default_rng(1)
        width = 3 * h.n_embd
        feats = rng.standard_normal((PROMPT, width), dtype=np.float32)
        g = h.encode(feats)
        toks = [int(t) for t in rng.integers(0, tmodel.n_vocab, PROMPT)]
        h.decode(toks, 1, g, outputs=0)
        dec, enc = [], []
        row = g[-1]
        for i in range(steps):
            t0 = time.perf_counter()
            h.encode(feats[i % PROMPT:i % PROMPT + 1])
            enc.append(time.perf_counter() - t0)
            dec.append(h.decode([int(rng.integers(0, tmodel.n_vocab))], PROMPT + 1 + i, row[None, :], outputs=1))
            row = h.row(-1)
        return _median_ms(dec), _median_ms(enc)
    finally:
        h.close()
        hmodel.close()
        tctx.close()
        tmodel.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", type=Path)
    ap.add_argument("draft", type=Path)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args(argv)
    sizes = _sizes(a.target)
    n_vocab = sizes.pop("n_vocab")
    d2t = min(32000, n_vocab // 2)
    tok = copy_tokenizer(a.target)
    with tempfile.TemporaryDirectory() as tmp:
        base = HeadSpec("eagle3", (2, 14, 27), target_hidden=sizes["n_embd"], f16=True, **sizes)
        full = build_head(Path(tmp) / "eagle3-full.gguf", base, tok)
        small = build_head(Path(tmp) / "eagle3-d2t.gguf",
                           HeadSpec("eagle3", (2, 14, 27), target_hidden=sizes["n_embd"], f16=True,
                                    draft_vocab=d2t, **sizes), tok)
        mb = {p.name: p.stat().st_size / 2**20 for p in (full, small)}
        rows = [("target, one token", time_model(a.target, a.threads, a.steps)),
                ("draft model, one token", time_model(a.draft, a.threads, a.steps))]
        dec, enc = time_head(a.target, full, a.threads, a.steps)
        rows += [(f"EAGLE-3 head, target's vocabulary ({mb[full.name]:.0f} MB F16), one token", dec),
                 ("EAGLE-3 head encoder, one row", enc)]
        dec, _ = time_head(a.target, small, a.threads, a.steps)
        rows.append((f"EAGLE-3 head, {d2t}-token d2t vocabulary ({mb[small.name]:.0f} MB F16), one token", dec))
    print(f"{a.steps} steps after {PROMPT} tokens, {a.threads} thread(s), median ms "
          f"(target {a.target.name}: {sizes})")
    for name, ms in rows:
        print(f"  {name:<62} {ms:8.2f}")


if __name__ == "__main__":
    main()
