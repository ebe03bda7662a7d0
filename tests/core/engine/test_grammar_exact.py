"""Under rejection sampling with a grammar, the first tokens follow the masked target
distribution (chi-square against an independent reference), with the draft masked or
not; and the check has power: skipping the mask where a draft token is judged is caught.

The reference (``grammar_lang.masked_joint``) masks a fresh context's logits with a
hand-written language and applies the transform written in ``reference.py``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from specula.core.engine.engine import Engine
from specula.core.engine.events import StopReason
from specula.core.engine.grammar import state as G
from specula.core.engine.sampling import rules as sampling
from tests.core.engine.grammar_lang import LETTERS, masked_joint, pieces
from tests.core.engine.reference import (
    EOG,
    Cell,
    Chi2,
    FreshTarget,
    Transform,
    cell_of,
    chi2_test,
    exact_joint,
)
from tests.core.engine.sampling_runs import (
    ALPHA_PASS,
    ALPHA_POWER,
    Tally,
    params,
    prompt_of,
    reply,
    spec,
)

TOPK5 = Transform(temperature=0.8, top_k=5)
FLAT = Transform(temperature=1.3, top_k=20, min_p=0.01)  # many candidates, many forbidden
FORBIDDEN: Cell = (-2,)  # the cell of a reply that ended because a forbidden token came out


def run_check(label: str, eng: Engine, ref: FreshTarget, t: Transform, n: int, sc: Any,
              n_runs: int, rule: str = "rejection-sampling") -> tuple[Chi2, Tally]:
    prompt = prompt_of(eng, "zebra")
    expected = masked_joint(ref, prompt, t, n, pieces(ref), LETTERS)
    counts: Counter[Cell] = Counter()
    tally = Tally()
    for seed in range(n_runs):
        done = reply(eng, prompt, params(t, n, seed, rule, grammar=LETTERS.gbnf), sc, tally)
        if done.stop_reason is StopReason.ERROR:
            assert "not allowed by the grammar" in done.message, done.message
            counts[FORBIDDEN] += 1
            continue
        counts[cell_of(done.token_ids, n, done.stop_reason is StopReason.EOS)] += 1
    res = chi2_test(counts, expected)
    print(f"[{label}] {res} | {tally}")
    return res, tally


def test_reference_is_a_distribution_over_allowed_text(ref: FreshTarget, pair: Engine) -> None:
    """The masked law sums to one, spells only allowed text, and differs from the
    unconstrained one (the mask matters at these positions: the test can see it)."""
    toks = pieces(ref)
    prompt = prompt_of(pair, "zebra")
    joint = masked_joint(ref, prompt, FLAT, 3, toks, LETTERS)
    assert sum(joint.values()) == pytest.approx(1.0, abs=1e-9)
    for cell in joint:
        assert LETTERS.viable(b"".join(toks[t] for t in cell if t != EOG)), cell
    free = exact_joint(ref, prompt, FLAT, 3)
    outside = sum(p for c, p in free.items() if c not in joint)
    assert outside > 0.2, outside
    assert len(joint) > 50


@pytest.mark.parametrize("t", [TOPK5, FLAT], ids=["topk5", "flat"])
def test_rejection_chain_with_a_grammar(pair: Engine, ref: FreshTarget, t: Transform) -> None:
    res, tally = run_check("grammar, rejection chain k=2", pair, ref, t, 3,
                           spec("chain", draft_max=2), 2000)
    assert res.p_value > ALPHA_PASS, res
    assert 0.2 < tally.acceptance < 0.95, tally
    assert tally.max_accepted == 2


def test_rejection_chain_with_an_unmasked_draft(pair: Engine, ref: FreshTarget,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The draft may sample from its unconstrained q: forbidden proposals are rejected
    (p = 0) and the output law is unchanged (masking the draft only raises acceptance)."""
    monkeypatch.setattr(G, "draft_candidates", lambda state, logits, p: sampling.candidates(logits, p))
    res, tally = run_check("grammar, rejection chain k=2, unmasked draft", pair, ref, FLAT, 3,
                           spec("chain", draft_max=2), 2000)
    assert res.p_value > ALPHA_PASS, res
    assert tally.drafted > 1000


def test_coupled_chain_with_a_grammar(pair: Engine, ref: FreshTarget) -> None:
    res, tally = run_check("grammar, coupled chain k=2", pair, ref, FLAT, 3,
                           spec("chain", draft_max=2), 2000, rule="coupled")
    assert res.p_value > ALPHA_PASS, res
    assert tally.accepted > 200


def test_mask_skipped_for_draft_tokens_is_caught(pair: Engine, ref: FreshTarget,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """BUG: at drafted positions the draft token is judged against the unconstrained p
    (the grammar applied only where the target picks its own token)."""
    monkeypatch.setattr(G, "verify_probs", lambda state, logits, p: sampling.probs(logits, p))
    res, _ = run_check("BUG mask skipped for draft tokens", pair, ref, FLAT, 3,
                       spec("chain", draft_max=2), 1000)
    assert res.p_value < ALPHA_POWER, res


def test_mask_after_the_filters_for_draft_tokens_is_caught(pair: Engine, ref: FreshTarget,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """BUG: at drafted positions top-k/top-p run before the mask (the allowed tokens of the
    unconstrained candidates, renormalized): never a forbidden token, a wrong law."""
    def after(state: G.GrammarState, logits: Any, p: Any) -> Any:
        ids, pr = sampling.candidates(logits, p)
        ok = state.allowed(ids)
        if not ok.any():
            return G.target_probs(state, logits, p)
        return sampling.densify(ids[ok], pr[ok] / pr[ok].sum(), logits.shape[0])

    monkeypatch.setattr(G, "verify_probs", after)
    res, _ = run_check("BUG mask after the filters for draft tokens", pair, ref, FLAT, 3,
                       spec("chain", draft_max=2), 1500)
    assert res.impossible == 0
    assert res.p_value < ALPHA_POWER, res


def test_tree_with_a_grammar(pair: Engine, ref: FreshTarget) -> None:
    """Trees verify by sample-and-match under the rejection rule: masked at every node."""
    res, tally = run_check("grammar, tree depth 2", pair, ref, FLAT, 3,
                           spec("tree", draft_max=2, tree_budget=6, tree_width=2), 2000)
    assert res.p_value > ALPHA_PASS, res
    assert tally.max_accepted == 2

