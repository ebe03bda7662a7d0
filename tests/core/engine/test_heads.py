"""Draft heads (EAGLE-3, DFlash, DSpark) as drafters, on every tiny target a head can
read (attention llama, MoE qwen3moe, hybrids qwen35 and lfm2): the reply is plain's
under greedy and under the coupled rule, over two replies in one engine and at the
context limit; and the head sees, at every step, what a head fed from scratch sees
(tests/core/engine/heads_support.py: the right layers' rows, none left stale after a
partial acceptance, its cache cut back), which the power tests break on purpose.

Random heads propose poorly under greedy; the coupled rule at a high temperature makes
the target and the head agree often (both follow the same noise when both distributions
are flat), so partial acceptances, and the cuts and replays after them, happen at many
steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from specula.core.engine.drafters.heads import DFlashHead, Eagle3Head
from specula.core.engine.engine import Engine
from specula.core.engine.events import Done, StopReason, TokenOrigin
from specula.core.engine.sampling.rules import Rule, SamplingParams
from tests.core.engine.conftest import PLAIN, run
from tests.core.engine.heads_support import (
    KINDS,
    TARGETS,
    head_engine,
    head_path,
    mismatches,
    recording,
    spec,
    target_path,
)
from tests.core.engine.reference import FreshTarget, Transform
from tests.core.engine.sampling_runs import ALPHA_PASS, check, prompt_of
from tests.core.engine.sampling_runs import spec as sr_spec

PROMPTS = ["hello world the model", "def print(self): return the code"]
GREEDY = SamplingParams(max_tokens=32)
# Flat distributions: the coupled choices of target and head agree often.
HOT = dict(temperature=20.0, top_k=0, top_p=1.0, min_p=0.0, rule=Rule.COUPLED)

CASES = [(t, k) for t in TARGETS for k in KINDS]


@pytest.fixture(scope="module")
def head_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-heads")


@pytest.fixture(scope="module", params=CASES, ids=[f"{t}-{k}" for t, k in CASES])
def case(request: pytest.FixtureRequest, tiny: dict[str, Path], families: dict[str, Path],
         head_dir: Path) -> Iterator[tuple[str, str, Engine]]:
    target, kind = request.param
    eng = head_engine(target_path(target, tiny, families), head_path(head_dir, target, kind))
    yield target, kind, eng
    eng.close()


def test_a_head_loads_and_says_what_it_is(case: tuple[str, str, Engine]) -> None:
    _target, kind, eng = case
    assert eng.head_info is not None and eng.head_info.kind == kind
    head = eng._head
    assert isinstance(head, Eagle3Head if kind == "eagle3" else DFlashHead)
    # the head's context was opened beside the target's (llama.cpp's ctx_other)
    from specula.core.engine.native import heads as native

    gen = eng.generator
    assert gen is not None
    assert native.ctx_other(head.hctx.ctx) == gen.ctx.ptr


def test_greedy_equals_plain(case: tuple[str, str, Engine]) -> None:
    target, kind, eng = case
    drafted = 0
    for prompt in PROMPTS:
        plain, _ = run(eng, prompt, GREEDY, PLAIN)
        done, events = run(eng, prompt, GREEDY, spec(kind))
        assert done.token_ids == plain.token_ids, (target, kind, prompt)
        assert done.stats.mode == kind
        assert done.stats.draft_stopped == ""
        drafted += done.stats.drafted
        assert sum(ev.source is TokenOrigin.MTP for ev in events) == done.stats.draft_tokens_emitted
    assert drafted > 0


@pytest.mark.parametrize("seed", [3, 11])
def test_coupled_text_equals_plains(case: tuple[str, str, Engine], seed: int) -> None:
    target, kind, eng = case
    sp = SamplingParams(max_tokens=32, seed=seed, **HOT)  # type: ignore[arg-type]
    plain, _ = run(eng, PROMPTS[0], sp, PLAIN)
    done, _ = run(eng, PROMPTS[0], sp, spec(kind, k=3))
    assert done.stats.acceptance_rule == "coupled"
    assert done.token_ids == plain.token_ids, (target, kind, seed)
    assert done.stats.drafted > 0 and done.stats.accepted > 0
    warm = SamplingParams(max_tokens=24, seed=seed, temperature=0.9, top_k=40)
    plain, _ = run(eng, PROMPTS[1], warm, PLAIN)
    done, _ = run(eng, PROMPTS[1], warm, spec(kind, k=3))
    assert done.token_ids == plain.token_ids


def test_two_replies_in_one_engine(case: tuple[str, str, Engine]) -> None:
    """The second reply reuses the conversation's prefix (the head keeps what it holds of it)."""
    _target, kind, eng = case
    sp = SamplingParams(max_tokens=20, seed=5, **HOT)  # type: ignore[arg-type]
    conv = [{"role": "user", "content": PROMPTS[1]}]
    a_plain = list(eng.chat(conv, sp, PLAIN))[-1]
    a = list(eng.chat(conv, sp, spec(kind)))[-1]
    assert a.token_ids == a_plain.token_ids
    conv += [{"role": "assistant", "content": a.text}, {"role": "user", "content": "more"}]
    b = list(eng.chat(conv, sp, spec(kind)))[-1]
    b_plain = list(eng.chat(conv, sp, PLAIN))[-1]
    assert b.token_ids == b_plain.token_ids
    assert b.stats.drafted > 0


def test_a_reply_at_the_context_limit(case: tuple[str, str, Engine], tiny: dict[str, Path],
                                      families: dict[str, Path], head_dir: Path) -> None:
    """A reply that runs into the window's end stops where plain's does, with the same text."""
    target, kind, _ = case
    small = head_engine(target_path(target, tiny, families), head_path(head_dir, target, kind), n_ctx=64)
    try:
        assert small.target_model is not None
        words = small.target_model.tokenize(" ".join(PROMPTS * 40))
        reasons = set()
        long = SamplingParams(max_tokens=400, seed=2, **HOT)  # type: ignore[arg-type]
        for room in (3, 5, 8, 12):
            n = small.n_ctx - room
            plain, _ = run(small, words[:n], long, PLAIN)
            done, _ = run(small, words[:n], long, spec(kind, k=4))
            assert done.stop_reason is plain.stop_reason
            assert done.token_ids == plain.token_ids
            reasons.add(done.stop_reason)
        assert StopReason.CONTEXT_FULL in reasons
    finally:
        small.close()


# -- what the head sees -----------------------------------------------------------------------


def _fidelity(eng: Engine, kind: str, seed: int = 9) -> tuple[list[str], int, Any]:
    """Run a hot coupled reply recording the head's steps; the mismatches against the
    reference, the steps compared and the reply's Done."""
    sp = SamplingParams(max_tokens=40, seed=seed, **HOT)  # type: ignore[arg-type]
    # from an empty cache: a prefix the target kept from an earlier reply it decoded while
    # the head was not following has no rows (zeros, counted: acceptance, not exactness)
    assert eng.generator is not None and eng._head is not None
    eng.generator.reset()
    eng._head.reset()  # (not in the generator's slot after a plain reply)
    with recording(eng) as steps:
        done, _ = run(eng, PROMPTS[0], sp, spec(kind, k=3, draft_first_token=True))
    return mismatches(eng, steps), sum(1 for s in steps if s.drafted), done


def test_the_head_sees_what_a_fresh_head_sees(case: tuple[str, str, Engine]) -> None:
    """At every drafting step (after partial acceptances, target replays on the hybrids
    included) the head's logits are those of a head fed from scratch with the target's
    layers for the committed prefix."""
    _target, kind, eng = case
    bad, compared, done = _fidelity(eng, kind)
    assert done.stats.draft_stopped == ""
    assert compared >= 5
    assert 0 < done.stats.accepted < done.stats.drafted  # partial acceptances happened
    assert not bad, bad


# -- power: each break below must be seen ----------------------------------------------------

POWER_CASES = [("llama", "eagle3"), ("qwen35", "eagle3"), ("llama", "dflash"), ("qwen35", "dspark")]


def _broken(eng: Engine, kind: str, breaks: str, monkeypatch: pytest.MonkeyPatch) -> None:
    head = eng._head
    assert head is not None
    if breaks == "wrong layer":
        # each slot read from another of the head's layers (only layers the target keeps
        # can be read: any other aborts the process inside llama.cpp)
        ids = head.layer_ids
        head.read_ids = ids[1:] + ids[:1]
        assert head.read_ids != ids
    elif breaks == "stale row":
        # after a step the last position is fed the verify batch's last row (llama.cpp's
        # carried row taken past the accepted ones)
        if isinstance(head, Eagle3Head):
            rows_for = head.rows_for

            def stale(start: int, end: int, window: Any, valid: int) -> Any:
                rows = rows_for(start, end, window, valid)
                if window is not None and len(window) and end - start > 0:
                    rows[-1] = window[-1]
                return rows

            head.rows_for = stale  # type: ignore[method-assign]
        else:
            feats_for = head.feats_for

            def stale_feats(start: int, end: int) -> Any:
                out = feats_for(start, end)
                if head._win_feats and end - start > 0:
                    out[-1] = np.concatenate(head._win_feats)[-1]
                return out

            head.feats_for = stale_feats  # type: ignore[method-assign]
    elif breaks == "not rolled back":
        # the head's cache keeps what it should have cut (a seq_rm that does nothing)
        ctx = head.hctx.ctx
        monkeypatch.setattr(ctx, "seq_rm", lambda *a, **kw: True)
    else:
        raise AssertionError(breaks)


@pytest.mark.parametrize("breaks", ["wrong layer", "stale row", "not rolled back"])
@pytest.mark.parametrize("target,kind", POWER_CASES)
def test_power_a_broken_head_is_seen(target: str, kind: str, breaks: str, tiny: dict[str, Path],
                                     families: dict[str, Path], head_dir: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The fidelity check fails when the head is fed the wrong layer's rows, a row left
    stale after a partial acceptance, or keeps cells it should have cut; the reply stays
    plain's all the same (verification does not trust the head)."""
    eng = head_engine(target_path(target, tiny, families), head_path(head_dir, target, kind))
    try:
        sp = SamplingParams(max_tokens=40, seed=9, **HOT)  # type: ignore[arg-type]
        plain, _ = run(eng, PROMPTS[0], sp, PLAIN)
        _broken(eng, kind, breaks, monkeypatch)
        bad, compared, done = _fidelity(eng, kind)
        assert done.token_ids == plain.token_ids
        seen = bool(bad) or done.stats.draft_stopped != ""
        assert seen, f"{breaks} on {target}/{kind} was not seen ({compared} steps compared)"
    finally:
        monkeypatch.undo()
        eng.close()


# -- rejection sampling: the law of the reply ------------------------------------------------

# (target, kind, top-k, tokens judged): where the random head's top tokens and the
# target's meet at this prompt (the EAGLE-3 head's top 12 miss the target's: top-k 40, one token).
CHI_CASES = [("llama", "eagle3", 40, 1), ("llama", "dflash", 12, 2), ("qwen35", "dspark", 12, 2)]


@pytest.mark.slow
@pytest.mark.parametrize("target,kind,top_k,n", CHI_CASES)
def test_rejection_sampling_draws_from_the_target(target: str, kind: str, top_k: int, n: int,
                                                  tiny: dict[str, Path],
                                                  families: dict[str, Path], head_dir: Path) -> None:
    """Chi-square of the first 3 tokens against the reference (a fresh target per prefix),
    with the head's q in the acceptance ratio."""
    path = target_path(target, tiny, families)
    eng = head_engine(path, head_path(head_dir, target, kind))
    ref = FreshTarget(path)
    stopped: set[str] = set()
    gen_events = eng.generate_tokens

    def watching(*a: Any, **kw: Any) -> Any:  # no reply may lose its head on the way
        for ev in gen_events(*a, **kw):
            if isinstance(ev, Done) and ev.stats.draft_stopped:
                stopped.add(ev.stats.draft_stopped)
            yield ev

    eng.generate_tokens = watching  # type: ignore[method-assign]
    try:
        res = check(f"{kind} on {target} k=2, rejection, top-k {top_k}", eng, ref, prompt_of(eng),
                    Transform(temperature=1.0, top_k=top_k), n, sr_spec(kind, draft_max=2), 1500,
                    max_tokens=n + 1)
    finally:
        ref.close()
        eng.close()
    assert res.p > ALPHA_PASS
    assert res.tally.drafted > 0 and res.tally.accepted > 0
    assert res.tally.rules == {"rejection-sampling"}
    assert not stopped, stopped


# -- the head's own limits ---------------------------------------------------------------------


def test_a_d2t_head_drafts_only_its_own_vocabulary(tiny: dict[str, Path], head_dir: Path) -> None:
    """An EAGLE-3 head with a d2t map: llama.cpp's graph puts its logits on the mapped target
    ids (-inf elsewhere), so every drafted token is one of them; the reply is plain's."""
    import gguf

    path = head_path(head_dir, "llama", "eagle3", draft_vocab=64)
    d2t = next(t for t in gguf.GGUFReader(str(path)).tensors if t.name == "d2t")
    mapped = {int(x) for x in d2t.data}
    assert len(mapped) == 64
    eng = head_engine(tiny["target"], path)
    try:
        drafted: list[int] = []
        with recording(eng) as steps:
            plain, _ = run(eng, PROMPTS[0], GREEDY, PLAIN)
            done, _ = run(eng, PROMPTS[0], GREEDY, spec("eagle3", k=3))
        for st in steps:
            drafted += st.drafted
        assert done.token_ids == plain.token_ids
        assert drafted and set(drafted) <= mapped
    finally:
        eng.close()


def test_a_dflash_block_caps_the_draft(tiny: dict[str, Path], head_dir: Path) -> None:
    """A DFlash head of block size 4 drafts at most 3 tokens a step (the block minus its
    anchor), a DSpark head 4 (it drafts from the anchor), whatever draft_max asks."""
    for kind, cap in (("dflash", 3), ("dspark", 4)):
        eng = head_engine(tiny["target"], head_path(head_dir, "llama", kind))
        try:
            with recording(eng) as steps:
                done, _ = run(eng, PROMPTS[1], GREEDY, spec(kind, k=8))
            lengths = {len(st.drafted) for st in steps}
            assert max(lengths) == cap, (kind, lengths)
            assert done.stats.drafted > 0
        finally:
            eng.close()
