"""The n-gram cache in the engine: learned from replies, kept per target, exact."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters.ngram_store import cache_dir
from specula.core.engine.drafters.proposal import CACHE_MATCH
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, TokenEvent, TokenOrigin
from specula.core.engine.sampling.rules import Rule, SamplingParams
from tests.core.engine.conftest import PLAIN, make_engine, run
from tests.core.engine.sampling_runs import fake_clock

GREEDY = SamplingParams(max_tokens=48)
COUPLED = SamplingParams(max_tokens=48, temperature=0.8, top_k=40, top_p=0.95, seed=1234,
                         rule=Rule.COUPLED)
PROMPT = "def print self and the code"


def cache_codes(eng: Engine, mode: Mode) -> dict[int, float]:
    """The policy's judged lookup tokens per match code that came from the cache."""
    pol = eng._policies[mode.value]
    return {k: v for k, v in pol.acc.lookup_tot.items() if k > CACHE_MATCH}  # type: ignore[attr-defined]


def teach(eng: Engine, params: SamplingParams) -> Done:
    """A plain reply teaches the cache; an earlier chat taught it the same once more, so
    every n-gram of it clears its bar. A new chat on the same prompt then drafts from the
    cache at its first drafting step (the conversation has nothing to match yet), whatever
    the adaptive policy's timing-based choices do later."""
    done, _ = run(eng, PROMPT, params, PLAIN)
    assert eng.ngrams is not None and eng.ngrams.cache.learned > 0
    eng.ngrams.cache.learn([*done.prompt_token_ids, *done.token_ids])
    return done


@pytest.mark.parametrize(("params", "same"), [(GREEDY, "token_ids"), (COUPLED, "text")],
                         ids=["greedy-equals-plain", "seeded-coupled-same-text"])
def test_replies_with_the_cache_are_plains(tiny: dict[str, Path], params: SamplingParams,
                                           same: str) -> None:
    """Greedy: plain's tokens; a seeded coupled reply: plain's text; while the cache proposes.

    Under a fake clock: adaptive's first choices follow its measured costs, and on a busy
    machine real timings can make it try the draft model before the cache."""
    with fake_clock():
        eng = make_engine(tiny["target"], tiny["draft"])
        plain = teach(eng, params)
        for mode in (Mode.LOOKUP, Mode.ADAPTIVE):
            eng.generator.reset()  # type: ignore[union-attr]
            done, events = run(eng, PROMPT, params, SpecConfig(mode=mode, draft_max=4))
            assert getattr(done, same) == getattr(plain, same), mode
            assert cache_codes(eng, mode), f"{mode}: the cache never proposed"
            # the tokens the cache made say so (the policy counts what it accepted per code)
            pol = eng._policies[mode.value]
            accepted = sum(v for k, v in pol.acc.lookup_acc.items() if k > CACHE_MATCH)  # type: ignore[attr-defined]
            cached = sum(isinstance(e, TokenEvent) and e.source is TokenOrigin.NGRAM_CACHE
                         for e in events)
            assert (cached > 0) == (accepted > 0) and cached <= accepted, (mode, cached, accepted)
        eng.close()


def test_the_cache_outlives_the_engine_per_target(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"])
    run(eng, PROMPT, GREEDY, PLAIN)
    learned = eng.ngrams.cache.learned  # type: ignore[union-attr]
    eng.close()  # waits for the writer
    files = list(cache_dir().glob("*.npz"))
    assert len(files) == 1
    again = make_engine(tiny["target"])
    assert again.ngrams is not None and again.ngrams.notice == ""
    assert again.ngrams.cache.learned == learned
    # another target gets its own (empty) cache
    other = make_engine(tiny["draft"])
    assert other.ngrams is not None and other.ngrams.cache.learned == 0
    assert other.ngrams.path != again.ngrams.path
    other.close()
    again.close()


def test_a_damaged_cache_file_does_not_stop_the_load(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"])
    run(eng, PROMPT, GREEDY, PLAIN)
    path = eng.ngrams.path  # type: ignore[union-attr]
    eng.close()
    path.write_bytes(b"\x00" * 100)
    again = make_engine(tiny["target"])
    assert again.ngrams is not None and "could not be read" in again.ngrams.notice
    done, _ = run(again, PROMPT, replace(GREEDY, max_tokens=8), SpecConfig(mode=Mode.LOOKUP))
    assert done.stats.tokens == 8
    again.close()
    assert path.exists() and list(path.parent.glob("*.bad-*.npz"))
