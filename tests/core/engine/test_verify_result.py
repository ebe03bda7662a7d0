"""The verify step as a function: accept_chain on given target rows returns a
VerifyResult whose tokens, logprobs, rule and bonus are checked against an
independent computation on those rows (numpy's argmax and log-softmax here), with no
model: a fake context serves the rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specula.core.engine.config import SpecConfig
from specula.core.engine.drafters.proposal import Proposal
from specula.core.engine.events import TokenOrigin
from specula.core.engine.sampling.rules import AcceptanceRule, Rule, SamplingParams
from specula.core.engine.verify.chain import accept_chain
from specula.core.engine.verify.reply import ReplySampling
from specula.core.engine.verify.result import VerifyResult

VOCAB = 64
N_TOP = 5


class Rows:
    """Stands in for the target's context after a verify decode: row i, the logits
    after the pending token and the first i drafted tokens."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    def logits(self, i: int) -> np.ndarray:
        return self.rows[i]


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    m = float(x.max())
    return x - (m + math.log(float(np.exp(x - m).sum())))


def rows(n: int, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, VOCAB)) * 3).astype(np.float32)


def chain_of(tokens: list[int]) -> Proposal:
    prop = Proposal(source=TokenOrigin.CHAIN)
    for t in tokens:
        prop.append(t, None, 0.5, 0.5, 0.0)
    return prop


def check_logprobs(res: VerifyResult, r: np.ndarray) -> None:
    """Each token's logprob and top-N against the log-softmax of the row it was verified at."""
    for i, ((tok, *_), lp) in enumerate(zip(res.tokens, res.logprobs, strict=True)):
        want = log_softmax(r[i])
        assert lp is not None
        assert lp[0] == pytest.approx(want[tok], abs=1e-9)
        best = np.argsort(-want, kind="stable")[:N_TOP]
        assert [t for t, _ in lp[1]] == [int(b) for b in best]
        assert [v for _, v in lp[1]] == pytest.approx([want[b] for b in best], abs=1e-9)


@pytest.mark.parametrize("reject_at", [0, 1, 3, None])
def test_greedy_result(reject_at: int | None) -> None:
    """Greedy: the drafted tokens are the rows' argmax up to ``reject_at``, where the
    draft is wrong; the result keeps the prefix, the row's argmax ends it."""
    k = 4
    r = rows(k + 1, seed=7 + (reject_at or 9))
    draft = [int(np.argmax(r[i])) for i in range(k)]
    if reject_at is not None:
        draft[reject_at] = (draft[reject_at] + 1) % VOCAB
    reply = ReplySampling(SamplingParams(logprobs=N_TOP), SpecConfig(), seed=1)
    res = accept_chain(Rows(r), chain_of(draft), [1, 2, 3], reply)  # type: ignore[arg-type]
    m = k if reject_at is None else reject_at
    assert res.rule is AcceptanceRule.GREEDY
    assert res.accepted == m and res.relaxed == 0
    assert [t for t, *_ in res.tokens] == [*draft[:m], int(np.argmax(r[m]))]
    assert res.bonus == int(np.argmax(r[m]))
    assert [s for _, s, *_ in res.tokens] == [TokenOrigin.CHAIN] * m + [TokenOrigin.TARGET]
    check_logprobs(res, r)


def test_rejection_result_logprobs_are_the_raw_rows() -> None:
    """Rejection sampling at a temperature: whatever it accepts, each token's logprob is
    the untempered log-softmax of its own row, and the rule says rejection sampling."""
    k = 3
    r = rows(k + 1, seed=3)
    params = SamplingParams(temperature=0.7, rule=Rule.REJECTION, logprobs=N_TOP)
    for seed in range(20):
        reply = ReplySampling(params, SpecConfig(), seed=seed)
        draft = [int(np.argmax(r[i])) for i in range(k)]
        res = accept_chain(Rows(r), chain_of(draft), [1, 2, 3], reply)  # type: ignore[arg-type]
        assert res.rule is AcceptanceRule.REJECTION
        assert [t for t, *_ in res.tokens[:-1]] == draft[:res.accepted]
        check_logprobs(res, r)


def test_no_logprobs_asked() -> None:
    r = rows(3, seed=5)
    reply = ReplySampling(SamplingParams(), SpecConfig(), seed=1)
    res = accept_chain(Rows(r), chain_of([int(np.argmax(r[0]))]), [1], reply)  # type: ignore[arg-type]
    assert res.logprobs == (None, None)


def test_result_is_consistent() -> None:
    tok = (1, TokenOrigin.TARGET, None)
    with pytest.raises(ValueError, match="at least"):
        VerifyResult((), (), AcceptanceRule.GREEDY, 0)
    with pytest.raises(ValueError, match="logprobs"):
        VerifyResult((tok,), (), AcceptanceRule.GREEDY, 0)
    with pytest.raises(ValueError, match="accepted"):
        VerifyResult((tok, tok), (None, None), AcceptanceRule.GREEDY, 0)
    with pytest.raises(AttributeError):
        VerifyResult((tok,), (None,), AcceptanceRule.GREEDY, 0).accepted = 1  # type: ignore[misc]
