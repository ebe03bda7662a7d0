"""Lookup, adaptive and relaxed modes: greedy identity where exact, counted loss where not."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from specula.core import paths
from specula.core.engine.config import DEFAULT_MODE, Mode, SpecConfig
from specula.core.engine.drafters import LookupDrafter
from specula.core.engine.events import Done, TokenEvent, TokenOrigin
from specula.core.engine.policy.adaptive import RECHECK_EVERY, AdaptivePolicy
from specula.core.engine.policy.fixed import Outcome, Plan, PlanInput, StaticPolicy
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import StepRecord
from tests.core.engine.conftest import PLAIN, make_engine, run

GREEDY = SamplingParams(max_tokens=64)
ALL = frozenset({TokenOrigin.CHAIN, TokenOrigin.TREE, TokenOrigin.LOOKUP})
PROMPTS = ["hello world", "the code and the model and the code and the model", "def print self"]


def test_lookup_match_prefers_longest_recent() -> None:
    lk = LookupDrafter(ngram_max=3, ngram_min=1)
    seq = [1, 2, 3, 9, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3]
    # the trigram 1 2 3 occurred twice before; the most recent occurrence continues with 7 8
    assert lk.match(seq, 2) == ([7, 8], 3)
    assert lk.match([4, 5, 6], 3) == ([], 0)
    assert lk.match([5, 6, 5], 2) == ([6, 5], 1)


def test_lookup_and_adaptive_are_exact(tiny: dict[str, Path]) -> None:
    with_draft = make_engine(tiny["target"], tiny["draft"])
    target_only = make_engine(tiny["target"])
    for prompt in PROMPTS:
        plain, _ = run(with_draft, prompt, GREEDY, PLAIN)
        for eng in (with_draft, target_only):
            for mode in (Mode.LOOKUP, Mode.ADAPTIVE):
                done, _events = run(eng, prompt, GREEDY, SpecConfig(mode=mode, draft_max=4))
                assert done.token_ids == plain.token_ids, (prompt, mode)
                assert done.stats.mode == mode.value
    with_draft.close()
    target_only.close()


class _AlwaysLookup(StaticPolicy):
    """Propose every lookup match: what the drafter predicts, with no timing deciding."""

    name = "lookup"
    wants = frozenset({TokenOrigin.LOOKUP})

    def plan(self, inp: PlanInput) -> Plan:
        if not inp.lookup_tokens:
            return Plan(TokenOrigin.TARGET, 0)
        return Plan(TokenOrigin.LOOKUP, len(inp.lookup_tokens), lookup_tokens=inp.lookup_tokens)


def test_lookup_predicts_a_loop(tiny: dict[str, Path]) -> None:
    """A random model loops; lookup predicts its own repetition, and output stays plain's.

    The lookup mode's own policy weighs measured step times, so this drives the drafter
    with a policy that always proposes (the mode's choice is tested with a fake clock in
    test_adaptive_rechecks*.py)."""
    eng = make_engine(tiny["target"])
    gen = eng.generator
    assert gen is not None
    params = replace(GREEDY, max_tokens=200)
    prompt = eng.tokenize_chat([{"role": "user", "content": PROMPTS[1]}])
    spec = SpecConfig(mode=Mode.LOOKUP)
    plain, _ = run(eng, prompt, params, PLAIN)
    events = list(gen.generate(prompt, params, spec, _AlwaysLookup(spec)))
    done = events[-1]
    assert isinstance(done, Done)
    assert done.token_ids == plain.token_ids
    assert done.stats.accepted > 20
    assert any(isinstance(e, TokenEvent) and e.source is TokenOrigin.LOOKUP for e in events)
    eng.close()


def _outcome(source: str, drafted: int, accepted: int, verify_s: float, draft_s: float,
             p_top: float = 0.9) -> Outcome:
    rec = StepRecord(0, drafted, accepted, accepted + 1, draft_s, verify_s, 0.0,
                     draft_decodes=max(drafted, 1) if source == "draft" else 0, catchup=1)
    return Outcome(TokenOrigin(source), [p_top] * drafted, [0.3] * drafted, accepted, 0, rec)


def _train(pol: AdaptivePolicy, v1: float, per_token_verify: float, t_draft: float, accept: float) -> None:
    """Feed the policy steps as a machine with these costs and this acceptance would."""
    for _ in range(30):
        pol.observe(_outcome("none", 0, 0, v1, 0.0))
        for k in (1, 2, 3, 4):
            acc = round(accept * k)
            pol.observe(_outcome("draft", k, acc, v1 + per_token_verify * k, t_draft * k))


def test_adaptive_drafts_only_where_it_pays() -> None:
    inp = PlanInput(room=8, available=ALL, lookup_tokens=[], lookup_match=0)
    cheap = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(cheap, v1=0.170, per_token_verify=0.012, t_draft=0.040, accept=0.9)  # memory-bound target
    assert cheap.plan(inp).source == "draft"
    assert cheap.draft_rate(4)[1] == 4  # the best length when verify is nearly free
    costly = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(costly, v1=0.030, per_token_verify=0.015, t_draft=0.018, accept=0.6)  # compute-bound target
    plans = []
    synced = 0
    for _reply in range(40):
        synced += costly.sync_draft_at_prefill()
        lag = 1
        for _ in range(20):
            plan = costly.plan(replace(inp, draft_lag=lag))
            plans.append(plan.source)
            if plan.source == "draft":
                costly.observe(_outcome("draft", plan.k, 1, 0.030 + 0.015 * plan.k, 0.018 * plan.k))
                lag = 1
            else:
                costly.observe(_outcome("none", 0, 0, 0.030, 0.0))
                lag += 1
    # plain but for the re-checks: even at 100% acceptance this draft would lose (4 x 18 ms +
    # 90 ms for 5 tokens against 30 ms per token), so only every RECHECK_EVERY-th reply drafts,
    # one step that re-times the costs that say so (test_adaptive_rechecks.py)
    assert synced == 40 // RECHECK_EVERY
    assert plans.count("draft") == synced


def test_adaptive_cuts_unlikely_tokens() -> None:
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.170, per_token_verify=0.012, t_draft=0.040, accept=0.9)
    pol.plan(PlanInput(room=8, available=ALL, lookup_tokens=[], lookup_match=0))
    assert pol.keep_drafting(0, 0.99, 0.05) == (True, True)
    keep, _ = pol.keep_drafting(1, 0.05, 4.0)  # a token the draft itself doubts
    assert keep is False


def test_adaptive_measures_each_length_then_uses_the_curve() -> None:
    """Verify time can jump between batch sizes; each length is timed before it is trusted."""
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    inp = PlanInput(room=8, available=ALL, lookup_tokens=[], lookup_match=0)
    timing = {1: 0.25, 2: 0.25, 3: 0.26, 4: 0.27, 5: 0.45}  # F16-like: flat, then a jump at 5
    pol.observe(_outcome("none", 0, 0, timing[1], 0.0))
    seen = []
    for _ in range(20):
        plan = pol.plan(inp)
        seen.append((plan.source, plan.k))
        k = plan.k if plan.source == "draft" else 0
        pol.observe(_outcome("draft" if k else "none", k, round(0.9 * k), timing[k + 1], 0.05 * k))
    assert {k for src, k in seen[:12] if src == "draft"} == {1, 2, 3, 4}  # each length timed
    assert pol.cost.verify_time(5) == pytest.approx(0.45, rel=0.05)
    assert pol.draft_rate(4)[1] == 3  # 3 drafts + pending = 4 tokens, before the jump


def test_adaptive_prefers_long_lookup_matches() -> None:
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.170, per_token_verify=0.012, t_draft=0.040, accept=0.6)
    for _ in range(20):
        rec = StepRecord(0, 4, 4, 5, 0.0, 0.2, 0.0)
        pol.observe(Outcome(TokenOrigin.LOOKUP, [1.0] * 4, [0.0] * 4, 4, 3, rec))
    plan = pol.plan(PlanInput(room=8, available=ALL, lookup_tokens=[5, 6, 7, 8], lookup_match=3))
    assert plan.source == "lookup" and plan.lookup_tokens == [5, 6, 7, 8]


def test_adaptive_state_persists_per_pair(tiny: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    # timings read as quiet whatever else this machine runs (erratic ones are not saved:
    # test_adaptive_busy_machine.py)
    monkeypatch.setattr("specula.core.engine.policy.cost_model.ERRATIC_DEV", float("inf"))
    monkeypatch.setattr("specula.core.engine.loop.calibration._disagree", lambda a, b: False)
    eng = make_engine(tiny["target"], tiny["draft"])
    spec = SpecConfig(mode=Mode.ADAPTIVE, draft_max=4)
    run(eng, PROMPTS[0], GREEDY, spec)
    files = list((paths.data_dir() / "adaptive").glob("*.json"))
    assert len(files) == 1
    state = json.loads(files[0].read_text())
    assert state["verify"] and state["draft"] is not None
    eng.close()
    eng2 = make_engine(tiny["target"], tiny["draft"])
    pol = eng2.policy_for(spec)
    assert isinstance(pol, AdaptivePolicy) and pol.cost.verify == {int(k): v for k, v in state["verify"].items()}
    eng2.close()


def test_relaxed_acceptance_is_counted(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"])
    exact, _ = run(eng, PROMPTS[2], GREEDY, SpecConfig(mode=Mode.CHAIN, draft_max=4))
    lossy_spec = SpecConfig(mode=Mode.CHAIN, draft_max=4, relaxed_top_k=3)
    assert lossy_spec.lossy and not exact.stats.relaxed_accepted
    lossy, events = run(eng, PROMPTS[2], GREEDY, lossy_spec)
    assert lossy.stats.relaxed_accepted > 0
    assert lossy.stats.acceptance_rate > exact.stats.acceptance_rate
    assert sum(e.relaxed for e in events) == lossy.stats.relaxed_accepted
    eng.close()


def test_adaptive_tries_a_tree_and_keeps_the_faster_shape() -> None:
    # a chain accepting 60%: a tree's best case (5 tokens in 4 x 40 + 266 ms) beats its rate
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=8))
    _train(pol, v1=0.170, per_token_verify=0.012, t_draft=0.040, accept=0.6)
    inp = PlanInput(room=8, available=ALL, lookup_tokens=[], lookup_match=0)
    pol.draft_steps = 40  # the chain has run a while this session
    assert pol.plan(inp).source == "tree"  # never measured, and it could win: try it
    slow_tree = StepRecord(0, 8, 2, 3, 0.2, 0.4, 0.0)
    for _ in range(10):
        pol.observe(Outcome("tree", [], [], 2, 0, slow_tree))
    shapes = [pol.plan(inp).source for _ in range(31)]
    assert shapes.count("draft") == 31 - shapes.count("tree") and shapes.count("tree") <= 2


def test_adaptive_is_the_default() -> None:
    from specula.cli import build_parser
    from specula.commands._engine_args import spec_config
    from specula.core.settings import Settings

    assert Settings().speculative.to_spec().mode is Mode.ADAPTIVE is DEFAULT_MODE
    assert SpecConfig().mode is DEFAULT_MODE
    args = build_parser().parse_args(["chat", "--model", "t.gguf"])
    assert spec_config(args, has_draft=True).mode is Mode.ADAPTIVE
