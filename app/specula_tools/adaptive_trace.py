"""Where adaptive loses against the fixed chains: a per-step trace on real models.

    python -m specula_tools.adaptive_trace --target T.gguf --draft D.gguf \\
        --prompts code-fizzbuzz,code-lru --chains 1-6 --threads 1

For each prompt it runs plain, every fixed chain and adaptive from empty caches (as
``specula bench`` does) and prints, for adaptive, every step: what it drafted and
how much was accepted, its time, and the draft length that would have been best for
that step in hindsight (the accepted run is known once verified: a step that
accepted m of k drafted had a run of exactly m; one that accepted all had at least
k), timed by the policy's own cost model. The summary gives the draft's catch-up on
tokens it had not seen (the prompt, sit-outs; ``GenerationStats.draft_catchup_s``)
and splits the rest of adaptive's time into plain steps, drafting steps (their
catch-ups left out) and tokens drafted but rejected, and compares tok/s with the
best fixed chain of the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.events import Done, StepEvent
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import Plan, PlanInput
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import StepRecord


def _view(pol: AdaptivePolicy, inp: PlanInput, out: Plan) -> str:
    """What the policy saw when it planned: lookup's match and length, the draft's lag,
    and its estimates of plain, lookup and draft-chain tokens/s (after the plan)."""
    v1 = pol.cost.verify_time(1)
    k_max = min(pol.cfg.draft_max, inp.room)
    l_rate, l_k = pol.lookup_rate(inp, k_max)
    d_rate, d_k = pol.draft_rate(k_max) if inp.has_draft else (0.0, 0)
    plain = 1.0 / v1 if v1 else 0.0
    return (f"m{inp.lookup_match}/{len(inp.lookup_tokens)} lag{inp.draft_lag} "
            f"{plain:.1f}/{l_rate:.1f}@{l_k}/{d_rate:.1f}@{d_k} -> {out.source.value}:{out.k}")


def greedy_reply(eng: Engine, messages: list[dict[str, str]], spec: SpecConfig,
                 max_tokens: int, recs: list[StepRecord] | None = None) -> tuple[Done, list[StepRecord]]:
    """One greedy reply from empty caches: its result and every step's record."""
    assert eng.generator is not None
    eng.generator.reset()
    recs = [] if recs is None else recs
    done: Done | None = None
    for ev in eng.chat(messages, SamplingParams(temperature=0.0, max_tokens=max_tokens), spec):
        if isinstance(ev, StepEvent):
            recs.append(ev.record)
        elif isinstance(ev, Done):
            done = ev
    assert done is not None
    return done, recs


def hindsight_k(pol: AdaptivePolicy, rec: StepRecord, k_max: int) -> tuple[int, bool]:
    """(best draft length for this step in hindsight, whether the run length is exact)."""
    run, exact = rec.accepted, rec.accepted < rec.drafted or rec.drafted == 0
    if rec.drafted == 0:
        return -1, False  # a plain step says nothing about the draft here
    v1 = pol.cost.verify_time(1) or 0.0
    t_d = pol.cost.draft or 0.0
    best, best_k = 1.0 / v1 if v1 else 0.0, 0
    for k in range(1, k_max + 1):
        if not exact and k > rec.drafted:
            break
        tokens = min(run, k) + 1
        rate = tokens / (k * t_d + pol.verify_s(k + 1))
        if rate > best:
            best, best_k = rate, k
    return best_k, exact


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", required=True)
    ap.add_argument("--prompts", required=True, help="prompt ids of the suite, comma-separated")
    ap.add_argument("--prompts-file", help="JSONL prompts (default: the packaged suite)")
    ap.add_argument("--chains", default="1-6", help="fixed chain lengths A-B")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--lookup", action="store_true", help="also run lookup alone (multi-turn edits)")
    ap.add_argument("--draft-max", type=int, default=None,
                    help="adaptive's cap (default: the longest chain)")
    a = ap.parse_args(argv)
    lo, _, hi = a.chains.partition("-")
    ks = list(range(int(lo), int(hi or lo) + 1))
    eng = Engine(EngineOptions(n_ctx=4096, n_threads=a.threads))
    eng.load_target(a.target)
    eng.load_draft(a.draft)
    cal = eng.calibration
    if cal is not None:
        print("calibration ms: verify " + " ".join(f"{n}:{s * 1000:.0f}" for n, s in sorted(cal.verify.items()))
              + f"  draft {1000 * (cal.draft or 0):.1f}  catch-up/token {1000 * (cal.catchup_per_token or 0):.1f}"
              + f"  ({cal.seconds:.2f} s)")
    suite = {p.id: p for p in load_prompts(a.prompts_file)}
    adaptive = SpecConfig(mode=Mode.ADAPTIVE, draft_max=a.draft_max or max(ks))
    hi = [{"role": "user", "content": "hi"}]
    for spec in [SpecConfig(mode=Mode.PLAIN), adaptive]:  # warm-up
        greedy_reply(eng, hi, spec, 8)
    pol = eng.policy_for(adaptive)
    assert isinstance(pol, AdaptivePolicy)
    views: dict[int, str] = {}  # step -> what the policy saw when it planned it
    live: list[StepRecord] = []  # the adaptive reply's steps so far
    plan = pol.plan

    def traced(inp: PlanInput) -> Plan:  # the policy's own view of each step
        out = plan(inp)
        views[len(live)] = _view(pol, inp, out)
        return out

    pol.plan = traced  # type: ignore[method-assign]
    for pid in a.prompts.split(","):
        messages = suite[pid].messages
        rates: dict[str, float] = {}
        modes = [("plain", SpecConfig(mode=Mode.PLAIN)),
                 *[(f"chain:{k}", SpecConfig(mode=Mode.CHAIN, draft_max=k)) for k in ks]]
        if a.lookup:
            modes.append(("lookup", SpecConfig(mode=Mode.LOOKUP, draft_max=adaptive.draft_max)))
        for label, spec in [*modes, ("adaptive", adaptive)]:
            views.clear()
            live.clear()
            done, recs = greedy_reply(eng, messages, spec, a.max_tokens, live)
            rates[label] = done.stats.tokens_per_s
        s = done.stats
        print(f"\n{pid}: " + "  ".join(f"{m} {r:.2f}" for m, r in rates.items()))
        best = max((r, m) for m, r in rates.items() if m.startswith(("chain", "lookup")))
        print(f"  adaptive / best fixed ({best[1]}): {rates['adaptive'] / best[0]:.3f}")
        print("  step source  drafted accepted  draft_ms verify_ms  hindsight_k  | policy: "
              "lookup match/tokens, draft lag, tok/s plain/lookup/draft -> plan")
        plain_s = draft_steps_s = wasted = 0.0
        for r in recs:
            hk, exact = hindsight_k(pol, r, max(ks))
            hs = "-" if hk < 0 else f"{hk}{'' if exact else '+'}"
            print(f"  {r.step:4d} {r.source:7s} {r.drafted:7d} {r.accepted:8d} {r.draft_s * 1000:9.1f} "
                  f"{r.verify_s * 1000:9.1f}  {hs:11s}  | {views.get(r.step, '')}")
            if r.drafted == 0:
                plain_s += r.verify_s
            else:
                draft_steps_s += r.draft_s - r.catchup_s + r.verify_s  # the catch-up on its own
                wasted += r.drafted - r.accepted
        print(f"  time: draft catch-up {s.draft_catchup_s:.2f} s ({s.draft_catchup_tokens} tokens), "
              f"plain steps {plain_s:.2f} s, "
              f"drafting steps {draft_steps_s:.2f} s; drafted and rejected {wasted:.0f} tokens; "
              f"pair rate {pol.acc.token_rate:.2f}, by depth "
              + " ".join(f"{pol.acc.hazard(j):.2f}" for j in range(max(ks))))
    eng.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
