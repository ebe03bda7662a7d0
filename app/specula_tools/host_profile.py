"""Where one step's host time goes, part by part, in microseconds per step.

Runs replies on the 152k-vocabulary proxy (:mod:`specula_tools.vocab_proxy`) with timing
wrappers around the functions of the decode loop (exclusive time: a wrapped call inside
another is counted once, in the inner part), subtracts each wrapper's own measured cost,
and prints the parts per step beside the step's whole host time (its wall time outside
every ``llama_decode``). What no wrapper covers is "the loop itself" (the generator's own
lines: the zip over new tokens, list appends, comparisons, cancel checks).

    python -m specula_tools.host_profile [--mode plain|chain:K] [--temp 0.8] [--tokens 256]
    python -m specula_tools.host_profile --floor    # the least loop: decode, row, argmax

Run it on the benchmark core (``taskset -c 1``); the wrappers cost time themselves, so the
parts are for finding where time goes, the bench's host share is the figure.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters import model as drafters_model
from specula.core.engine.drafters import proposal as drafters_proposal
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done, StepEvent
from specula.core.engine.loop import emit as emit_mod
from specula.core.engine.loop import generator as gen_mod
from specula.core.engine.loop import propose as propose_mod
from specula.core.engine.loop import target_verify, text
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.kv import KVCache
from specula.core.engine.native.llama import Model
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk
from specula.core.engine.stats import GenerationStats
from specula.core.engine.verify import chain as chain_verify
from specula.core.engine.verify import reply as reply_mod
from specula_tools.vocab_proxy import DEFAULT_FOLDER, build_proxy

PROMPT = [{"role": "user", "content": "Write a Python function that checks whether a string is a palindrome."}]

_spent: dict[str, float] = defaultdict(float)
_calls: dict[str, int] = defaultdict(int)
_stack: list[list[float]] = []  # per active wrapped call: [time spent in wrapped callees]
_DECODE = "llama_decode"


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        inner = [0.0]
        _stack.append(inner)
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            dt = time.perf_counter() - t0
            _stack.pop()
            _spent[name] += dt - inner[0]
            _calls[name] += 1
            if _stack:
                _stack[-1][0] += dt
    return wrapper


def _wrapper_cost() -> float:
    """Seconds one wrapper adds around a call (subtracted from each part, per call)."""
    f = _timed("_probe", lambda: None)
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20000):
            f()
        samples.append((time.perf_counter() - t0) / 20000)
    bare = min(_bare_calls() for _ in range(5))
    _spent.pop("_probe", None)
    _calls.pop("_probe", None)
    return max(min(samples) - bare, 0.0)


def _bare_calls() -> float:
    def g() -> None:
        return None

    t0 = time.perf_counter()
    for _ in range(20000):
        g()
    return (time.perf_counter() - t0) / 20000


# (owner, attribute, part name): the loop's functions, grouped by what they do
PARTS: list[tuple[Any, str, str]] = [
    (Context, "decode", _DECODE),
    (Context, "logits", "logits row view (ctypes)"),
    (reply_mod.ReplySampling, "choose", "target's choice (cold pass: argmax / candidates)"),
    (reply_mod.ReplySampling, "took", "reply.took (grammar, logprobs)"),
    (sampling, "candidates", "sampling.candidates"),
    (sampling, "coupled_choice", "coupled choice (Gumbel)"),
    (sampling, "probs", "sampling.probs (dense p)"),
    (sampling, "sample", "sampling.sample"),
    (sampling, "residual", "sampling.residual"),
    (sampling, "accept_draft_token", "accept_draft_token"),
    (topk, "top_k_ids", "topk.top_k_ids"),
    (topk, "top_k_lists", "topk.top_k_lists (the sort in Python)"),
    (topk, "_at_or_above_kth_group_max", "topk group filter (the pass over the row)"),
    (sampling, "coupled_pick", "sampling.coupled_pick (own lines)"),
    (sampling, "_candidate_lists", "sampling._candidate_lists (transform in floats)"),
    (sampling, "_choose_lists", "sampling._choose_lists (Gumbel in Python)"),
    (topk, "top_softmax_stats", "draft features (top 64)"),
    (topk, "softmax_stats", "draft features (exact)"),
    (Batch, "fill", "Batch.fill (numpy views)"),
    (KVCache, "feed", "KVCache.feed (Python)"),
    (KVCache, "cut", "KVCache.cut"),
    (Model, "is_eog", "Model.is_eog"),
    (Model, "piece", "Model.piece"),
    (text.Utf8Stream, "feed", "Utf8Stream.feed"),
    (text.StopFilter, "push", "StopFilter.push"),
    (GenerationStats, "add_step", "stats.add_step"),
    (GenerationStats, "sample_memory", "stats.sample_memory (psutil)"),
    (gen_mod, "propose", "loop.propose (policy plan, request)"),
    (gen_mod.Generator, "_decode_clock", "Generator._decode_clock"),
    (target_verify.TargetVerifier, "verify", "TargetVerifier.verify"),
    (target_verify.TargetVerifier, "_verify_chain", "TargetVerifier._verify_chain"),
    (chain_verify, "accept_chain", "chain_verify.accept_chain (its own lines)"),
    (drafters_model.ChainDrafter, "propose", "drafter: propose (Python)"),
    (drafters_model.ChainDrafter, "accept", "drafter: accept / drop_rejected"),
    (drafters_model.DraftModel, "catch_up", "drafter: catch_up"),
    (drafters_model.DraftModel, "feed_one", "drafter: feed_one"),
    (drafters_model.DraftModel, "lag", "drafter: lag"),
    (drafters_proposal.Proposal, "append", "drafter: Proposal.append"),
]
CLASSES: list[tuple[Any, str, str]] = [
    (emit_mod, "TokenEvent", "TokenEvent()"),
    (gen_mod, "StepRecord", "StepRecord()"),
    (gen_mod, "StepEvent", "StepEvent()"),
    (gen_mod, "Outcome", "Outcome()"),
    (propose_mod, "Proposal", "Proposal() (plain steps)"),
]


def _install() -> None:
    for owner, attr, name in PARTS:
        setattr(owner, attr, _timed(name, getattr(owner, attr)))
    for owner, attr, name in CLASSES:  # a subclass with a timed __init__ (isinstance holds)
        cls = getattr(owner, attr)
        setattr(owner, attr, type(cls.__name__, (cls,), {"__init__": _timed(name, cls.__init__)}))


def floor(target: str, steps: int = 600) -> None:
    """The least a greedy step can cost on the host here: a loop that only fills a
    one-token batch, decodes it, takes the row's view and its argmax (no events, no
    stats, no policy), the same loop without the argmax, and with numpy's own argmax,
    which copies the read-only row first (see ``topk.argmax``)."""
    import numpy as np

    model = Model(target)
    ctx = Context(model, n_ctx=2048, n_threads=1)
    batch = Batch(8, 1)
    try:
        names = ("decode only", "decode + row view", "decode + row view + topk.argmax",
                 "decode + row view + np.argmax")
        for name in names:
            for _ in range(2):
                ctx.clear()
                tok, d0, t0 = 5, ctx.decode_s, time.perf_counter()
                for i in range(steps):
                    batch.fill([tok], i, outputs="last")
                    ctx.decode(batch)
                    if name != "decode only":
                        row = ctx.logits(-1)
                        if name.endswith("topk.argmax"):
                            tok = topk.argmax(row)
                        elif name.endswith("np.argmax"):
                            tok = int(np.argmax(row))
                wall, dec = time.perf_counter() - t0, ctx.decode_s - d0
                print(f"{name:<32} step {wall / steps * 1e6:7.1f} us, host "
                      f"{(wall - dec) / steps * 1e6:6.1f} us, share {(wall - dec) / wall:.1%}")
    finally:
        batch.close()
        ctx.close()
        model.close()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", default=str(DEFAULT_FOLDER))
    ap.add_argument("--mode", default="plain", help="plain or chain:K")
    ap.add_argument("--temp", type=float, default=0.0)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--replies", type=int, default=3)
    ap.add_argument("--no-wrappers", action="store_true", help="only the whole host time")
    ap.add_argument("--floor", action="store_true", help="only the least loop (see floor())")
    a = ap.parse_args(argv)
    target, draft = build_proxy(a.folder)
    if a.floor:
        floor(str(target))
        return
    engine = Engine(EngineOptions(n_threads=1, calibrate=False, n_ctx=2048))
    engine.load_target(target)
    if a.mode != "plain":
        engine.load_draft(draft)
    name, _, k = a.mode.partition(":")
    spec = SpecConfig(mode=Mode(name), draft_max=int(k or 3))
    params = sampling.SamplingParams(temperature=a.temp, top_k=40, top_p=0.95, min_p=0.05,
                                     seed=7, max_tokens=a.tokens)
    for _ev in engine.chat(PROMPT, sampling.SamplingParams(max_tokens=8), spec):
        pass  # warm-up
    overhead = 0.0 if a.no_wrappers else _wrapper_cost()
    if not a.no_wrappers:
        _install()
    _spent.clear()
    _calls.clear()
    steps = 0
    host = 0.0
    step_s = 0.0
    tokens = 0
    per_step: list[float] = []
    for _ in range(a.replies):
        engine.generator.reset()  # type: ignore[union-attr]
        for ev in engine.chat(PROMPT, params, spec):
            if isinstance(ev, StepEvent):
                per_step.append(ev.record.overhead_s)
            elif isinstance(ev, Done):
                steps += ev.stats.steps
                host += ev.stats.overhead_s
                step_s += ev.stats.step_s
                tokens += ev.stats.tokens
    us = 1e6 / steps
    print(f"mode {a.mode}, T {a.temp}, {a.replies} replies, {steps} steps, {tokens} tokens, "
          f"wrapper cost {overhead * 1e9:.0f} ns per call (subtracted)")
    print(f"step {step_s * us:.1f} us, host {host * us:.1f} us per step "
          f"(median {statistics.median(per_step) * 1e6:.1f}), share {host / step_s:.1%}")
    if a.no_wrappers:
        return
    # prefill and the draft's catch-up happen outside the steps: count only step-time calls
    rows = []
    for name in _spent:
        if name == _DECODE:
            continue
        t = _spent[name] - overhead * _calls[name]
        rows.append((t, name, _calls[name]))
    rows.sort(reverse=True)
    named = sum(r[0] for r in rows)
    print(f"{'part':<52}{'us/step':>9}{'calls/step':>12}")
    for t, name, calls in rows:
        print(f"{name:<52}{t * us:>9.1f}{calls / steps:>12.2f}")
    print(f"{'(the loop itself: host minus the parts)':<52}{(host - named) * us:>9.1f}")


if __name__ == "__main__":
    main()
