"""Logprobs: the log-softmax of the target's raw logits where it verified each token,
the same with and without a draft, against an independent computation.

Tolerance: the target's logits move with the shape of the batch they are computed in
(one token in plain decoding, k + 1 in a chain verify, a whole tree); on the tiny
models the largest logprob difference measured between plain and chain/tree/lookup
replies was 0.0061 nats (4 prompts x 48 tokens x 4 modes, and 0.0045 nats against a
fresh context per prefix), so the tests allow 0.02 nats: about three times the noise,
and far below what a wrong position, a temperature or a missing normalization gives
(a logprob from the neighbouring position is off by more than 1 nat here).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import TokenEvent
from specula.core.engine.sampling.rules import Rule, SamplingParams
from tests.core.engine.conftest import PLAIN, chain, run
from tests.core.engine.grammar_lang import LETTERS, allowed_mask, pieces
from tests.core.engine.reference import FreshTarget

TOL = 0.02
MODES = [chain(3), chain(8), SpecConfig(mode=Mode.TREE, draft_max=3, tree_budget=8),
         SpecConfig(mode=Mode.LOOKUP, draft_max=4), SpecConfig(mode=Mode.ADAPTIVE)]
PROMPTS = ["hello world", "the code and the model", "lorem ipsum zebra quartz"]


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return x - (m + math.log(float(np.exp(x - m).sum())))


def close_events(a: list[TokenEvent], b: list[TokenEvent]) -> float:
    """The largest logprob difference between two replies of the same tokens."""
    assert [e.token_id for e in a] == [e.token_id for e in b]
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        assert x.logprob is not None and y.logprob is not None
        assert x.top_logprobs is not None and y.top_logprobs is not None
        worst = max(worst, abs(x.logprob - y.logprob))
        dx, dy = dict(x.top_logprobs), dict(y.top_logprobs)
        for tok in set(dx) & set(dy):
            worst = max(worst, abs(dx[tok] - dy[tok]))
        # a near-tie at the cut may swap which token is the last alternative: a token on
        # one list only must lie within the tolerance of the other list's last logprob
        for mine, other in ((x.top_logprobs, y.top_logprobs), (y.top_logprobs, x.top_logprobs)):
            others = {t for t, _ in other}
            for tok, lp in mine:
                if tok not in others:
                    assert abs(lp - other[-1][1]) < TOL, (tok, lp, other)
    return worst


@pytest.mark.parametrize("n_top", [0, 1, 5, 20])
def test_logprobs_match_an_independent_log_softmax(engine: Engine, ref: FreshTarget, n_top: int) -> None:
    for prompt in PROMPTS:
        ids = engine.tokenize_chat([{"role": "user", "content": prompt}])
        done, events = run(engine, ids, SamplingParams(max_tokens=24, logprobs=n_top), chain(3))
        assert len(events) == len(done.token_ids) == 24
        for i, ev in enumerate(events):
            want = log_softmax(ref.logits([*ids, *done.token_ids[:i]]))
            assert ev.logprob == pytest.approx(want[ev.token_id], abs=TOL)
            assert ev.top_logprobs is not None and len(ev.top_logprobs) == n_top
            lps = [lp for _, lp in ev.top_logprobs]
            assert lps == sorted(lps, reverse=True)
            assert len({t for t, _ in ev.top_logprobs}) == n_top
            best = np.sort(want)[::-1][:n_top]
            assert np.allclose(lps, best, atol=TOL)
            for tok, lp in ev.top_logprobs:
                assert lp == pytest.approx(want[tok], abs=TOL)
            if n_top:  # greedy: the chosen token is the best alternative
                assert ev.top_logprobs[0][0] == ev.token_id or lps[0] - ev.logprob < TOL
            assert sum(math.exp(lp) for lp in lps) <= 1.0 + 1e-6


def test_logprobs_are_the_same_with_and_without_a_draft(engine: Engine) -> None:
    worst = 0.0
    for prompt in PROMPTS:
        sp = SamplingParams(max_tokens=40, logprobs=5)
        plain, pe = run(engine, prompt, sp, PLAIN)
        for sc in MODES:
            done, ev = run(engine, prompt, sp, sc)
            assert done.token_ids == plain.token_ids
            worst = max(worst, close_events(pe, ev))
    print(f"largest logprob difference plain vs drafted: {worst:.2e} nats")
    assert worst < TOL


def test_sampled_replies_have_the_same_logprobs_in_every_mode(engine: Engine) -> None:
    for seed in range(3):
        sp = SamplingParams(temperature=0.9, seed=seed, max_tokens=30, logprobs=3, rule=Rule.COUPLED)
        _, pe = run(engine, PROMPTS[seed], sp, PLAIN)
        for sc in MODES:
            _, ev = run(engine, PROMPTS[seed], sp, sc)
            assert close_events(pe, ev) < TOL


def test_logprobs_ignore_the_grammar_mask(engine: Engine, ref: FreshTarget) -> None:
    """Under a grammar the logprobs are still the model's own (the mask is not applied),
    so a forbidden token can be an alternative: the reply's own tokens are allowed."""
    toks = pieces(ref)
    ids = engine.tokenize_chat([{"role": "user", "content": "zebra"}])
    sp = SamplingParams(max_tokens=10, logprobs=20, grammar=LETTERS.gbnf)
    done, events = run(engine, ids, sp, chain(3))
    forbidden_alternatives = 0
    text = b""
    for i, ev in enumerate(events):
        want = log_softmax(ref.logits([*ids, *done.token_ids[:i]]))
        assert ev.logprob == pytest.approx(want[ev.token_id], abs=TOL)
        mask = allowed_mask(text, toks, ref, LETTERS)
        assert mask[ev.token_id]
        assert ev.top_logprobs is not None
        forbidden_alternatives += sum(1 for t, _ in ev.top_logprobs if not mask[t])
        text += toks[ev.token_id]
    assert forbidden_alternatives > 0


def test_no_logprobs_unless_asked(engine: Engine) -> None:
    _, events = run(engine, "hello", SamplingParams(max_tokens=6), chain(3))
    assert all(e.logprob is None and e.top_logprobs is None for e in events)
    _, events = run(engine, "hello", SamplingParams(max_tokens=6, logprobs=0), chain(3))
    assert all(e.logprob is not None and e.logprob <= 0.0 and e.top_logprobs == [] for e in events)


def test_logprobs_with_a_stop_string_stay_with_their_tokens(engine: Engine) -> None:
    """Events held back by a pending stop string keep their logprobs when released."""
    sp = SamplingParams(max_tokens=30, logprobs=2)
    plain, pe = run(engine, "hello world", sp, PLAIN)
    stop = plain.text[10:12]
    _, ev = run(engine, "hello world", SamplingParams(max_tokens=30, logprobs=2, stop=[stop]), chain(3))
    assert ev and all(e.logprob is not None for e in ev)
    for a, b in zip(pe, ev, strict=False):
        if a.token_id == b.token_id and a.logprob is not None and b.logprob is not None:
            assert abs(a.logprob - b.logprob) < TOL

