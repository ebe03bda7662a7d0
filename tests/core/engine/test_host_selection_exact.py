"""Host work in proportion to the candidates: the partial selection and the sampling
transform equal a plain computation over the whole vocabulary (sorted, cut, softmax),
ties included; the confidence features stay close to the exact softmax; the host share
is measured per step, on the same clock as the decodes it leaves out."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.events import Done
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.sampling_runs import make_engine


def plain_transform(logits: np.ndarray, top_k: int, top_p: float, min_p: float,
                    temperature: float) -> dict[int, float]:
    """The whole vocabulary sorted (stable: equal logits keep the lower id first), then
    top-k, top-p and min-p on the temperature-1 softmax of what is left, then the
    temperature: written from llama.cpp's documented chain, in plain Python floats."""
    x = [float(v) for v in logits]
    order = sorted(range(len(x)), key=lambda i: -x[i])  # Python's sort is stable
    if 0 < top_k < len(order):
        order = order[:top_k]

    def softmax(ids: list[int], t: float) -> list[float]:
        m = max(x[i] for i in ids)
        e = [math.exp((x[i] - m) / t) for i in ids]
        z = sum(e)
        return [v / z for v in e]

    if top_p < 1.0:
        cum = 0.0
        for n, v in enumerate(softmax(order, 1.0), start=1):
            cum += v
            if cum >= top_p:
                order = order[:n]
                break
    if min_p > 0.0:
        p = softmax(order, 1.0)
        order = [i for i, v in zip(order, p, strict=True) if v >= min_p * p[0]]
    return dict(zip(order, softmax(order, temperature), strict=True))


def _near_boundary(logits: np.ndarray, top_p: float, min_p: float, top_k: int) -> bool:
    """A top-p or min-p cut decided by float rounding (float32 vs Python floats):
    such rows are skipped, the cut itself is tested elsewhere on clean values."""
    x = np.sort(logits.astype(np.float64))[::-1]
    if 0 < top_k < x.shape[0]:
        x = x[:top_k]
    e = np.exp(x - x[0])
    p = e / e.sum()
    c = np.cumsum(p)
    if top_p < 1.0 and np.any(np.abs(c - top_p) < 1e-9):
        return True
    return min_p > 0.0 and bool(np.any(np.abs(e - min_p) < 1e-9))


# logits drawn from a few values so that ties are common, or from a wide range
tied = st.lists(st.sampled_from([-3.0, -1.0, 0.0, 0.5, 2.0, 2.0, 4.0]), min_size=1, max_size=300)
wide = st.lists(st.floats(-20, 20, allow_nan=False, width=32), min_size=1, max_size=300)


@settings(max_examples=300, deadline=None)
@given(st.one_of(tied, wide), st.integers(0, 60), st.sampled_from([1.0, 0.95, 0.8, 0.5]),
       st.sampled_from([0.0, 0.05, 0.2]), st.sampled_from([0.3, 0.8, 1.0, 1.7]))
def test_candidates_equal_the_plain_transform(vals, top_k, top_p, min_p, temp):
    logits = np.array(vals, dtype=np.float32)
    if _near_boundary(logits, top_p, min_p, top_k):
        return
    params = SamplingParams(temperature=temp, top_k=top_k, top_p=top_p, min_p=min_p)
    ids, p = sampling.candidates(logits, params)
    want = plain_transform(logits, top_k, top_p, min_p, temp)
    got = dict(zip((int(i) for i in ids), (float(v) for v in p), strict=True))
    assert sorted(got) == sorted(want)  # the same tokens
    if 0 < top_k < len(vals) or top_p < 1.0:  # best first, ties to the lower id
        assert list(got) == list(want)
    np.testing.assert_allclose([got[i] for i in want], list(want.values()), rtol=1e-9, atol=1e-12)


def _large_row(seed: int, scale: float, levels: int) -> np.ndarray:
    """A row of 4097-160k logits: ``levels`` distinct integer values (ties) or, with 0,
    normal draws of spread ``scale``."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4097, 160_000))
    if levels:
        return rng.integers(0, levels, n).astype(np.float32)
    return (rng.standard_normal(n) * scale).astype(np.float32)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.sampled_from([0.5, 2.5, 8.0]),
       st.sampled_from([0, 3, 50]))
def test_top_k_ids_on_a_large_vocabulary(seed, k, scale, levels):
    """The strided-group selection (vocabularies above a few thousand) equals a stable
    sort of the whole row, with ties (``levels`` distinct values) and without."""
    logits = _large_row(seed, scale, levels)
    got = topk.top_k_ids(logits, k)
    want = np.argsort(-logits, kind="stable")[:k]
    np.testing.assert_array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 64), st.sampled_from([0.5, 2.5, 8.0]),
       st.sampled_from([0, 3, 50, 2000]))
def test_top_k_lists_on_a_large_vocabulary(seed, k, scale, levels):
    """The selection as Python lists (the sampling transform's input) equals a stable
    sort of the whole row, ids and logits, with ties and without."""
    logits = _large_row(seed, scale, levels)
    ids, vals = topk.top_k_lists(logits, k)
    want = np.argsort(-logits, kind="stable")[:k]
    assert ids == [int(i) for i in want]
    assert vals == [float(logits[i]) for i in want]


def _gumbel_max_plainly(want: dict[int, float], seed: int, position: int) -> int:
    ids = list(want)
    g = sampling.gumbel_noise(seed, position, np.array(ids, dtype=np.int64))
    scores = [math.log(want[i]) + float(n) for i, n in zip(ids, g, strict=True)]
    return ids[scores.index(max(scores))]


@settings(max_examples=200, deadline=None)
@given(st.one_of(tied, wide), st.integers(1, 80), st.sampled_from([1.0, 0.95, 0.5]),
       st.sampled_from([0.0, 0.05]), st.sampled_from([0.3, 0.8, 1.7]),
       st.integers(0, 2**31 - 1), st.integers(0, 10**6))
def test_the_coupled_pick_is_the_gumbel_max_of_the_plain_transform(vals, top_k, top_p, min_p,
                                                                    temp, seed, position):
    """The reply's coupled choice (lists end to end for a small top-k) is the Gumbel-max
    over the plainly computed distribution, and what the array functions choose."""
    logits = np.array(vals, dtype=np.float32)
    if _near_boundary(logits, top_p, min_p, top_k):
        return
    params = SamplingParams(temperature=temp, top_k=top_k, top_p=top_p, min_p=min_p)
    want = _gumbel_max_plainly(plain_transform(logits, top_k, top_p, min_p, temp), seed, position)
    assert sampling.coupled_pick(logits, params, seed, position) == want
    assert sampling.coupled_choice(*sampling.candidates(logits, params), seed, position) == want


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 7, 40, 64]), st.integers(0, 10**6))
def test_the_coupled_pick_on_a_large_vocabulary(seed, top_k, position):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal(int(rng.integers(4097, 160_000))) * 2.5).astype(np.float32)
    order = np.argsort(-logits, kind="stable")[:top_k]
    if _near_boundary(logits[order], 0.95, 0.05, 0):
        return
    params = SamplingParams(temperature=0.8, top_k=top_k, top_p=0.95, min_p=0.05)
    local = plain_transform(logits[order], 0, 0.95, 0.05, 0.8)
    want = _gumbel_max_plainly({int(order[i]): p for i, p in local.items()}, seed, position)
    assert sampling.coupled_pick(logits, params, seed, position) == want


def test_top_k_ids_with_minus_infinity():
    """A row with fewer finite values than k (a grammar masks tokens to -inf)."""
    logits = np.full(20_000, -np.inf, dtype=np.float32)
    logits[[5, 17_000, 9]] = [1.0, 3.0, 1.0]
    np.testing.assert_array_equal(topk.top_k_ids(logits, 5),
                                  np.argsort(-logits, kind="stable")[:5])


def test_a_remembered_selection_is_only_reused_for_the_same_read_only_row():
    rng = np.random.default_rng(3)
    row = rng.standard_normal(50_000).astype(np.float32)
    row.flags.writeable = False
    first = topk.top_k_ids(row, 64)
    assert topk.top_k_ids(row, 40) is not None
    np.testing.assert_array_equal(topk.top_k_ids(row, 40), first[:40])
    writable = rng.standard_normal(50_000).astype(np.float32)
    topk.top_k_ids(writable, 10)
    writable[:] = -writable  # a writable array changed in place is selected again
    np.testing.assert_array_equal(topk.top_k_ids(writable, 10),
                                  np.argsort(-writable, kind="stable")[:10])


def test_large_vocabulary_candidates_equal_the_plain_transform():
    rng = np.random.default_rng(11)
    logits = (rng.standard_normal(151_936) * 2.5).astype(np.float32)
    params = SamplingParams(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05)
    ids, p = sampling.candidates(logits, params)
    order = np.argsort(-logits, kind="stable")[:40]
    want = plain_transform(logits[order], 0, 0.95, 0.05, 0.8)
    assert [int(order[i]) for i in want] == [int(i) for i in ids]
    np.testing.assert_allclose(p, list(want.values()), rtol=1e-9)


def _exact(logits: np.ndarray) -> tuple[int, float, float]:
    x = logits.astype(np.float64) - float(logits.max())
    p = np.exp(x) / np.exp(x).sum()
    return int(np.argmax(logits)), float(p.max()), float(-(p * np.log(np.maximum(p, 1e-300))).sum())


@pytest.mark.parametrize("scale,peak", [(1.0, 0.0), (2.5, 0.0), (2.5, 10.0), (2.5, 20.0), (6.0, 4.0)])
def test_confidence_features_stay_close_to_the_exact_softmax(scale, peak):
    rng = np.random.default_rng(5)
    logits = (rng.standard_normal(151_936) * scale).astype(np.float32)
    logits[777] += peak
    top, p_top, h = topk.top_softmax_stats(logits)
    e_top, e_p, e_h = _exact(logits)
    assert top == e_top
    assert abs(p_top - e_p) <= 0.1 * e_p + 1e-3
    assert abs(h - e_h) <= 0.05 * max(e_h, 1.0)


def test_greedy_features_are_exact():
    rng = np.random.default_rng(8)
    logits = (rng.standard_normal(151_936) * 2.5).astype(np.float32)
    top, p_top, h = topk.softmax_stats(logits)
    e_top, e_p, e_h = _exact(logits)
    assert top == e_top and p_top == pytest.approx(e_p, rel=1e-4) and h == pytest.approx(e_h, rel=1e-4)


def test_small_rows_have_exact_features():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal(300).astype(np.float32)
    top, p_top, h = topk.top_softmax_stats(logits)
    e_top, e_p, e_h = _exact(logits)
    assert top == e_top and p_top == pytest.approx(e_p, rel=1e-6) and h == pytest.approx(e_h, rel=1e-6)


def test_sample_draws_the_same_token_as_the_dense_cumulative_sum():
    rng = np.random.default_rng(1)
    for _ in range(200):
        p = np.zeros(1000, dtype=np.float32)
        ids = rng.choice(1000, 7, replace=False)
        p[ids] = rng.random(7).astype(np.float32)
        p /= p.sum()
        seed = int(rng.integers(1 << 30))
        c = np.cumsum(p, dtype=np.float64)
        u = np.random.default_rng(seed).random() * c[-1]
        want = int(min(np.searchsorted(c, u, side="right"), p.shape[0] - 1))
        assert sampling.sample(p, np.random.default_rng(seed)) == want


def test_residual_equals_the_dense_formula():
    rng = np.random.default_rng(4)
    p = np.zeros(500, dtype=np.float32)
    q = np.zeros(500, dtype=np.float32)
    p[rng.choice(500, 20, replace=False)] = rng.random(20)
    q[rng.choice(500, 20, replace=False)] = rng.random(20)
    p /= p.sum()
    q /= q.sum()
    r = np.maximum(p.astype(np.float64) - q, 0.0)
    np.testing.assert_allclose(sampling.residual(p, q, 0), r / r.sum(), rtol=1e-6, atol=1e-9)
    tok = int(np.flatnonzero(p)[0])
    r1 = p.astype(np.float64).copy()
    r1[tok] = 0.0
    np.testing.assert_allclose(sampling.residual(p, None, tok), r1 / r1.sum(), rtol=1e-6, atol=1e-9)


def test_top2_gap():
    x = np.array([1.0, 5.0, 3.0, 5.0], dtype=np.float32)
    assert topk.top2_gap(x) == 0.0
    assert topk.top2_gap(np.array([2.0, -1.0, 0.5], dtype=np.float32)) == 1.5


def test_every_step_reports_its_host_share(pair):
    """A step's host time is its wall time minus every decode in it (draft and target):
    0 < share < 1, the decodes left out are exactly the step's draft, verify and replay
    seconds, the shares add up to the reply's, and the drafter's part is inside."""
    eng = pair
    params = SamplingParams(temperature=0.8, seed=3, max_tokens=24)
    recs, done = [], None
    for ev in eng.generate_tokens(eng.target_model.tokenize("hello world"), params,
                                  SpecConfig(mode=Mode.CHAIN, draft_max=3)):
        if isinstance(ev, Done):
            done = ev
        elif hasattr(ev, "record"):
            recs.append(ev.record)
    assert done is not None and recs
    for r in recs:
        assert r.step_s > 0 and 0.0 <= r.host_share < 1.0
        assert r.overhead_s <= r.step_s
        assert r.draft_host_s <= r.overhead_s + 1e-9
        decodes = r.step_s - r.overhead_s
        # Every decode is on one clock (Context.decode returns what it adds to it): the
        # step's decodes are its draft, verify and replay decodes, none of them host time.
        assert decodes == pytest.approx(r.draft_s + r.verify_s + r.replay_s, rel=0, abs=1e-9)
    s = done.stats
    assert s.step_s == pytest.approx(sum(r.step_s for r in recs))
    assert s.host_share == pytest.approx(sum(r.overhead_s for r in recs) / s.step_s)
    assert any(r.draft_host_s > 0 for r in recs if r.drafted)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**63 - 1), st.integers(0, 10**7),
       st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=50))
def test_gumbel_noise_keys_equal_the_vectorised_mix(seed, position, ids):
    """The per-position key in Python integers is bit for bit the numpy splitmix64."""
    arr = np.array(ids, dtype=np.int64)
    key = sampling._splitmix64(np.array([seed], dtype=np.uint64))
    key = sampling._splitmix64(key ^ np.uint64(position))
    h = sampling._splitmix64(key ^ arr.astype(np.uint64))
    u = ((h >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / 9007199254740992.0)
    np.testing.assert_array_equal(sampling.gumbel_noise(seed, position, arr), -np.log(-np.log(u)))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**63 - 1), st.integers(0, 10**7),
       st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=50))
def test_gumbel_noise_in_python_integers_equals_the_array_path(seed, position, ids):
    """A list of ids (the few-candidate path, in Python integers) gets the noise the
    array path gives (up to the last bit of a log: math.log against numpy's)."""
    got = sampling.gumbel_noise(seed, position, list(ids))
    want = sampling.gumbel_noise(seed, position, np.array(ids, dtype=np.int64))
    assert isinstance(got, list)
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=1e-15)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=300), st.lists(st.integers(0, 3), max_size=300))
def test_common_prefix_equals_a_token_by_token_walk(a, b):
    from specula.core.engine.native.prefix import common_prefix

    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    assert common_prefix(a, b) == i
    assert common_prefix(a, a + b) == len(a)
    assert common_prefix([*a, 9, *b], [*a, 8, *b]) == len(a)  # a long equal run, then one change


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=0, max_size=40))
def test_the_vectorised_mix_equals_python_integers_without_warnings(xs):
    """splitmix64 over uint64 arrays (no np.errstate: arrays wrap silently) and over a
    numpy scalar (which needs it) is, bit for bit, the mix in Python integers."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning would fail the test
        got = sampling._splitmix64(np.array(xs, dtype=np.uint64))
        for x in xs[:3]:
            assert int(sampling._splitmix64(np.uint64(x))) == sampling._splitmix64_int(x)
            assert int(sampling._splitmix64(np.array(x, dtype=np.uint64))) == sampling._splitmix64_int(x)
    assert [int(v) for v in got] == [sampling._splitmix64_int(x) for x in xs]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1e-300, 0.01, 0.2, 0.5, 1.0]), min_size=2, max_size=60),
       st.integers(0, 2**31 - 1), st.integers(0, 10**6))
def test_coupled_choice_is_the_gumbel_max_with_zero_probabilities_never_chosen(ps, seed, position):
    """The Gumbel-max choice, written plainly: log p (minus infinity at p = 0) plus the
    noise, the first of the largest scores; zero-probability candidates (an underflow of
    the transform) are never chosen. Up to 60 candidates: both the Python path (up to
    ``SMALL_CHOICE``) and the array path."""
    import math
    import warnings

    if not any(ps):
        ps[0] = 1.0
    p = np.array(ps) / sum(ps)
    ids = np.arange(100, 100 + len(ps), dtype=np.int64)
    g = sampling.gumbel_noise(seed, position, ids)
    scores = [(math.log(v) if v > 0 else -math.inf) + float(n) for v, n in zip(p, g, strict=True)]
    want = int(ids[scores.index(max(scores))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = sampling.coupled_choice(ids, p, seed, position)
    assert got == want and p[got - 100] > 0


@pytest.mark.parametrize("spec, reads", [
    (SpecConfig(mode=Mode.CHAIN, draft_max=3), False),
    (SpecConfig(mode=Mode.CHAIN, draft_max=3, p_min=0.3), True),
    (SpecConfig(mode=Mode.CHAIN, draft_max=3, relaxed_top_k=2), True),
])
def test_a_greedy_draft_computes_its_confidence_only_for_a_policy_that_reads_it(
        pair, monkeypatch, spec, reads):
    """A fixed greedy chain without a p_min cut or relaxed accepts reads no confidence: its
    draft takes the argmax alone (the exact features are an exp over the whole row per
    drafted token). The reply is the same either way (greedy identity, other tests)."""
    from specula.core.engine.drafters import model as draft_model

    calls = []
    real = draft_model.softmax_stats
    monkeypatch.setattr(draft_model, "softmax_stats",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    params = SamplingParams(temperature=0.0, max_tokens=24)
    prompt = pair.target_model.tokenize("hello world")
    (done,) = (ev for ev in pair.generate_tokens(prompt, params, spec) if isinstance(ev, Done))
    assert done.stats.drafted > 0
    assert bool(calls) is reads
    if not spec.lossy:
        (plain,) = (ev for ev in pair.generate_tokens(prompt, params, SpecConfig(mode=Mode.PLAIN))
                    if isinstance(ev, Done))
        assert done.token_ids == plain.token_ids


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 9), max_size=120), st.sampled_from([-1, 0, 1, 5, 64]),
       st.sampled_from([1.0, 1.3, 0.7]))
def test_the_repetition_penalty_reads_llama_cpps_window(history, last_n, penalty):
    """The last ``repeat_last_n`` tokens are penalised (0: none, -1: all of them), as
    llama.cpp's penalty_last_n: positive logits divided by the penalty, negative ones
    multiplied, each token once however often it came."""
    logits = np.linspace(-2.0, 2.0, 10).astype(np.float32)
    params = SamplingParams(temperature=0.8, repeat_penalty=penalty, repeat_last_n=last_n)
    window = [] if last_n == 0 else history if last_n < 0 else history[max(len(history) - last_n, 0):]
    want = [float(v) for v in logits]
    for t in set(window) if penalty != 1.0 else ():
        want[t] = want[t] / penalty if want[t] > 0 else want[t] * penalty
    np.testing.assert_allclose(sampling.apply_penalties(logits, history, params), want, rtol=1e-6)
    assert params.has_penalties == (penalty != 1.0 and last_n != 0)
    assert sampling.penalty_window(list(range(200)), params) == (
        [] if not params.has_penalties else list(range(200))[-last_n:] if last_n > 0 else list(range(200)))


def test_hybrid_steps_leave_out_exactly_their_decodes(families: dict[str, Path]) -> None:
    """On hybrid memory a verify carries the kept tokens a restore dropped (one decode,
    split between replay and verify): the decodes a step's host time leaves out are still
    exactly its draft, verify and replay seconds, on the one clock."""
    eng = make_engine(families["qwen35"], families["qwen35-draft"], n_ctx=512)
    try:
        params = SamplingParams(temperature=0.8, seed=5, max_tokens=48)
        recs = [ev.record for ev in eng.generate_tokens(
            eng.target_model.tokenize("hello world"), params, SpecConfig(mode=Mode.CHAIN, draft_max=4))
            if hasattr(ev, "record")]
    finally:
        eng.close()
    assert any(r.replay_s > 0 for r in recs)  # the case: owed tokens rode with a verify
    for r in recs:
        decodes = r.step_s - r.overhead_s
        assert decodes == pytest.approx(r.draft_s + r.verify_s + r.replay_s, rel=0, abs=1e-9)
