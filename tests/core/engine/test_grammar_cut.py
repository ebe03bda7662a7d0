"""A cut settled without the whole vocabulary equals the full computation, over random
logits and grammar states; and the settled path is taken often enough to matter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.grammar import state as G
from specula.core.engine.native.llama import Model
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.grammar_lang import LETTERS, SMALL_GBNF

SCHEMA = G.json_schema_grammar({"type": "object", "properties": {
    "a": {"type": "integer"}, "b": {"enum": ["lorem", "zebra"]}, "c": {"type": "boolean"}}})
SETTINGS = [
    SamplingParams(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05),
    SamplingParams(temperature=1.2, top_k=20, top_p=0.5, min_p=0.0),
    SamplingParams(temperature=0.7, top_k=60, top_p=1.0, min_p=0.1),
    SamplingParams(temperature=1.0, top_k=10, top_p=0.99, min_p=0.0),
]


def full(state: G.GrammarState, logits: np.ndarray, params: SamplingParams) -> tuple[np.ndarray, np.ndarray]:
    """The definition itself: forbidden logits at -inf over the whole vocabulary."""
    from specula.core.engine.sampling import rules as sampling

    x = np.full_like(logits, -np.inf)
    ok = state.allowed(np.arange(logits.shape[0]))
    x[ok] = logits[ok]
    k = min(params.top_k, int(ok.sum()))
    ids, p = sampling.candidates(np.ascontiguousarray(x[ok]), params)
    allowed = np.flatnonzero(ok)
    assert k >= 1
    return allowed[ids], p


@pytest.mark.parametrize("text", [G.JSON_OBJECT_GRAMMAR, SCHEMA, LETTERS.gbnf, SMALL_GBNF])
def test_settled_cut_equals_the_full_computation(tiny: dict[str, Path], text: str) -> None:
    model = Model(tiny["target"], vocab_only=True)
    rng = np.random.default_rng(7)
    st = G.GrammarState.open(model.vocab, model.n_vocab, text, owner=model)
    compared = 0
    try:
        for _step in range(10):
            for params in SETTINGS:
                for scale in (1.0, 4.0, 12.0):
                    logits = (rng.standard_normal(model.n_vocab) * scale).astype(np.float32)
                    ids, p = st.candidates(logits, params)
                    want_ids, want_p = full(st, logits, params)
                    a, b = np.argsort(ids), np.argsort(want_ids)
                    assert np.array_equal(ids[a], want_ids[b]), (params, scale)
                    assert np.allclose(p[a], want_p[b], atol=1e-9)
                    compared += 1
            moves = [t for t in st.allowed_all(model.n_vocab).tolist() if not model.is_eog(t)]
            if not moves:
                break
            st.advance(int(rng.choice(moves)))
        assert compared >= 24
    finally:
        st.close()


def test_the_settled_path_is_taken(tiny: dict[str, Path]) -> None:
    """After '{' JSON allows a handful of tokens (fewer than top-k): peaked logits settle
    the cut from the best few; flat ones need the whole vocabulary."""
    model = Model(tiny["target"], vocab_only=True)
    st = G.GrammarState.open(model.vocab, model.n_vocab, G.JSON_OBJECT_GRAMMAR, owner=model)
    try:
        st.advance(model.tokenize("{", add_special=False)[0])
        n_allowed = int(st.allowed(np.arange(model.n_vocab)).sum())
        assert n_allowed < 40
        rng = np.random.default_rng(0)
        allowed = np.flatnonzero(st.allowed(np.arange(model.n_vocab)))
        for _ in range(20):
            logits = rng.standard_normal(model.n_vocab).astype(np.float32)
            logits[rng.choice(allowed)] += 12.0  # the model is sure of one allowed token
            st.candidates(logits, SETTINGS[0])
        assert st.settled >= 15, st.settled
    finally:
        st.close()
