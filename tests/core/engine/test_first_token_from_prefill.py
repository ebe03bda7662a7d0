"""The first token comes from the target's prefill alone; the draft catches up after it.

A log of every ``llama_decode`` (which context, how many tokens) interleaved
with the token events shows the order: the target's prefill, the target's
first step, the first TokenEvent, and only then the draft's prompt feed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, Event, TokenEvent
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import PLAIN, chain, logged_decodes, make_engine, run

GREEDY = SamplingParams(temperature=0.0, max_tokens=24)
PROMPT = "Write a long story about a small robot that learns to paint the sea at night."


@pytest.fixture(scope="module")
def pair(tiny: dict[str, Path]) -> Iterator[Engine]:
    eng = make_engine(tiny["target"], tiny["draft"])
    yield eng
    eng.close()


def _logged_reply(eng: Engine, spec: SpecConfig, monkeypatch: pytest.MonkeyPatch
                  ) -> tuple[list[tuple[str, int]], Done]:
    """Run one reply; the log holds ("target"|"draft", n_tokens) per decode and ("token", id)."""
    gen = eng.generator
    assert gen is not None
    gen.reset()  # no prefix reuse: the whole prompt is new
    with logged_decodes(eng, monkeypatch) as log:
        events: Iterator[Event] = eng.chat([{"role": "user", "content": PROMPT}], GREEDY, spec)
        for ev in events:
            if isinstance(ev, TokenEvent):
                log.append(("token", ev.token_id, 0.0))
            elif isinstance(ev, Done):
                return [(kind, n) for kind, n, _ in log], ev
    raise AssertionError("no Done event")


@pytest.mark.parametrize("spec", [chain(3), SpecConfig(mode=Mode.TREE), SpecConfig(mode=Mode.ADAPTIVE)],
                         ids=["chain", "tree", "adaptive"])
def test_first_token_is_shown_before_the_draft_sees_the_prompt(
    pair: Engine, spec: SpecConfig, monkeypatch: pytest.MonkeyPatch,
) -> None:
    log, done = _logged_reply(pair, spec, monkeypatch)
    first = next(i for i, (kind, _) in enumerate(log) if kind == "token")
    before = log[:first]
    assert [k for k, _ in before] == ["target"] * len(before), before
    assert sum(n for _, n in before) == done.stats.prompt_tokens  # prefill + the pending token
    if spec.mode is not Mode.ADAPTIVE:  # adaptive may judge drafting not worth it
        assert any(k == "draft" for k, _ in log[first:]), "the draft never caught up"
        assert done.stats.drafted > 0
    assert done.stats.ttft_s <= done.stats.total_s


def test_the_old_order_fed_the_draft_first(pair: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Power: with draft_first_token the draft's prompt feed comes before the first token."""
    log, _ = _logged_reply(pair, chain(3, draft_first_token=True), monkeypatch)
    first = next(i for i, (kind, _) in enumerate(log) if kind == "token")
    assert any(k == "draft" and n > 1 for k, n in log[:first])


def test_deferred_catch_up_keeps_greedy_text_and_drafts_from_the_second_step(pair: Engine) -> None:
    plain, _ = run(pair, PROMPT, GREEDY, PLAIN)
    assert pair.generator is not None
    for spec in (chain(3), SpecConfig(mode=Mode.TREE)):
        pair.generator.reset()  # a draft cache that already holds the prompt may draft at once
        done, tokens = run(pair, PROMPT, GREEDY, spec)
        assert done.token_ids == plain.token_ids
        assert tokens[0].step == 0 and all(t.step > 0 for t in tokens[1:])  # step 0: one token
        assert done.stats.draft_catchup_s > 0.0  # the catch-up ran, after the first token
        assert done.stats.drafted > 0
