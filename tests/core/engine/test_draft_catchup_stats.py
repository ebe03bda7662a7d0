"""The draft's catch-up on tokens it had not seen is reported wherever it runs.

Adaptive feeds the draft lazily: its first draft step catches the draft up on the
conversation, after prefill, so a figure measured only at the deferred catch-up
said 0 while the cost hid in that step's draft time. The expected figures here
come from a log of every draft ``llama_decode`` (its batch size and time),
independent of the statistics code: a catch-up is one batched feed of more than
the two tokens a chain step feeds before drafting (a drafted token is fed alone).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specula.core.bench.results import RunResult
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, StepEvent, TokenOrigin
from specula.core.engine.policy.adaptive import AdaptivePolicy
from specula.core.engine.policy.fixed import DraftPolicy, Plan, PlanInput, StaticPolicy
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import GenerationStats, StepRecord
from tests.core.engine.conftest import logged_decodes, make_engine
from tests.core.engine.test_modes import _train

GREEDY = SamplingParams(temperature=0.0, max_tokens=24)
PROMPT = "Write a long story about a small robot that learns to paint the sea at night."
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def pair(tiny: dict[str, Path]) -> Iterator[Engine]:
    eng = make_engine(tiny["target"], tiny["draft"])
    yield eng
    eng.close()


class _SitsOut(StaticPolicy):
    """Drafts a chain of 3 except in the steps listed in ``plain`` (the draft sits them out);
    not fed at prefill, as adaptive while drafting pays."""

    name = "sits-out"
    wants = frozenset({TokenOrigin.CHAIN})

    def __init__(self, plain: set[int]) -> None:
        super().__init__(SpecConfig(mode=Mode.CHAIN, draft_max=3))
        self.plain = plain
        self.step = 0

    def plan(self, inp: PlanInput) -> Plan:
        self.step += 1  # the first step (0) is the target's alone and never plans
        if self.step in self.plain or TokenOrigin.CHAIN not in inp.available:
            return Plan(TokenOrigin.TARGET, 0)
        return Plan(TokenOrigin.CHAIN, min(3, inp.room))


def _reply(eng: Engine, policy: DraftPolicy, spec: SpecConfig, monkeypatch: pytest.MonkeyPatch,
           ) -> tuple[Done, list[StepRecord], list[tuple[int, float]]]:
    """One reply from empty caches; (Done, its step records, (tokens, seconds) per draft decode)."""
    gen = eng.generator
    assert gen is not None
    gen.reset()
    prompt = eng.tokenize_chat([{"role": "user", "content": PROMPT}])
    with logged_decodes(eng, monkeypatch) as decodes:
        events = list(gen.generate(prompt, GREEDY, spec, policy))
    done = events[-1]
    assert isinstance(done, Done)
    log = [(n, s) for who, n, s in decodes if who == "draft"]
    return done, [e.record for e in events if isinstance(e, StepEvent)], log


def _catch_ups(log: list[tuple[int, float]]) -> tuple[int, float]:
    feeds = [(n, s) for n, s in log if n > 2]
    return sum(n for n, _ in feeds), sum(s for _, s in feeds)


def _check(stats: GenerationStats, log: list[tuple[int, float]], at_least: int, *,
           in_step: bool = True) -> None:
    tokens, seconds = _catch_ups(log)
    assert tokens >= at_least
    assert stats.draft_catchup_tokens == tokens
    if in_step:  # inside a step it is of the step's draft_s: its decodes and nothing else
        assert stats.draft_catchup_s == pytest.approx(seconds, rel=0, abs=1e-9)
    else:  # a sync before the steps is timed whole: its decodes and the work around them
        assert seconds - 1e-9 <= stats.draft_catchup_s <= stats.total_s


def test_an_adaptive_reply_reports_the_catch_up_its_first_draft_step_made(
    pair: Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pol = AdaptivePolicy(SpecConfig(mode=Mode.ADAPTIVE, draft_max=4, tree_budget=0))
    _train(pol, v1=0.170, per_token_verify=0.012, t_draft=0.004, accept=0.9)  # drafting pays
    done, recs, log = _reply(pair, pol, pol.cfg, monkeypatch)
    assert done.stats.drafted > 0
    first = next(r for r in recs if r.source == "draft")
    # lazily fed: no deferred catch-up; the first draft step fed the conversation
    assert first.catchup >= done.stats.prompt_tokens and first.catchup_s > 0
    assert first.catchup_s <= first.draft_s
    _check(done.stats, log, done.stats.prompt_tokens)


def test_a_catch_up_after_sitting_out_counts_and_a_step_s_own_feed_does_not(
    pair: Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pol = _SitsOut(plain={3, 4, 5, 6, 7})  # steps 1-2 draft, 3-7 plain, 8.. draft again
    done, recs, log = _reply(pair, pol, pol.cfg, monkeypatch)
    drafting = [r for r in recs if r.source == "draft"]
    assert [r.step for r in drafting][:3] == [1, 2, 8]
    assert [r.catchup_s > 0 for r in drafting[:3]] == [True, False, True]
    assert drafting[2].catchup >= 6  # the five plain steps' tokens and more
    _check(done.stats, log, done.stats.prompt_tokens + 6)


@pytest.mark.parametrize("spec", [SpecConfig(mode=Mode.CHAIN, draft_max=3),
                                  SpecConfig(mode=Mode.CHAIN, draft_max=3, draft_first_token=True)],
                         ids=["deferred", "in-prefill"])
def test_a_fixed_chain_reports_the_prompt_catch_up_before_its_first_draft_step(
    pair: Engine, spec: SpecConfig, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pol = pair.policy_for(spec)
    done, recs, log = _reply(pair, pol, spec, monkeypatch)
    assert done.stats.drafted > 0
    assert not any(r.catchup_s for r in recs)  # fed before any step drafted
    _check(done.stats, log, done.stats.prompt_tokens - 1, in_step=False)
    if spec.draft_first_token:  # fed in prefill, before the first token
        assert done.stats.draft_catchup_s <= done.stats.prefill_s
    else:
        assert done.stats.draft_catchup_s <= done.stats.total_s - done.stats.ttft_s


def test_a_tree_step_s_accepted_path_is_its_own_feed_not_a_catch_up(
    pair: Engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = SpecConfig(mode=Mode.TREE, draft_max=4, tree_budget=8)
    done, recs, log = _reply(pair, pair.policy_for(spec), spec, monkeypatch)
    trees = [r for r in recs if r.source == "tree"]
    # power: some tree steps fed more than two tokens (the path the target accepted)
    assert any(r.catchup > 2 for r in trees), [r.catchup for r in trees]
    assert not any(r.catchup_s for r in trees)
    prompt_feed = next(n for n, _ in log if n > 2)  # the deferred catch-up on the prompt
    assert done.stats.draft_catchup_tokens == prompt_feed


def test_bench_results_from_before_the_rename_still_read() -> None:
    """Old files call the catch-up draft_prefill_s (docs/lab/data/2026-12-01-structured/...)."""
    import json

    path = REPO / "docs" / "lab" / "data" / "2026-12-01-structured" / "f16-128-reuse.json"
    runs = json.loads(path.read_text("utf-8"))["runs"]
    old = next(r for r in runs if r["draft_prefill_s"] > 0)
    r = RunResult.from_json(old)
    assert r.draft_catchup_s == old["draft_prefill_s"] and r.tok_per_s == old["tok_per_s"]
    assert r.draft_catchup_tokens == 0  # not recorded then
    new = RunResult.from_json({**old, "draft_catchup_s": 1.5, "later_field": 3})
    assert new.draft_catchup_s == 1.5
