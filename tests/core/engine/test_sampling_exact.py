"""Speculative sampling keeps the target's distribution (and the test has power)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from specula.core.engine import sampling
from specula.core.engine.engine import Engine
from specula.core.engine.sampling import SamplingParams
from tests.core.engine.conftest import chain, fresh_logits, make_engine, run

PARAMS = SamplingParams(temperature=1.0, top_k=5, top_p=1.0, min_p=0.0, max_tokens=2)
N_RUNS = 3000


def _logits_after(eng: Engine, tokens: list[int]) -> np.ndarray:
    return fresh_logits(eng.target_model, tokens)


def _exact_joint(eng: Engine, prompt: list[int], params: SamplingParams) -> dict[tuple[int, int], float]:
    """p(t1, t2) computed directly from the target, penalties included."""
    l1 = sampling.apply_penalties(_logits_after(eng, prompt), prompt, params)
    p1 = sampling.probs(l1, params)
    joint = {}
    for t1 in np.flatnonzero(p1):
        hist = [*prompt, int(t1)]
        p2 = sampling.probs(sampling.apply_penalties(_logits_after(eng, hist), hist, params), params)
        for t2 in np.flatnonzero(p2):
            joint[(int(t1), int(t2))] = float(p1[t1] * p2[t2])
    return joint


def _chi2_pvalue(observed: Counter[tuple[int, int]], expected: dict[tuple[int, int], float], n: int) -> float:
    """Pearson chi-square, cells with expected count < 5 pooled; Wilson-Hilferty p-value."""
    cells = sorted(expected, key=expected.__getitem__, reverse=True)
    obs, exp = [], []
    pool_o = pool_e = 0.0
    for c in cells:
        e = expected[c] * n
        if e >= 5:
            obs.append(observed.get(c, 0))
            exp.append(e)
        else:
            pool_o += observed.get(c, 0)
            pool_e += e
    outside = n - sum(observed.get(c, 0) for c in cells)  # samples the target can never produce
    pool_o += outside
    pool_e += 1e-9 if outside == 0 else 0.0
    if pool_e > 0:
        obs.append(pool_o)
        exp.append(max(pool_e, 1e-9))
    x2 = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    k = len(obs) - 1
    z = ((x2 / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def _sample_pairs(eng: Engine, prompt: list[int], params: SamplingParams, k: int) -> Counter[tuple[int, int]]:
    counts: Counter[tuple[int, int]] = Counter()
    for seed in range(N_RUNS):
        # the draft drafts from the first position (by default the first token is the target's)
        spec = chain(k, draft_first_token=True)
        done, _ = run(eng, prompt, SamplingParams(**{**params.to_dict(), "seed": seed}), spec)
        counts[(done.token_ids[0], done.token_ids[1])] += 1
    return counts


@pytest.fixture(scope="module")
def wrong_pair(tiny: dict[str, Path]) -> Engine:
    return make_engine(tiny["target"], tiny["wrong_draft"])


@pytest.mark.slow
def test_rejection_sampling_keeps_target_distribution(wrong_pair: Engine) -> None:
    prompt = wrong_pair.tokenize_chat([{"role": "user", "content": "hello"}])
    expected = _exact_joint(wrong_pair, prompt, PARAMS)
    counts = _sample_pairs(wrong_pair, prompt, PARAMS, k=3)
    assert _chi2_pvalue(counts, expected, N_RUNS) > 1e-3


@pytest.mark.slow
def test_sample_and_match_with_penalties_keeps_distribution(wrong_pair: Engine) -> None:
    params = SamplingParams(**{**PARAMS.to_dict(), "repeat_penalty": 1.3})
    assert params.acceptance_rule == "sample-and-match"
    prompt = wrong_pair.tokenize_chat([{"role": "user", "content": "the the"}])
    expected = _exact_joint(wrong_pair, prompt, params)
    counts = _sample_pairs(wrong_pair, prompt, params, k=2)
    assert _chi2_pvalue(counts, expected, N_RUNS) > 1e-3


@pytest.mark.slow
def test_the_test_has_power(wrong_pair: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Accepting every draft token (a wrong rule) must be detected."""
    monkeypatch.setattr(sampling, "accept_draft_token", lambda p, q, t, rng: True)
    prompt = wrong_pair.tokenize_chat([{"role": "user", "content": "hello"}])
    expected = _exact_joint(wrong_pair, prompt, PARAMS)
    counts = _sample_pairs(wrong_pair, prompt, PARAMS, k=3)
    assert _chi2_pvalue(counts, expected, N_RUNS) < 1e-6
