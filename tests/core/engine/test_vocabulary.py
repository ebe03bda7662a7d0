"""The engine's words for "where from", "which rule" and "which mode" agree, and the
values that reach disk and the wire stay the ones already written there."""

from __future__ import annotations

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters.proposal import DraftSource, Proposal, TokenTree
from specula.core.engine.events import Source
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import ChainPolicy, PlainPolicy, TreePolicy
from specula.core.engine.policy.lookup import LookupPolicy
from specula.core.engine.policy.mtp_choice import MTPPolicy
from specula.core.engine.sampling.rules import AcceptanceRule, Rule, SamplingParams
from specula.core.engine.stats import StepShape


def test_saved_and_wire_values_are_unchanged() -> None:
    """Adaptive state files key on DraftSource values, the GUI on Source values, the
    server and the footer on the acceptance rule's text."""
    assert {s.value for s in DraftSource} == {"none", "draft", "tree", "lookup", "mtp"}
    assert {s.value for s in Source} == {"target", "draft", "lookup", "mtp"}
    assert {r.value for r in AcceptanceRule} == {
        "greedy", "coupled", "rejection-sampling", "sample-and-match"}


def test_one_mapping_from_a_proposal_to_its_tokens_and_its_shape() -> None:
    expected = {  # (token source, shape of a non-empty chain proposal)
        DraftSource.NONE: Source.TARGET,
        DraftSource.CHAIN: Source.DRAFT,
        DraftSource.TREE: Source.DRAFT,
        DraftSource.LOOKUP: Source.LOOKUP,
        DraftSource.MTP: Source.MTP,
    }
    for src, token_source in expected.items():
        assert src.token_source is token_source
        prop = Proposal(tokens=[5], source=src)
        assert prop.token_source is token_source
        assert prop.shape is StepShape.CHAIN
        assert Proposal(source=src).shape is StepShape.PLAIN
    assert Proposal(tokens=[5], source=DraftSource.TREE, tree=TokenTree()).shape is StepShape.TREE


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
    assert lookup.wants == frozenset({DraftSource.LOOKUP})
