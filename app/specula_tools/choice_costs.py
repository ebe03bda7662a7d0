"""Two measurements behind the sampled choice's design, on the 152k-vocabulary proxy.

1. The coupled (Gumbel-max) choice among n candidates, right after a decode: the array
   path (numpy) against the list path (Python integers and floats), for n from 2 to
   40. Where the lines cross is ``sampling.SMALL_CHOICE``.
2. llama.cpp's own greedy sampler run inside the graph (backend sampling,
   ``llama_set_sampler``) against the host's argmax of the logits row: the decode's
   time and the host's time per token, and whether the tokens agree.
3. The argmax of the read-only row ``Context.logits`` hands out: numpy's own (which copies
   a read-only array first) against ``topk.argmax``, right after a decode and again hot.

    python -m specula_tools.choice_costs [FOLDER]
"""

from __future__ import annotations

import statistics
import time

import llama_cpp as L
import numpy as np

from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import Model
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk
from specula_tools.cli import folder_argument
from specula_tools.vocab_proxy import DEFAULT_FOLDER, build_proxy

SIZES = (2, 6, 12, 20, 28, 32, 40)


def choice_paths(model: Model, rounds: int = 60) -> None:
    ctx = Context(model, n_ctx=2048, n_threads=1)
    batch = Batch(8, 1)
    rng = np.random.default_rng(0)
    cases = {n: (np.sort(rng.choice(150_000, n, replace=False)).astype(np.int64),
                 rng.dirichlet(np.ones(n))) for n in SIZES}
    keys = [(n, path) for n in SIZES for path in ("array", "list")]
    cold: dict[tuple[int, str], list[float]] = {k: [] for k in keys}
    for i in range(rounds * len(keys)):
        batch.fill([5 + i % 11], i % 1500, outputs="last")
        ctx.decode(batch)
        ctx.logits(-1).argmax()  # what a step does to the row before its choice
        n, path = keys[i % len(keys)]
        ids, p = cases[n]
        t0 = time.perf_counter()
        if path == "array":
            g = sampling.gumbel_noise(7, i, ids)
            int(ids[int((np.log(np.maximum(p, sampling._TINY)) + g).argmax())])
        else:
            sampling._choose_lists(ids.tolist(), p.tolist(), 7, i)
        cold[(n, path)].append(time.perf_counter() - t0)
    ctx.close()
    print("coupled choice right after a decode (us, median): candidates, array path, list path")
    for n in SIZES:
        a, b = (statistics.median(cold[(n, w)]) * 1e6 for w in ("array", "list"))
        print(f"  {n:>3} {a:8.1f} {b:8.1f}")


def backend_greedy(model: Model, tokens: int = 400) -> None:
    print("greedy: host argmax against llama.cpp's backend greedy sampler (us per token, median)")
    for _ in range(2):
        runs = {}
        for backend in (False, True):
            ctx = Context(model, n_ctx=2048, n_threads=1)
            batch = Batch(8, 1)
            chain = None
            if backend:
                chain = L.llama_sampler_chain_init(L.llama_sampler_chain_default_params())
                L.llama_sampler_chain_add(chain, L.llama_sampler_init_greedy())
                if not L.llama_set_sampler(ctx._ctx, 0, chain):
                    print("  this build cannot run the greedy sampler on its backend")
                    return
            tok, dec, host, toks = 5, [], [], []
            for i in range(tokens):
                batch.fill([tok], i, outputs="last")
                t1 = time.perf_counter()
                ctx.decode(batch)
                t2 = time.perf_counter()
                tok = (int(L.llama_get_sampled_token_ith(ctx._ctx, -1)) if backend
                       else int(ctx.logits(-1).argmax()))
                host.append(time.perf_counter() - t2)
                dec.append(t2 - t1)
                toks.append(tok)
            ctx.close()
            if chain is not None:
                L.llama_sampler_free(chain)
            runs[backend] = (statistics.median(dec) * 1e6, statistics.median(host) * 1e6, toks)
        (d0, h0, toks0), (d1, h1, toks1) = runs[False], runs[True]
        print(f"  host argmax: decode {d0:.0f}, choice {h0:.1f}; backend sampler: decode {d1:.0f}, "
              f"choice {h1:.1f}; the same tokens: {toks0 == toks1}")


def argmax_paths(model: Model, tokens: int = 400) -> None:
    print("argmax of the read-only row (us, median): right after a decode, then hot")
    ctx = Context(model, n_ctx=2048, n_threads=1)
    batch = Batch(8, 1)
    for _ in range(2):
        for name, pick in (("numpy row.argmax()", lambda r: int(r.argmax())),
                           ("topk.argmax(row)", topk.argmax)):
            ctx.clear()
            tok, cold, hot = 5, [], []
            for i in range(tokens):
                batch.fill([tok], i, outputs="last")
                ctx.decode(batch)
                row = ctx.logits(-1)
                t0 = time.perf_counter()
                tok = pick(row)
                t1 = time.perf_counter()
                pick(row)
                hot.append(time.perf_counter() - t1)
                cold.append(t1 - t0)
            print(f"  {name:<20} {statistics.median(cold) * 1e6:6.1f} {statistics.median(hot) * 1e6:6.1f}")
    batch.close()
    ctx.close()


def main(folder: str | None = None) -> None:
    target, _ = build_proxy(folder or DEFAULT_FOLDER)
    model = Model(target)
    argmax_paths(model)
    choice_paths(model)
    backend_greedy(model)
    model.close()


if __name__ == "__main__":
    main(folder_argument(__doc__, None, "the proxy folder (default: vocab_proxy's)"))
