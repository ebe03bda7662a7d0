"""What the coupled rule costs in acceptance, measured on the same text.

``python -m specula_tools.coupling_cost --target T --draft D [--limit 4] [--seed 7]``

A sampled benchmark compares the two exact rules on *different* replies (each
rule samples its own text), so its acceptance gap mixes the rule's cost with how
easy the sampled texts were. This tool removes the second part: it generates a
plain reply, then feeds prompt + reply to the target and to the draft (teacher
forcing) and, at every position of that one text, computes

- ``1 - TV(p, q)``: rejection sampling's per-token acceptance (exact, no noise);
- the Gumbel coupling's expected match, by Monte Carlo over fresh noise;
- the engine's own coupled match with the reply's seed (``coupled_choice`` of p
  and of q with the same key): one realisation per position.

The coupling's guarantee is ``(1 - TV) / (1 + TV)`` at worst (Daliri et al.,
arXiv 2408.07978); what it costs on a real pair is what this prints.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done
from specula.core.engine.native.kv import KVCache
from specula.core.engine.sampling.rules import SamplingParams, candidates, coupled_choice, densify
from specula_tools.lab.pair_args import open_pair, pair_parser

CHUNK = 8  # tokens per teacher-forced decode: within the contexts' n_outputs_max


def forced_logits(kv: KVCache, prompt: Sequence[int], reply: Sequence[int]) -> list[np.ndarray]:
    """The logits that predict each token of ``reply`` after ``prompt`` (one cache, fresh)."""
    kv.clear()
    kv.feed(list(prompt[:-1]))
    toks = [prompt[-1], *reply[:-1]]
    out: list[np.ndarray] = []
    for i in range(0, len(toks), CHUNK):
        chunk = toks[i : i + CHUNK]
        kv.feed(chunk, "all")
        out += [kv.ctx.logits(j).copy() for j in range(len(chunk))]
    return out


def measure(engine: Engine, prompt_ids: Sequence[int], params: SamplingParams,
            rng: np.random.Generator, n_mc: int = 4000) -> dict[str, list[float]]:
    gen, seed = engine.generator, int(params.seed if params.seed is not None else 0)
    assert gen is not None and gen.draft_model is not None, "load a target and a draft first"
    done = next(e for e in engine.generate_tokens(prompt_ids, params, SpecConfig(mode=Mode.PLAIN))
                if isinstance(e, Done))
    reply = done.token_ids
    target = forced_logits(gen.kv, prompt_ids, reply)
    draft = forced_logits(gen.draft_model.kv, prompt_ids, reply)
    n_shared = gen.draft_model.n_shared
    out: dict[str, list[float]] = {"one_minus_tv": [], "gumbel_expected": [], "coupled_realised": []}
    for t in range(min(len(target), len(draft))):
        pos = len(prompt_ids) + t
        pi, pp = candidates(target[t], params)
        qi, qp = candidates(draft[t][:n_shared], params)
        n = target[t].shape[0]
        p = densify(pi, pp, n).astype(np.float64)
        q = densify(qi, qp, n).astype(np.float64)
        out["one_minus_tv"].append(1.0 - 0.5 * float(np.abs(p - q).sum()))
        union = np.union1d(pi, qi)
        g = rng.gumbel(size=(n_mc, union.shape[0]))
        with np.errstate(divide="ignore"):
            a = np.argmax(np.log(p[union]) + g, axis=1)
            b = np.argmax(np.log(q[union]) + g, axis=1)
        out["gumbel_expected"].append(float((a == b).mean()))
        same = coupled_choice(pi, pp, seed, pos) == coupled_choice(qi, qp, seed, pos)
        out["coupled_realised"].append(float(same))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = pair_parser(__doc__, prompts_file=None, max_tokens=128, prog="python -m specula_tools.coupling_cost")
    ap.add_argument("--categories", default="code")
    ap.add_argument("--limit", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--temp", type=float, default=0.8)
    a = ap.parse_args(argv)
    engine = open_pair(a, calibrate=False)
    params = SamplingParams(temperature=a.temp, top_k=40, top_p=0.95, min_p=0.05, seed=a.seed,
                            max_tokens=a.max_tokens)
    cats = set(a.categories.split(","))
    prompts = [p for p in load_prompts() if p.category in cats][: a.limit]
    rng = np.random.default_rng(0)
    total: dict[str, list[float]] = {}
    for pr in prompts:
        ids = engine.tokenize_chat([{"role": "user", "content": pr.prompt}])
        got = measure(engine, ids, params, rng)
        for k, v in got.items():
            total.setdefault(k, []).extend(v)
        print(f"{pr.id}: {len(got['one_minus_tv'])} positions, 1-TV {np.mean(got['one_minus_tv']):.3f}, "
              f"coupled {np.mean(got['coupled_realised']):.3f}", flush=True)
    print(f"all {len(total['one_minus_tv'])} positions (T {a.temp}, top-k 40, top-p 0.95, min-p 0.05):")
    for k, v in total.items():
        print(f"  {k}: {np.mean(v):.4f}")
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
