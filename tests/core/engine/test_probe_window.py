"""A probe of the draft reads a window of a long conversation, not the whole of it.

Adaptive pauses a draft that does not pay and probes it now and then; the draft is
not fed while paused, so a probe in a long chat had to catch it up on everything
said since it last drafted (thousands of tokens: seconds of a CPU's time, in one
reply). A probe now feeds the draft at most ``PROBE_WINDOW`` tokens past what its
cache holds (``DraftModel.begin(window=...)``). The expected cache contents are
slices of the conversation written out here; the catch-up sizes come from a log of
every draft ``llama_decode`` (independent of the drafter's bookkeeping); the
replies are compared with plain decoding's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters import ChainDrafter, DraftModel, DraftRequest
from specula.core.engine.drafters.model import SINK
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, StepEvent, TokenOrigin
from specula.core.engine.policy import probe_cadence
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import DraftPolicy, Plan, PlanInput, StaticPolicy
from specula.core.engine.policy.rates import SHORT_ANSWER
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import StepRecord
from specula_tools import agreement_trace
from tests.core.engine.conftest import logged_decodes, make_engine
from tests.core.engine.test_modes import _train

GREEDY = SamplingParams(temperature=0.0, max_tokens=24)
LONGER = SamplingParams(temperature=0.0, max_tokens=SHORT_ANSWER + 16)  # outgrows a short answer
CONV = [1, *((i * 7) % 90 + 10 for i in range(600))]  # a conversation of 601 token ids


@pytest.fixture(scope="module")
def pair(tiny: dict[str, Path]) -> Iterator[Engine]:
    eng = make_engine(tiny["target"], tiny["draft"], n_ctx=2048)
    yield eng
    eng.close()


def _model(eng: Engine) -> DraftModel:
    gen = eng.generator
    assert gen is not None and gen.draft_model is not None
    gen.reset()
    return gen.draft_model


def _request(committed: list[int], k: int) -> DraftRequest:
    return DraftRequest(committed=committed, k=k, params=GREEDY, seed=0, rng=np.random.default_rng(0),
                        keep=lambda i, p, e: (True, True), confidence=False)


def test_a_probe_keeps_what_the_draft_holds_and_reads_the_tail(pair: Engine) -> None:
    dm = _model(pair)
    dm.begin(CONV[:100], sync=True)  # the draft drafted in a reply 99 tokens into the chat
    assert dm.kv.tokens == CONV[:99]
    dm.begin(CONV, sync=True, window=32)  # a probe 500 tokens later
    assert dm.kv.tokens == CONV[:99] + CONV[-33:-1]  # the pending token comes with the step
    assert dm.lag(CONV) == 1
    # a step on that view: the drafted token the target kept and its own follow the window
    drafter = ChainDrafter(dm)
    prop = drafter.propose(_request(CONV, 3))
    assert len(prop) == 3 and not dm.stopped
    committed = [*CONV, prop.tokens[0], 77]
    drafter.accept(committed, 1)
    # the view: the window and the kept drafted token (the draft fed it), not the rejected one
    assert dm.kv.tokens == CONV[:99] + committed[-35:-1]
    assert dm.lag(committed) == 1  # the next step feeds the target's token
    # the next reply sees the whole conversation again: the prefix before the skipped
    # stretch is kept, the rest is owed (fed when the policy next drafts)
    nxt = [*committed, 5, 6, 7]
    dm.begin(nxt, sync=False)
    assert dm.lag(nxt) == len(nxt) - 99
    dm.catch_up(nxt)
    assert dm.kv.tokens == nxt


def test_an_empty_draft_reads_the_chat_s_first_tokens_and_a_short_lag_is_fed_whole(
    pair: Engine,
) -> None:
    dm = _model(pair)
    dm.begin(CONV, sync=True, window=32)
    assert dm.kv.tokens == CONV[:SINK] + CONV[-33:-1]
    dm = _model(pair)
    dm.begin(CONV[:37], sync=True, window=32)  # 36 tokens to feed: the window and the sink
    assert dm.kv.tokens == CONV[:36]
    dm = _model(pair)
    dm.begin(CONV, sync=True)  # no window (a fixed mode): the whole conversation
    assert dm.kv.tokens == CONV[:-1]


@pytest.mark.parametrize("n", [30, 37, 38, 601])
def test_the_agreement_trace_reads_the_view_the_engine_drafts_on(pair: Engine, n: int) -> None:
    """``agreement_trace --windows`` measures the draft on a probe's view: the cache an
    empty draft holds after a windowed probe, and the pending token its first step feeds."""
    dm = _model(pair)
    dm.begin(CONV[:n], sync=True, window=32)
    assert agreement_trace.window_view(CONV[:n], 32) == [*dm.kv.tokens, CONV[n - 1]]


class _Windowed(StaticPolicy):
    """Syncs the draft at prefill with a window, then drafts ``source`` every step."""

    name = "windowed"

    def __init__(self, source: TokenOrigin, window: int) -> None:
        super().__init__(SpecConfig(mode=Mode.CHAIN, draft_max=3, tree_budget=6))
        self.wants = frozenset({source})
        self.source = source
        self.window = window

    def plan(self, inp: PlanInput) -> Plan:
        k = min(3 if self.source is TokenOrigin.CHAIN else 6, inp.room)
        return Plan(self.source, k) if self.source in inp.available else Plan(TokenOrigin.TARGET, 0)

    def sync_draft_at_prefill(self) -> bool:
        return True

    def sync_window(self) -> int | None:
        return self.window


def _long_prompt(eng: Engine) -> list[int]:
    story = " ".join(f"The robot painted wave number {i} in blue and silver." for i in range(16))
    prompt = eng.tokenize_chat([{"role": "user", "content": story},
                                {"role": "assistant", "content": "It is a long story."},
                                {"role": "user", "content": "Tell it again, shorter."}])
    assert 600 < len(prompt) < 1500, len(prompt)
    return prompt


def _reply(eng: Engine, prompt: list[int], policy: DraftPolicy, monkeypatch: pytest.MonkeyPatch,
           params: SamplingParams = GREEDY) -> tuple[Done, list[StepRecord], list[int]]:
    """One reply with empty caches; (Done, its step records, batch sizes of draft decodes)."""
    _model(eng)
    gen = eng.generator
    assert gen is not None
    spec: SpecConfig = getattr(policy, "cfg", SpecConfig(mode=Mode.PLAIN))
    with logged_decodes(eng, monkeypatch) as decodes:
        events = list(gen.generate(prompt, params, spec, policy))
    done = events[-1]
    assert isinstance(done, Done)
    return done, [e.record for e in events if isinstance(e, StepEvent)], \
        [n for who, n, _ in decodes if who == "draft"]


@pytest.mark.parametrize("source", [TokenOrigin.CHAIN, TokenOrigin.TREE], ids=["chain", "tree"])
def test_drafting_on_a_window_keeps_the_reply_exact(
    pair: Engine, source: TokenOrigin, monkeypatch: pytest.MonkeyPatch,
) -> None:
    prompt = _long_prompt(pair)
    plain, _, _ = _reply(pair, prompt, pair.policy_for(SpecConfig(mode=Mode.PLAIN)), monkeypatch)
    done, recs, feeds = _reply(pair, prompt, _Windowed(source, 24), monkeypatch)
    assert done.token_ids == plain.token_ids
    steps = [r for r in recs if r.source == source.value]
    assert steps and sum(r.accepted for r in steps) > 0, [r.source for r in recs]
    assert max(feeds) <= 24 + SINK  # the catch-up read the window, not the 600-token prompt
    assert done.stats.draft_catchup_tokens <= 24 + SINK


def test_an_adaptive_probe_in_a_long_chat_feeds_the_draft_a_window(
    pair: Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new pair's first reply probes the draft; in a long chat it reads PROBE_WINDOW tokens.
    Power: without the window the same probe feeds the whole prompt."""
    prompt = _long_prompt(pair)
    assert len(prompt) > 2 * probe_cadence.PROBE_WINDOW + SINK
    plain, _, _ = _reply(pair, prompt, pair.policy_for(SpecConfig(mode=Mode.PLAIN)), monkeypatch)
    spec = SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0)
    done, _, feeds = _reply(pair, prompt, AdaptivePolicy(spec), monkeypatch)
    assert done.token_ids == plain.token_ids
    assert done.stats.drafted > 0  # the probe drafted
    assert sum(n for n in feeds if n > 2) <= probe_cadence.PROBE_WINDOW + SINK
    monkeypatch.setattr(probe_cadence, "PROBE_WINDOW", None)
    whole, _, feeds = _reply(pair, prompt, AdaptivePolicy(spec), monkeypatch)
    assert whole.token_ids == plain.token_ids
    assert sum(n for n in feeds if n > 2) >= len(prompt) - 1


def _due_for_a_recheck(spec: SpecConfig) -> AdaptivePolicy:
    """A pair whose costs say no chain could pay even at 100% acceptance (a draft decode as
    dear as a target step), paused, one reply short of its re-check (test_modes._train)."""
    pol = AdaptivePolicy(spec)
    _train(pol, v1=0.030, per_token_verify=0.015, t_draft=0.030, accept=0.6)
    v1 = pol.cost.verify_time(1)
    assert v1 is not None and not pol.could_pay(v1)
    for _ in range(probe_cadence.RECHECK_EVERY - 1):
        assert not pol.sync_draft_at_prefill()
    return pol


def test_a_recheck_of_a_draft_that_could_not_pay_re_times_it_on_a_few_tokens(
    pair: Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The re-check feeds the draft RETIME_WINDOW tokens and drafts one token, once, and the
    reply is plain's. Power: without the window the re-time feeds the whole prompt."""
    prompt = _long_prompt(pair)
    plain, _, _ = _reply(pair, prompt, pair.policy_for(SpecConfig(mode=Mode.PLAIN)), monkeypatch, LONGER)
    spec = SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0)
    done, recs, feeds = _reply(pair, prompt, _due_for_a_recheck(spec), monkeypatch, LONGER)
    assert done.token_ids == plain.token_ids
    assert [r.drafted for r in recs if r.source == TokenOrigin.CHAIN.value] == [1]
    assert sum(n for n in feeds if n > 2) <= probe_cadence.RETIME_WINDOW + SINK
    assert done.stats.draft_catchup_tokens <= probe_cadence.RETIME_WINDOW + SINK
    monkeypatch.setattr(probe_cadence, "RETIME_WINDOW", None)
    whole, _, feeds = _reply(pair, prompt, _due_for_a_recheck(spec), monkeypatch, LONGER)
    assert whole.token_ids == plain.token_ids
    assert sum(n for n in feeds if n > 2) >= len(prompt) - 1


def test_a_re_time_waits_for_the_reply_to_outgrow_a_short_answer(
    pair: Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A re-time feeds the draft once the reply has SHORT_ANSWER tokens: a shorter reply feeds
    it nothing and drafts nothing, and the re-time runs in the next reply, after that many
    tokens. Power: a re-time that feeds the draft after the first token, as before, feeds it
    in the short reply."""
    prompt = _long_prompt(pair)
    spec = SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0)
    short = SamplingParams(temperature=0.0, max_tokens=SHORT_ANSWER - 4)
    pol = _due_for_a_recheck(spec)
    done, recs, feeds = _reply(pair, prompt, pol, monkeypatch, short)
    assert (feeds, done.stats.draft_catchup_tokens) == ([], 0)
    assert not [r for r in recs if r.source == TokenOrigin.CHAIN.value]
    done, recs, feeds = _reply(pair, prompt, pol, monkeypatch, LONGER)
    chain = [i for i, r in enumerate(recs) if r.source == TokenOrigin.CHAIN.value]
    assert [recs[i].drafted for i in chain] == [1] and feeds
    assert sum(r.emitted for r in recs[:chain[0]]) >= SHORT_ANSWER
    monkeypatch.setattr(AdaptivePolicy, "sync_after", lambda self: 0)
    done, recs, feeds = _reply(pair, prompt, _due_for_a_recheck(spec), monkeypatch, short)
    assert feeds and [r.drafted for r in recs if r.source == TokenOrigin.CHAIN.value] == [1]


def _generate(eng: Engine, prompt: list[int], policy: DraftPolicy) -> Done:
    """One reply on what the engine's caches hold (the conversation continues)."""
    gen = eng.generator
    assert gen is not None
    spec: SpecConfig = getattr(policy, "cfg", SpecConfig(mode=Mode.PLAIN))
    done = list(gen.generate(prompt, GREEDY, spec, policy))[-1]
    assert isinstance(done, Done)
    return done


@pytest.mark.parametrize("family", ["mamba", "qwen35"], ids=["recurrent", "hybrid"])
def test_a_window_on_recurrent_memory_keeps_the_replies_exact(
    families: dict[str, Path], family: str,
) -> None:
    """The draft's recurrent state is cut back by checkpoints, none of which may describe
    a view as the conversation: a windowed reply, then the conversation continued with the
    whole of it fed, each equal to plain decoding on an engine that never drafts."""
    eng = make_engine(families[family], families[f"{family}-draft"], n_ctx=1024)
    ref = make_engine(families[family], n_ctx=1024)
    try:
        prompt = _long_prompt(eng)[:300]
        first = _generate(eng, prompt, _Windowed(TokenOrigin.CHAIN, 24))
        assert first.token_ids == _generate(ref, prompt, ref.policy_for(SpecConfig(mode=Mode.PLAIN))).token_ids
        assert first.stats.accepted > 0 and first.stats.draft_catchup_tokens <= 24 + SINK
        more = [*prompt, *first.token_ids, *prompt[40:80]]
        chain = eng.policy_for(SpecConfig(mode=Mode.CHAIN, draft_max=3))
        second = _generate(eng, more, chain)
        assert second.token_ids == _generate(ref, more, ref.policy_for(SpecConfig(mode=Mode.PLAIN))).token_ids
        assert second.stats.accepted > 0
        # the whole conversation was compared again: the skipped stretch was fed now
        assert second.stats.draft_catchup_tokens >= len(more) - 1 - SINK
    finally:
        eng.close()
        ref.close()
