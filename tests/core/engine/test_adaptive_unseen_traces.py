"""Adaptive on recorded agreement of the real F16 pair on prompts its rules were not tuned
on, on the machine the peer benchmark ran (repacking off): near the best fixed chain.

``adaptive_sim.unseen_traces()``: the real 0.5B draft's agreement with the real F16 target
on the peer benchmark's prompts (``docs/lab/peer-prompts.jsonl``, four code prompts the
packaged suite does not hold, plus code-lru and explain-http from it), 96 tokens of the
target's greedy reply each, recorded by ``specula_tools.agreement_trace``. The machine is
``adaptive_sim.F16_NOREPACK``: the verify curve the engine's calibration measured there
(one big jump from 1 to 2 tokens, then nearly flat). Replayed, there is no noise: one
figure per prompt, where the real runs of one prompt spread by 10-20%.

The reference is the best fixed chain of each prompt (k = 1..8, the product's ChainPolicy,
which knows nothing of costs), chosen with hindsight of that one reply: where its steps
happen to line up with the draft's misses it runs 5-10% faster than its neighbours
(py-dataclass: chain:4 8.74, chain:5 9.33, chain:6 8.46 tok/s), which no policy can know
beforehand. So the bounds: every reply, a new pair's first included, at least 0.90x of
that oracle and at least chain:3's rate (the fixed setting the peer table shows); the
median of the replies after the first pass at least 0.98x of it.

The same bounds hold with a longer prompt (110 tokens: a system prompt before the question),
whose catch-up costs the draft 0.95 s. There two rules are needed, each with its power test:
a verdict taken on a new pair's first probe steps keeps the pair plain for replies after
(``test_power_a_verdict_on_thin_evidence_loses_the_first_replies``), and a pair where drafting
pays well (1.2-1.5x here) must not hold its catch-up back for a short answer's length
(``rates.NEAR_TIE``; ``test_power_a_catch_up_held_back_on_a_pair_that_pays_loses``).
"""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.policy import rates
from specula.core.engine.policy.acceptance_model import AcceptanceModel
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy
from tests.core.engine.adaptive_sim import F16_NOREPACK, Machine, run_reply, unseen_traces

TRACES = unseen_traces()
# The same machine, the prompt 110 tokens long (the draft's catch-up at the measured 8.6 ms
# a token of its 78-token one).
LONG_PROMPT = replace(F16_NOREPACK, prompt=110, prompt_s=0.95)


def _rate(policy: ChainPolicy | AdaptivePolicy, pid: str, m: Machine = F16_NOREPACK) -> float:
    t = TRACES[pid]
    r = run_reply(policy, m, t["ok"], t["p_top"], max_tokens=len(t["ok"]), entropy=t["entropy"])
    return r.tokens / r.seconds


def best_fixed(pid: str, m: Machine = F16_NOREPACK) -> tuple[int, float]:
    rates = {k: _rate(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=k)), pid, m) for k in range(1, 9)}
    k = max(rates, key=rates.__getitem__)
    return k, rates[k]


def adaptive_over_best_fixed(sessions: int = 3, m: Machine = F16_NOREPACK) -> dict[str, list[float]]:
    """Per prompt, adaptive / the best fixed chain in each of ``sessions`` passes over every
    prompt in one session (a new pair: the calibration's costs, nothing learnt)."""
    best = {pid: best_fixed(pid, m)[1] for pid in TRACES}
    policy = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=8, tree_budget=0))
    m.calibration().seed(policy.cost)
    out: dict[str, list[float]] = {pid: [] for pid in TRACES}
    for _ in range(sessions):
        for pid in TRACES:
            out[pid].append(_rate(policy, pid, m) / best[pid])
    return out


def _later_median(got: dict[str, list[float]]) -> float:
    """The median over every reply after the first pass."""
    return statistics.median(x for r in got.values() for x in r[1:])


def test_adaptive_is_near_the_best_fixed_chain_on_every_unseen_prompt() -> None:
    got = adaptive_over_best_fixed()
    assert min(min(r) for r in got.values()) >= 0.90, got
    assert _later_median(got) >= 0.98, got
    chain3 = {pid: _rate(ChainPolicy(SpecConfig(mode=Mode.CHAIN, draft_max=3)), pid) for pid in TRACES}
    best = {pid: best_fixed(pid)[1] for pid in TRACES}
    assert all(x * best[pid] >= chain3[pid] for pid, r in got.items() for x in r), got


def test_a_long_prompt_is_near_the_best_fixed_chain_too() -> None:
    got = adaptive_over_best_fixed(m=LONG_PROMPT)
    assert min(min(r) for r in got.values()) >= 0.88, got
    assert _later_median(got) >= 0.98, got


def test_power_a_verdict_on_thin_evidence_loses_the_first_replies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the optimism while evidence is thin, the first probe steps say drafting does
    not pay, and a reply after them runs far behind."""
    monkeypatch.setattr(AcceptanceModel, "optimistic_rate", lambda self: None)
    got = adaptive_over_best_fixed(sessions=1, m=LONG_PROMPT)
    assert min(r[0] for r in got.values()) < 0.8, got


def test_power_a_catch_up_held_back_on_a_pair_that_pays_loses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were the prompt's catch-up held back for a short answer's length wherever it is not
    repaid within one (not only on a pair where drafting barely pays), the replies after a
    hard one would start with 24 plain tokens on a pair that drafts at 1.2-1.5x."""
    monkeypatch.setattr(rates, "NEAR_TIE", float("inf"))
    got = adaptive_over_best_fixed(m=LONG_PROMPT)
    assert _later_median(got) < 0.95, got
