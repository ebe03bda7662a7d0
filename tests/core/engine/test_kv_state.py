"""KV caches after rejections, cancellation and multi-turn reuse."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from specula.core.engine.events import Done, StopReason, TokenEvent
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import PLAIN, chain, decode_last, fresh_logits, make_engine, run

GREEDY = SamplingParams(max_tokens=40)


def test_logits_after_rejections_equal_fresh_evaluation(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"])
    done, _ = run(eng, "the model and the token", GREEDY, chain(5))
    assert done.stats.accepted < done.stats.drafted  # there were rejections
    committed = done.prompt_token_ids + done.token_ids
    gen = eng.generator
    assert gen is not None and gen.cache == committed[:-1]
    got = decode_last(gen, committed)
    want = fresh_logits(eng.target_model, committed)
    # Batch shape changes f32/f16 rounding a little (measured ~1e-2); a stale KV entry
    # (a rejected token left in the cache) changes logits by whole units, as the control shows.
    assert float(np.max(np.abs(got - want))) < 0.05
    assert int(np.argmax(got)) == int(np.argmax(want))
    stale = list(committed)
    stale[len(done.prompt_token_ids) + 3] = (stale[len(done.prompt_token_ids) + 3] + 1) % 300
    control = fresh_logits(eng.target_model, stale)
    assert float(np.max(np.abs(control - want))) > 0.5
    # the draft's cache holds only tokens of the committed sequence
    drafter = eng._draft_model
    assert drafter is not None
    assert committed[: len(drafter.cache)] == drafter.cache
    eng.close()


def test_cancel_keeps_partial_text_and_state(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"])
    msgs = [{"role": "user", "content": "hello world"}]
    full, _ = run(eng, "hello world", GREEDY, PLAIN)
    cancel = threading.Event()
    seen: list[TokenEvent] = []
    done = None
    for ev in eng.chat(msgs, GREEDY, chain(3), cancel=cancel):
        if isinstance(ev, TokenEvent):
            seen.append(ev)
            if len(seen) >= 5:
                cancel.set()
        elif isinstance(ev, Done):
            done = ev
    assert done is not None and done.stop_reason is StopReason.CANCELLED
    assert done.text == "".join(e.text for e in seen) and full.text.startswith(done.text)
    assert 5 <= len(done.token_ids) < 40
    again, _ = run(eng, "hello world", GREEDY, chain(3))
    assert again.token_ids == full.token_ids
    eng.close()


def test_multi_turn_reuses_prefix(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"])
    system = {"role": "system", "content": "You write the code and the model speed. " * 12}
    msgs = [system, {"role": "user", "content": "hello world"}]
    first = list(eng.chat(msgs, GREEDY, chain(4)))[-1]
    assert isinstance(first, Done)
    assert first.stats.prefill_tokens == len(first.prompt_token_ids) - 1
    # the reply of a random model is not valid UTF-8, so continue with a readable one
    msgs2 = [*msgs, {"role": "assistant", "content": "the token"}, {"role": "user", "content": "and the code"}]
    second = list(eng.chat(msgs2, GREEDY, chain(4)))[-1]
    assert isinstance(second, Done)
    reused = len(second.prompt_token_ids) - 1 - second.stats.prefill_tokens
    assert reused >= len(first.prompt_token_ids) - 4  # everything up to the assistant's turn
    fresh = make_engine(tiny["target"])
    ref = list(fresh.chat(msgs2, GREEDY, PLAIN))[-1]
    assert isinstance(ref, Done) and ref.token_ids == second.token_ids
    fresh.close()
    eng.close()


def test_draft_toggle_needs_no_reload(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"])
    a, _ = run(eng, "hello", GREEDY, chain(4))
    b, _ = run(eng, "hello", GREEDY, PLAIN)
    c, _ = run(eng, "hello", GREEDY, chain(4))
    assert a.stats.mode == "chain" and b.stats.mode == "plain" and c.stats.mode == "chain"
    assert a.token_ids == b.token_ids == c.token_ids
    assert b.stats.drafted == 0 and c.stats.drafted > 0
    eng.close()
