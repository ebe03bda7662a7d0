"""Greedy speculative output equals plain output, token for token."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from specula.core.engine.events import StopReason, TokenOrigin
from specula.core.engine.sampling.rules import SamplingParams
from specula_tools.tiny_models import DRAFT, TARGET, build_tiny_model
from tests.core.engine.conftest import PLAIN, chain, make_engine, run

PROMPTS = [
    "hello world",
    "def print(self): return the code",
    "the model and the token",
    "x",
    "speed of the draft is in the token and the model and the world " * 3,
    "ÿ unicode ‡ and ingredients",
]
GREEDY = SamplingParams(max_tokens=48)


@pytest.mark.parametrize("draft", ["draft", "exact_draft", "wrong_draft"])
def test_greedy_identity_every_draft_length(tiny: dict[str, Path], draft: str) -> None:
    eng = make_engine(tiny["target"], tiny[draft])
    for prompt in PROMPTS:
        plain, _ = run(eng, prompt, GREEDY, PLAIN)
        assert plain.stop_reason is StopReason.MAX_TOKENS
        for k in (1, 2, 3, 4, 6, 8):
            spec, events = run(eng, prompt, GREEDY, chain(k))
            assert spec.token_ids == plain.token_ids, (prompt, k)
            assert spec.text == plain.text
            assert "".join(e.text for e in events) == spec.text
    eng.close()


def test_acceptance_matches_the_draft_quality(tiny: dict[str, Path]) -> None:
    rates = {}
    for draft in ("exact_draft", "draft", "wrong_draft"):
        eng = make_engine(tiny["target"], tiny[draft])
        done, events = run(eng, PROMPTS[1], GREEDY, chain(4))
        rates[draft] = done.stats.acceptance_rate
        n_draft = sum(1 for e in events if e.source is TokenOrigin.CHAIN)
        assert n_draft == done.stats.accepted or done.stop_reason is StopReason.MAX_TOKENS
        eng.close()
    assert rates["exact_draft"] == 1.0  # always right
    assert 0.3 < rates["draft"] < 1.0  # partly right
    assert rates["wrong_draft"] < 0.2  # almost always wrong


def test_draft_min_and_cutoff(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"])
    plain, _ = run(eng, PROMPTS[0], GREEDY, PLAIN)
    # min larger than max: every draft is discarded, the run is plain steps
    done, _ = run(eng, PROMPTS[0], GREEDY, chain(2, draft_min=3))
    assert done.token_ids == plain.token_ids and done.stats.drafted == 0
    # a cut-off of 1.01 stops every draft before its first token
    done, _ = run(eng, PROMPTS[0], GREEDY, chain(4, p_min=1.01))
    assert done.token_ids == plain.token_ids and done.stats.drafted == 0
    # a moderate cut-off drafts less than the fixed length
    fixed, _ = run(eng, PROMPTS[0], GREEDY, chain(4))
    cut, _ = run(eng, PROMPTS[0], GREEDY, chain(4, p_min=0.5))
    assert cut.token_ids == plain.token_ids
    assert cut.stats.drafted < fixed.stats.drafted
    eng.close()


def test_stop_string_never_emitted(engine) -> None:  # type: ignore[no-untyped-def]
    plain, _ = run(engine, PROMPTS[0], GREEDY, PLAIN)
    stop = plain.text[12:15]
    assert len(stop) == 3
    params = replace(GREEDY, stop=[stop])
    p2, pe = run(engine, PROMPTS[0], params, PLAIN)
    s2, se = run(engine, PROMPTS[0], params, chain(4))
    assert p2.stop_reason is StopReason.STOP_STRING is s2.stop_reason
    cut = plain.text.index(stop)
    assert p2.text == s2.text == plain.text[:cut]
    assert "".join(e.text for e in pe) == "".join(e.text for e in se) == plain.text[:cut]


def test_max_tokens(engine) -> None:  # type: ignore[no-untyped-def]
    for n in (1, 2, 5, 7):
        d, ev = run(engine, PROMPTS[2], replace(GREEDY, max_tokens=n), chain(4))
        assert d.stop_reason is StopReason.MAX_TOKENS and len(d.token_ids) == n == len(ev)


def test_eos_stops_both_modes(tiny: dict[str, Path], tmp_path: Path) -> None:
    eng = make_engine(tiny["target"])
    plain, _ = run(eng, PROMPTS[0], GREEDY, PLAIN)
    eng.close()
    eos = plain.token_ids[9]
    first = plain.token_ids.index(eos)
    t = build_tiny_model(tmp_path / "t-eos.gguf", replace(TARGET, eos_id=eos))
    d = build_tiny_model(tmp_path / "d-eos.gguf", replace(DRAFT, eos_id=eos))
    eng = make_engine(t, d)
    p, _ = run(eng, PROMPTS[0], GREEDY, PLAIN)
    for k in (1, 3, 5):
        s, _ = run(eng, PROMPTS[0], GREEDY, chain(k))
        assert s.stop_reason is StopReason.EOS and s.token_ids == p.token_ids
    assert p.stop_reason is StopReason.EOS and p.token_ids == plain.token_ids[:first]
    eng.close()


def test_context_full_is_a_clear_stop(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"], n_ctx=256)
    params = replace(GREEDY, max_tokens=500)
    p, _ = run(eng, PROMPTS[0], params, PLAIN)
    s, _ = run(eng, PROMPTS[0], params, chain(4))
    assert p.stop_reason is StopReason.CONTEXT_FULL is s.stop_reason
    n_ctx = eng.generator.ctx.n_ctx  # type: ignore[union-attr]
    # every position is used; the last token came from the last position's logits
    assert s.token_ids == p.token_ids and len(p.prompt_token_ids) + len(p.token_ids) == n_ctx + 1
    assert "context window" in s.message
    long, _ = run(eng, "the model " * 200, params, chain(4))
    assert long.stop_reason is StopReason.CONTEXT_FULL and "does not fit" in long.message
    eng.close()
