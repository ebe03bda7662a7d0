"""The engine's words for "where from", "which rule" and "which mode" agree, and the
values that reach disk and the wire stay the ones already written there."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters.proposal import Proposal, TokenTree
from specula.core.engine.events import TokenEvent, TokenOrigin
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy, PlainPolicy, TreePolicy
from specula.core.engine.policy.lookup import LookupPolicy
from specula.core.engine.policy.mtp_choice import MTPPolicy
from specula.core.engine.sampling.rules import AcceptanceRule, Rule, SamplingParams
from specula.core.engine.stats import StepShape
from specula.core.engine.verify.chain import accept_chain
from specula.core.engine.verify.reply import ReplySampling


def test_saved_and_wire_values_are_unchanged() -> None:
    """One enum names where a token came from; the adaptive state file keys on its
    "draft" and "tree", the GUI's colours on all of them, the server and the footer on
    the acceptance rule's text."""
    assert [o.value for o in TokenOrigin] == [
        "target", "draft", "tree", "lookup", "ngram-cache", "mtp", "relaxed"]
    assert not hasattr(TokenOrigin, "NONE")  # one name per origin: a plain step's plan is TARGET
    assert {r.value for r in AcceptanceRule} == {
        "greedy", "coupled", "rejection-sampling", "sample-and-match"}


def test_values_written_before_still_read() -> None:
    """Step records and state files written before plain steps were "target" said
    "none"; every other value read back is the member it was written from."""
    assert TokenOrigin("none") is TokenOrigin.TARGET
    for old, origin in {"target": TokenOrigin.TARGET, "draft": TokenOrigin.CHAIN,
                        "tree": TokenOrigin.TREE, "lookup": TokenOrigin.LOOKUP,
                        "mtp": TokenOrigin.MTP}.items():
        assert TokenOrigin(old) is origin
    with pytest.raises(ValueError):
        TokenOrigin("chain")


def test_an_old_adaptive_state_file_keeps_its_shape_rates(tmp_path: Path) -> None:
    """A state file saved before the one enum (its shape rates keyed "draft" and "tree",
    written here as text) loads, and the policy finds the rates under the keys it
    writes for a chain and a tree step."""
    saved = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE))
    saved.acc.first_rate = 0.8
    state = saved.to_dict()
    state["shape_rate"] = {"draft": 0.7, "tree": 0.4}
    path = tmp_path / "adaptive.json"
    path.write_text(json.dumps(state), "utf-8")
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE))
    pol.load(path)
    assert pol.shape_rate[TokenOrigin.CHAIN.value] == 0.7
    assert pol.shape_rate[TokenOrigin.TREE.value] == 0.4
    assert pol.to_dict()["shape_rate"] == {"draft": 0.7, "tree": 0.4}


def test_one_origin_from_a_proposal_to_its_tokens_and_its_shape() -> None:
    """A proposal's accepted tokens carry its drafter's origin, but a lookup the n-gram
    cache made (match code CACHE_MATCH + n) carries NGRAM_CACHE; the shape is what the
    step verified, whatever the origin."""
    expected = {  # (drafter asked, match code) -> origin of its accepted tokens
        (TokenOrigin.CHAIN, 0): TokenOrigin.CHAIN,
        (TokenOrigin.TREE, 0): TokenOrigin.TREE,
        (TokenOrigin.LOOKUP, 2): TokenOrigin.LOOKUP,
        (TokenOrigin.LOOKUP, 7): TokenOrigin.LOOKUP,  # a long copy of the conversation
        (TokenOrigin.LOOKUP, 10): TokenOrigin.NGRAM_CACHE,
        (TokenOrigin.LOOKUP, 12): TokenOrigin.NGRAM_CACHE,
        (TokenOrigin.MTP, 0): TokenOrigin.MTP,
    }
    for (src, code), origin in expected.items():
        prop = Proposal(tokens=[5], source=src, match_len=code)
        assert prop.token_source is origin
        assert prop.shape is StepShape.CHAIN
        assert Proposal(source=src).shape is StepShape.PLAIN
    assert Proposal().source is TokenOrigin.TARGET and Proposal().token_source is TokenOrigin.TARGET
    assert Proposal(tokens=[5], source=TokenOrigin.TREE, tree=TokenTree()).shape is StepShape.TREE


class _Rows:
    """The target's rows after a verify decode (row i: after the first i drafted tokens)."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    def logits(self, i: int) -> np.ndarray:
        return self.rows[i]


def test_a_relaxed_acceptance_is_an_origin_of_its_own() -> None:
    """Drafted tokens the target's greedy choice rejects but its top 2 holds are kept by
    the lossy rule: their origin is RELAXED, the agreed one keeps the drafter's, the
    target's own token ends the step, and the counts follow the origins."""
    rows = np.zeros((4, 8), dtype=np.float32)
    for i, (best, second) in enumerate([(1, 2), (3, 4), (5, 6), (7, 0)]):
        rows[i, best], rows[i, second] = 2.0, 1.0
    prop = Proposal(source=TokenOrigin.LOOKUP)
    for tok in (1, 4, 6):  # agrees, then the second choice twice
        prop.append(tok, None, 1.0, 1.0, 0.0)
    reply = ReplySampling(SamplingParams(), SpecConfig(relaxed_top_k=2), seed=1)
    res = accept_chain(_Rows(rows), prop, [0], reply)  # type: ignore[arg-type]
    assert res.tokens == ((1, TokenOrigin.LOOKUP, 1.0), (4, TokenOrigin.RELAXED, 1.0),
                          (6, TokenOrigin.RELAXED, 1.0), (7, TokenOrigin.TARGET, None))
    assert res.accepted == 3 and res.relaxed == 2
    assert TokenEvent(4, "x", TokenOrigin.RELAXED, 1.0, 0).relaxed
    assert not TokenEvent(1, "x", TokenOrigin.LOOKUP, 1.0, 0).relaxed


def test_the_acceptance_rule_a_reply_uses() -> None:
    def rule(**kw: object) -> AcceptanceRule:
        return SamplingParams(**kw).acceptance_rule  # type: ignore[arg-type]

    assert rule(temperature=0.0) is AcceptanceRule.GREEDY
    assert rule(temperature=0.0, rule=Rule.REJECTION) is AcceptanceRule.GREEDY
    assert rule(temperature=0.7, rule=Rule.COUPLED) is AcceptanceRule.COUPLED
    assert rule(temperature=0.7, rule=Rule.REJECTION) is AcceptanceRule.REJECTION
    assert rule(temperature=0.7, rule=Rule.REJECTION, repeat_penalty=1.1) is AcceptanceRule.SAMPLE_AND_MATCH
    assert rule(temperature=0.7, rule=Rule.COUPLED, repeat_penalty=1.1) is AcceptanceRule.COUPLED


def test_each_policy_is_named_after_its_mode() -> None:
    cfg = SpecConfig()
    assert PlainPolicy(cfg).name == Mode.PLAIN.value
    assert ChainPolicy(cfg).name == Mode.CHAIN.value
    assert TreePolicy(cfg).name == Mode.TREE.value
    assert MTPPolicy(cfg).name == Mode.MTP.value
    assert AdaptivePolicy(cfg).name == Mode.ADAPTIVE.value
    lookup = LookupPolicy(SpecConfig(mode=Mode.LOOKUP))
    assert lookup.name == Mode.LOOKUP.value
    assert lookup.wants == frozenset({TokenOrigin.LOOKUP})
